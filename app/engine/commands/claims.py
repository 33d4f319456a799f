"""XCLAIM and XAUTOCLAIM: taking pending entries over from another consumer.

They share the group lookup of ``app.engine.commands.groups`` (XGROUP, XACK, XPENDING) and
change the same pending entries list; claiming is a concern of its own because its rules
(idle times, FORCE, JUSTID, the scan's attempts) are the longest part of the group commands.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice

from app.engine.commands.args import int_arg
from app.engine.commands.groups import find_group
from app.engine.commands.table import (
    Access,
    Flag,
    command,
    key_at,
)
from app.engine.effects import (
    Acked,
    consumer_seen,
    group_updated,
    pending_set,
)
from app.engine.errors import (
    CommandError,
    SyntaxError_,
    WrongArgument,
)
from app.engine.ids import (
    MIN_ID,
    StreamID,
    parse_range_start,
    parse_strict_id,
)
from app.engine.int64 import elapsed_ms, u64
from app.engine.keyspace import Keyspace
from app.engine.pel import sid_of
from app.engine.replies import AutoClaim
from app.engine.stream import Entry

W, R = Flag.WRITE, Flag.READONLY


@dataclass(frozen=True, slots=True)
class ClaimArgs:
    key: str
    group: str
    consumer: str
    min_idle_ms: int
    ids: list[StreamID]
    idle_ms: int | None = None
    time_ms: int | None = None
    retry_count: int | None = None
    force: bool = False
    justid: bool = False
    last_id: StreamID | None = None


def parse_xclaim(argv: list[str]) -> ClaimArgs:
    min_idle = max(int_arg(argv[4], "Invalid min-idle-time argument for XCLAIM"), 0)
    j = 5
    ids: list[StreamID] = []
    while j < len(argv):
        try:
            ids.append(parse_strict_id(argv[j]))
        except CommandError:
            break
        j += 1
    idle = time = retry = None
    force = justid = False
    last_id = None
    n = len(argv)
    while j < n:
        moreargs = n - 1 - j
        opt = argv[j].lower()
        if opt == "force":
            force = True
        elif opt == "justid":
            justid = True
        elif opt == "idle" and moreargs:
            j += 1
            idle = int_arg(argv[j], "Invalid IDLE option argument for XCLAIM")
            time = None
        elif opt == "time" and moreargs:
            j += 1
            time = int_arg(argv[j], "Invalid TIME option argument for XCLAIM")
            idle = None
        elif opt == "retrycount" and moreargs:
            j += 1
            retry = int_arg(argv[j], "Invalid RETRYCOUNT option argument for XCLAIM")
        elif opt == "lastid" and moreargs:
            j += 1
            last_id = parse_strict_id(argv[j])
        else:
            raise WrongArgument.err(f"Unrecognized XCLAIM option '{argv[j]}'")
        j += 1
    return ClaimArgs(
        argv[1], argv[2], argv[3], min_idle, ids, idle, time, retry, force, justid, last_id
    )


def xclaim(ks: Keyspace, a: ClaimArgs) -> list[Entry | StreamID]:
    """Change the owner of pending entries (XCLAIM); entries gone from the stream leave the PEL."""
    stream, group = find_group(ks, a.key, a.group)
    ks.limits.check_new_consumer(a.group, group.consumers, a.consumer)
    now = ks.clock.now_ms()
    if a.last_id is not None and a.last_id > group.last_id:
        group.last_id = a.last_id
        ks.record(group_updated(a.key, group))
    if a.idle_ms is not None:
        delivered_at = now - a.idle_ms
    elif a.time_ms is not None:
        delivered_at = a.time_ms
    else:
        delivered_at = now
    if delivered_at < 0 or delivered_at > now:
        delivered_at = now
    out: list[Entry | StreamID] = []
    consumer = None
    for sid in a.ids:
        pending = group.pending(sid)
        fields = stream.get(sid)
        if fields is None:
            if pending is not None:
                group.drop_pending(sid)
                ks.record(Acked(key=a.key, group=a.group, ids=(sid,)))
            continue
        if a.force and pending is None:
            pending = group.set_pending(sid, None, now, 1)  # streamCreateNACK starts at 1
        if pending is None:
            continue
        idle = elapsed_ms(now, pending.delivered_at_ms)
        if pending.consumer is not None and a.min_idle_ms and idle < a.min_idle_ms:
            continue
        if consumer is None:
            consumer = group.consumer(a.consumer, now)
            ks.record(consumer_seen(a.key, group, consumer))
        delivery_count = pending.delivery_count
        if a.retry_count is not None and a.retry_count >= 0:
            delivery_count = a.retry_count
        elif not a.justid:
            delivery_count = u64(delivery_count + 1)  # a uint64_t in Redis: it wraps to 0
        pending = group.set_pending(sid, consumer, delivered_at, delivery_count)
        ks.record(pending_set(a.key, group, sid, pending))
        out.append(sid if a.justid else Entry(sid, fields))
    return out


@command("xclaim", -6, W, keys=key_at(1), access=Access.CONSUME)
def _xclaim(ks: Keyspace, argv: list[str]) -> list[Entry | StreamID]:
    find_group(ks, argv[1], argv[2])
    return xclaim(ks, parse_xclaim(argv))


ATTEMPTS_FACTOR = 10
LONG_MAX = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class AutoClaimArgs:
    key: str
    group: str
    consumer: str
    min_idle_ms: int
    start: StreamID
    count: int = 100
    justid: bool = False


def parse_xautoclaim(argv: list[str]) -> AutoClaimArgs:
    min_idle = max(int_arg(argv[4], "Invalid min-idle-time argument for XAUTOCLAIM"), 0)
    start = parse_range_start(argv[5])
    count = 100
    justid = False
    j = 6
    n = len(argv)
    while j < n:
        moreargs = n - 1 - j
        opt = argv[j].lower()
        if opt == "count" and moreargs:
            count = int_arg(argv[j + 1], "COUNT must be > 0")
            if count < 1 or count > LONG_MAX // max(16, ATTEMPTS_FACTOR):
                raise WrongArgument.err("COUNT must be > 0")
            j += 1
        elif opt == "justid":
            justid = True
        else:
            raise SyntaxError_()
        j += 1
    return AutoClaimArgs(argv[1], argv[2], argv[3], min_idle, start, count, justid)


def xautoclaim(ks: Keyspace, a: AutoClaimArgs) -> AutoClaim:
    """Claim idle pending entries from a cursor (XAUTOCLAIM), at most ``count * 10`` looked at."""
    stream, group = find_group(ks, a.key, a.group)
    ks.limits.check_new_consumer(a.group, group.consumers, a.consumer)
    now = ks.clock.now_ms()
    attempts = a.count * ATTEMPTS_FACTOR
    count = a.count
    # Entries released by XNACK come first, oldest release first, then the scan from the
    # cursor; neither takes an entry twice.
    released = list(islice(group.released, count))
    # The keys this call can visit: at most `attempts`, plus one to report the cursor.
    keys = list(islice(group.pel.keys(a.start), min(attempts, len(group.pel)) + 1))
    pos = 0
    claimed: list[Entry | StreamID] = []
    deleted: list[StreamID] = []
    consumer = None
    taken: set[int] = set()
    while attempts > 0 and count > 0 and (released or pos < len(keys)):
        if released:
            pkey = released.pop(0)
            taken.add(pkey)
        else:
            attempts -= 1
            pkey = keys[pos]
            pos += 1
            if pkey in taken:
                continue
        sid = sid_of(pkey)
        fields = stream.get(sid)
        if fields is None:
            group.drop_pending(sid)
            ks.record(Acked(key=a.key, group=a.group, ids=(sid,)))
            deleted.append(sid)
            count -= 1
            continue
        pending = group.pel.entry(pkey)
        if (
            pending.consumer is not None
            and a.min_idle_ms
            and elapsed_ms(now, pending.delivered_at_ms) < a.min_idle_ms
        ):
            continue
        if consumer is None:
            consumer = group.consumer(a.consumer, now)
            ks.record(consumer_seen(a.key, group, consumer))
        delivery_count = u64(pending.delivery_count + (0 if a.justid else 1))
        pending = group.set_pending(sid, consumer, now, delivery_count)
        ks.record(pending_set(a.key, group, sid, pending))
        claimed.append(sid if a.justid else Entry(sid, fields))
        count -= 1
    next_id = sid_of(keys[pos]) if pos < len(keys) else MIN_ID
    return AutoClaim(next_id, claimed, deleted)


@command("xautoclaim", -6, W, keys=key_at(1), access=Access.CONSUME)
def _xautoclaim(ks: Keyspace, argv: list[str]) -> AutoClaim:
    a = parse_xautoclaim(argv)
    if ks.limits.past(a.count):
        # Refused before claiming anything when the reply could pass the limit: a COUNT
        # above it with more entries than that pending from the cursor on.
        _, group = find_group(ks, a.key, a.group)
        if group.pel.count_from(a.start) > ks.limits.reply_entries:
            raise ks.limits.too_large(argv[0])
    return xautoclaim(ks, a)
