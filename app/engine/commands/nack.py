"""XNACK (Redis 8.8): release pending entries back to the group without acknowledging them.

A released entry keeps its place in the group PEL with no owner and delivery time 0, so any
claim takes it at once, and claims take released entries first, oldest release first
(``ConsumerGroup.release``). The mode says what happens to the delivery counter: SILENT takes
back the delivery (count - 1, never below 0), FAIL keeps it, FATAL sets it to LLONG_MAX;
RETRYCOUNT sets it outright. FORCE creates released entries for IDs the stream holds and the
group does not hold pending (count 0, or RETRYCOUNT, or LLONG_MAX under FATAL).

Parsing, error texts and the rules above follow the command page and Redis 8.8's own stream
tests (tests/unit/type/stream-cgroups.tcl): a missing key or group is NOGROUP; an ID not
pending is skipped and not counted; a released entry can be released again (it moves to the
end of the FIFO, and the mode applies again).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from app.engine.commands.args import int_arg
from app.engine.commands.groups import find_group
from app.engine.commands.table import Access, Flag, command, key_at
from app.engine.effects import Released
from app.engine.errors import CommandError, WrongArgument
from app.engine.ids import INT64_MAX, StreamID, parse_int, parse_strict_id
from app.engine.keyspace import Keyspace


class NackMode(StrEnum):
    SILENT = "SILENT"
    FAIL = "FAIL"
    FATAL = "FATAL"


@dataclass(frozen=True, slots=True)
class NackArgs:
    key: str
    group: str
    mode: NackMode
    ids: list[StreamID]
    retry_count: int | None = None
    force: bool = False


def retry_count_arg(count: int) -> int:
    if count < 0:
        raise WrongArgument.err("Invalid RETRYCOUNT value, must be >= 0")
    return count


def _unrecognized(option: str) -> CommandError:
    return WrongArgument.err(f"Unrecognized XNACK option '{option}'")


def parse_xnack(argv: list[str]) -> NackArgs:
    """XNACK's arguments with Redis 8.8's texts (its own stream-cgroups tests): the mode
    right after the group, then the IDS block, RETRYCOUNT and FORCE in any order."""
    mode_text = argv[3].upper()
    if mode_text not in NackMode.__members__:
        raise WrongArgument.err("mode must be SILENT, FAIL, or FATAL")
    texts: list[str] | None = None
    retry: int | None = None
    force = False
    i, n = 4, len(argv)
    while i < n:
        option = argv[i].lower()
        if option == "ids" and i + 1 < n:
            numids = parse_int(argv[i + 1])
            if numids is None or numids <= 0:
                raise WrongArgument.err("numids must be a positive integer")
            if numids > n - i - 2:
                raise WrongArgument.err("number of IDs doesn't match numids")
            texts = argv[i + 2 : i + 2 + numids]
            i += 2 + numids
        elif option == "retrycount" and i + 1 < n:
            retry = retry_count_arg(int_arg(argv[i + 1]))
            i += 2
        elif option == "force":
            force = True
            i += 1
        else:
            raise _unrecognized(argv[i])
    if texts is None:
        raise WrongArgument.err("syntax error, expected IDS keyword")
    ids = [parse_strict_id(t) for t in texts]
    return NackArgs(argv[1], argv[2], NackMode(mode_text), ids, retry, force)


def next_count(mode: NackMode, count: int | None, retry: int | None) -> int:
    """The delivery count a release leaves (``count`` None: FORCE creates the entry)."""
    if retry is not None:
        return retry
    if mode is NackMode.FATAL:
        return INT64_MAX
    if count is None:
        return 0
    if mode is NackMode.SILENT:
        return max(count - 1, 0)
    return count


def xnack(ks: Keyspace, a: NackArgs) -> int:
    """Release what the group holds pending among ``a.ids`` (and, with FORCE, what the
    stream holds); how many were released. Wakes readers blocked with CLAIM."""
    stream, group = find_group(ks, a.key, a.group)
    ids: list[StreamID] = []
    counts: list[int] = []
    # Under a delivery policy the release time is kept (the back-off counts from it).
    at = ks.clock.now_ms() if group.policy is not None else 0
    for sid in a.ids:
        pending = group.pending(sid)
        if pending is None and not (a.force and stream.exists(sid)):
            continue
        count = next_count(
            a.mode, None if pending is None else pending.delivery_count, a.retry_count
        )
        group.release(sid, count, at)
        ids.append(sid)
        counts.append(count)
    if ids:
        ks.record(
            Released(key=a.key, group=a.group, ids=tuple(ids), counts=tuple(counts), at_ms=at)
        )
        ks.blocked.signal(a.key)
    return len(ids)


@command("xnack", -7, Flag.WRITE, keys=key_at(1), access=Access.CONSUME)
def _xnack(ks: Keyspace, argv: list[str]) -> int:
    return xnack(ks, parse_xnack(argv))
