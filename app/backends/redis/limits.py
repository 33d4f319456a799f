"""The engine's limits in front of Redis: the numbers and texts of app/engine/limits.py.

``max_read_keys`` and ``max_reply_entries`` are enforced here so that no reply past the limit
is ever built. XREAD naming too many streams is refused before it is sent. A range or read
that could pass the limit is sent with COUNT limit+1 and refused when limit+1 came back
(XRANGE, XREVRANGE, XREAD, XPENDING); XREADGROUP, XAUTOCLAIM and XINFO STREAM FULL, which
change state or have no COUNT that bounds them, run as a script that counts first (one past
the limit at most) and only then runs the command, so a refused one changed nothing. With
COUNT at most the limit (per stream) the command goes to Redis as given. Two edges: an
XREADGROUP ``>`` that blocks (nothing was there) waits with COUNT limit/streams, so a wake-up
is served within the limit, not refused; over several cluster slots the count and the reads
are one script per slot, so a write racing in between may leave a slot's part unread (never a
reply past the limit). XINFO GROUPS / CONSUMERS / STREAM FULL and the caps on groups and
consumers: by caps.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from app.backends.redis import caps
from app.backends.redis.blocking import (
    without_block,
)
from app.backends.redis.lua import Reply
from app.backends.redis.parse import (
    Arg,
    Raw,
    command_argv,
    encode,
)
from app.backends.redis.scripts import (
    AUTOCLAIM,
    GROUP_READ,
    eval_keys,
)
from app.engine.clock import ManualClock
from app.engine.commands.claims import parse_xautoclaim
from app.engine.commands.groups import parse_xpending
from app.engine.commands.info import full_count
from app.engine.commands.reads import ReadRequest, parse_read_request
from app.engine.commands.streams import parse_range
from app.engine.commands.table import Command, streams_keys
from app.engine.errors import CommandError
from app.engine.keyspace import Keyspace
from app.engine.limits import Limits


@dataclass(frozen=True, slots=True)
class Bounded:
    """A command sent in another form so that it stays within the limits: ``line`` goes to
    Redis (one command, on the command's key), ``finish`` turns its reply into the command's
    reply or raises the engine's ``too_large``."""

    line: list[Arg]
    finish: Callable[[Raw], Raw]
    writes: bool = False  # a script that may write (XREADGROUP, XAUTOCLAIM)


def within_limits(limits: Limits, cmd: Command, args: list[str]) -> Bounded | None:
    """How ``args`` must be sent to stay within ``limits``, or None: as given (within them
    already, no limit set, or malformed: Redis's own error then). XREAD / XREADGROUP here
    are the forms one connection can send (a pipeline's, a transaction's, not blocking)."""
    name = cmd.name
    try:
        capped = _capped(limits, name, args)
        if capped is not None:
            return capped
        if not (limits.read_keys or limits.reply_entries):
            return None
        if name in ("xread", "xreadgroup"):
            return _bounded_read(limits, args)
        if name in ("xrange", "xrevrange"):
            count = parse_range(args, name == "xrevrange").count
            cap = limits.reply_cap(count)
            if cap is None or count == 0:
                return None
            line = [*command_argv(args[:4]), "COUNT", cap]
            return Bounded(line, _capped_list(limits, args[0], cap))
        if name == "xpending":
            pending = parse_xpending(args)
            cap = None if pending is None else limits.reply_cap(pending.count)
            if pending is None or cap is None or pending.count == 0:
                return None
            at = 7 if args[3].lower() == "idle" else 5
            line = command_argv(args)
            line[at] = cap
            return Bounded(line, _capped_list(limits, args[0], cap))
        if name == "xautoclaim":
            if not limits.past(parse_xautoclaim(args).count):
                return None
            ccap = limits.group_consumers
            line = eval_keys(
                AUTOCLAIM, [args[1]], [limits.reply_entries, ccap, *command_argv(args)[2:]]
            )
            return Bounded(line, _script_reply(limits, args[0], args[2]), writes=True)
        if name == "xinfo|stream":
            count = full_count(args)
            if count is None or not limits.reply_entries:
                return None
            return Bounded(*caps.full_info(limits, encode(args[2]), count))
        if name in ("xinfo|groups", "xinfo|consumers") and limits.reply_entries:
            group = encode(args[3]) if name == "xinfo|consumers" else None
            return Bounded(*caps.listing(limits, encode(args[2]), group, b"", 0))
    except CommandError:
        return None
    return None


def _capped(limits: Limits, name: str, args: list[str]) -> Bounded | None:
    """How a command that may add a group or a consumer is sent to stay within the caps
    (caps.py), or None (no cap, or nothing to add). XAUTOCLAIM past the
    reply limit, and XREADGROUP, are capped by their limit scripts (``within_limits``)."""
    if name == "xgroup|create" and limits.stream_groups and len(args) >= 5:
        return Bounded(*caps.new_group(limits, args[2], command_argv(args)), writes=True)
    if not limits.group_consumers:
        if name == "restore" and limits.stream_groups:
            return Bounded(*caps.restore(limits, command_argv(args)), writes=True)
        return None
    if name == "restore":
        return Bounded(*caps.restore(limits, command_argv(args)), writes=True)
    if name == "xgroup|createconsumer" and len(args) == 5:
        return Bounded(*caps.new_consumer(limits, args[3], command_argv(args)), writes=True)
    claims = name == "xclaim" or (
        name == "xautoclaim" and not limits.past(parse_xautoclaim(args).count)
    )
    if claims and len(args) >= 6:
        room = caps.room_then(
            limits, [encode(args[1])], args[2], encode(args[3]), command_argv(args)
        )
        return Bounded(*room, writes=True)
    return None


def _bounded_read(limits: Limits, args: list[str]) -> Bounded | None:
    r = read_request(args)
    if r is None:
        return None
    try:
        limits.check_read_keys(r.command, len(r.keys))
    except CommandError as e:
        refused = e
        return Bounded(["PING"], lambda _: _raise(refused))  # sent all the same: in order
    cap = limits.reply_cap(r.count, len(r.keys))
    if cap is None:
        if r.group is not None and r.consumer is not None and limits.group_consumers:
            keys = [encode(k) for k in r.keys]
            room = caps.room_then(limits, keys, r.group, encode(r.consumer), command_argv(args))
            return Bounded(*room, writes=True)
        return None
    if r.group is not None:
        line = group_line(r, list(r.keys), list(r.ids), cap, "read", limits.group_consumers)
        return Bounded(line, group_reply(limits, r), writes=True)
    line = [*read_head(r, cap), "STREAMS", *map(encode, r.keys), *map(encode, r.ids)]
    return Bounded(line, capped_read(limits, r.command, cap))


def _raise(e: CommandError) -> Raw:
    raise e


def read_request(args: list[str]) -> ReadRequest | None:
    """XREAD / XREADGROUP parsed by the engine (None when it is malformed)."""
    if not streams_keys(args):
        return None
    try:
        return parse_read_request(Keyspace(ManualClock(int(time.time() * 1000))), args)
    except CommandError:
        return None


def read_head(r: ReadRequest, count: int) -> list[Arg]:
    """XREAD / XREADGROUP up to STREAMS, with ``count`` (0: none)."""
    head: list[Arg] = [r.command]
    if r.group is not None:
        assert r.consumer is not None
        head += ["GROUP", encode(r.group), encode(r.consumer)]
    if count:
        head += ["COUNT", count]
    if r.block_ms is not None:
        head += ["BLOCK", r.block_ms]
    if r.noack:
        head.append("NOACK")
    if r.claim_ms is not None:
        head += ["CLAIM", r.claim_ms]
    return head


def group_line(
    r: ReadRequest, keys: list[str], ids: list[str], cap: int, mode: str, consumers: int
) -> list[Arg]:
    """``GROUP_READ`` over ``keys`` (one slot) and their IDs; XREADGROUP without BLOCK;
    ``consumers``: max_group_consumers (0: none)."""
    assert r.group is not None and r.consumer is not None
    head = without_block(read_head(r, r.count))
    args: list[Arg] = [
        mode,
        cap,
        encode(r.group),
        encode(r.consumer),
        len(head),
        *head,
        *map(encode, ids),
    ]
    return eval_keys(GROUP_READ, keys, [*args, consumers])


def group_reply(limits: Limits, r: ReadRequest) -> Callable[[Raw], Raw]:
    return _script_reply(limits, r.command, r.group)


def _script_reply(limits: Limits, command: str, group: str | None = None) -> Callable[[Raw], Raw]:
    """A limit script's reply: ``{1, reply}`` is the command's, ``{0, ...}`` refused past
    the reply limit, ``{2}`` a consumer too many in ``group``."""

    def refusal(raw: Raw) -> CommandError:
        if raw[0] == Reply.TOO_MANY and group is not None:
            return limits.too_many_consumers(group)
        return limits.too_large(command)

    return caps.ran(refusal)


def _capped_list(limits: Limits, command: str, cap: int) -> Callable[[Raw], Raw]:
    """A range sent with COUNT ``cap`` (one past the limit): refused when it came full."""

    def finish(raw: Raw) -> Raw:
        if isinstance(raw, list) and len(raw) >= cap:
            raise limits.too_large(command)
        return raw

    return finish


def capped_read(limits: Limits, command: str, cap: int) -> Callable[[Raw], Raw]:
    """XREAD sent with COUNT ``cap`` per stream: refused when ``cap`` came in all."""

    def finish(raw: Raw) -> Raw:
        if sum(len(entries or []) for _, entries in raw or []) >= cap:
            raise limits.too_large(command)
        return raw

    return finish
