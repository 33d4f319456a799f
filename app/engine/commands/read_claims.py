"""Claim on read (Redis 8.x, XREADGROUP ... CLAIM min-idle-time): which streams of a read
claim, and taking a group's idle pending entries over as part of the read.

XREADGROUP serves these before new entries; XCLAIM and XAUTOCLAIM (``claims``) take entries
over by request instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from app.engine.consumer_groups import ConsumerGroup
from app.engine.effects import consumer_seen, pending_set
from app.engine.errors import WrongArgument
from app.engine.int64 import elapsed_ms, i64, u64
from app.engine.keyspace import Keyspace
from app.engine.pel import sid_of
from app.engine.replies import ClaimedEntry
from app.engine.stream import Entry, Stream

CLAIM_INVALID = "min-idle-time is not an integer or out of range"


def claim_arg(min_idle_ms: int) -> int:
    """CLAIM's min-idle-time: milliseconds, 0 or more (redis-server 8.6's texts)."""
    if min_idle_ms < 0:
        raise WrongArgument.err("min-idle-time must be a positive integer")
    return min_idle_ms


def claiming(new: Iterable[bool]) -> list[bool]:
    """Which streams of an XREADGROUP ... CLAIM claim, given which are read with ``>``: the
    ``>`` streams before the first history read. redis-server 8.6 serves the ``>`` streams
    after one as a read without CLAIM (2-item entries, nothing claimed)."""
    out: list[bool] = []
    for is_new in new:
        out.append(is_new and all(out))
    return out


def claim_idle(
    ks: Keyspace, key: str, group: ConsumerGroup, consumer_name: str, min_idle_ms: int, count: int
) -> list[ClaimedEntry]:
    """CLAIM's part of a read: take the group's claimable entries (``claimable``) for the
    consumer, each answered with its idle time and delivery count from before the claim
    (which counts one more delivery). An entry gone from the stream is passed over and
    stays pending, as redis-server 8.6 leaves it."""
    stream = ks.streams[key]
    now = ks.clock.now_ms()
    out: list[ClaimedEntry] = []
    consumer = None
    for pkey in group.claimable(min_idle_ms, now, count, entry_exists(stream)):
        sid = sid_of(pkey)
        pending = group.pel.entry(pkey)
        fields = stream.get(sid)
        assert fields is not None
        if consumer is None:
            ks.limits.check_new_consumer(group.name, group.consumers, consumer_name)
            consumer = group.consumer(consumer_name, now)
            ks.record(consumer_seen(key, group, consumer))
        idle = -1 if pending.consumer is None else max(elapsed_ms(now, pending.delivered_at_ms), 0)
        before = pending.delivery_count
        pending = group.set_pending(sid, consumer, now, u64(before + 1))
        ks.record(pending_set(key, group, sid, pending))
        out.append(ClaimedEntry(sid, fields, idle, i64(before)))
    return out


def as_claimed(entries: list[Entry]) -> list[ClaimedEntry]:
    """New entries in a CLAIM read's form: idle 0, never delivered before."""
    return [ClaimedEntry(e.id, e.fields, 0, 0) for e in entries]


def entry_exists(stream: Stream) -> Callable[[int], bool]:
    """Whether a packed pending ID is still in ``stream`` (a claim passes over the rest)."""

    def exists(pkey: int) -> bool:
        return stream.exists(sid_of(pkey))

    return exists
