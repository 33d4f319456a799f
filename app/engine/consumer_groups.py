"""Consumer groups: the pending entries list (PEL), consumers, and delivery (XREADGROUP).

The group PEL (``pel.Pel``) holds every pending entry with its owner's name; a consumer's
PEL is the set of its pending IDs, a view of the group PEL, as in Redis where both rax trees
point at one ``streamNACK``. Moving ownership moves an ID between consumer sets only.

An entry released with XNACK (Redis 8.8) stays in the group PEL with no owner (``None``, shown
as ``""``: a consumer may really be named ``""``) and delivery time 0, and joins ``released``,
the FIFO that claims serve first. Giving it an owner or dropping it takes it out again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from app.engine.delivery import DeliveryPolicy, Webhook
from app.engine.ids import MAX_ID, MIN_ID, StreamID
from app.engine.int64 import i64, u64
from app.engine.listpack import utf8
from app.engine.node_reads import Entry, Fields
from app.engine.pel import Pel, PendingEntry, key_of, sid_of

__all__ = ["Consumer", "ConsumerGroup", "GroupStream", "PendingEntry", "by_name"]


class GroupStream(Protocol):
    """What a group reads of its stream (``app.engine.stream.Stream``). The stream holds its
    groups, so a group names the stream by what it uses, not by its class."""

    entries_added: int

    def get(self, sid: StreamID) -> Fields | None: ...

    def range(
        self, start: StreamID = MIN_ID, end: StreamID = MAX_ID, count: int = 0, rev: bool = False
    ) -> list[Entry]: ...

    def range_has_tombstones(self, start: StreamID | None) -> bool: ...

    def estimate_entries_read(self, sid: StreamID) -> int | None: ...


def by_name(names: Iterable[str]) -> list[str]:
    """Group or consumer names in Redis's order: their bytes' (a rax), not ``str``'s, which
    puts a byte that is not UTF-8 (a lone surrogate) after every character below U+DC80."""
    return sorted(names, key=utf8)


@dataclass(slots=True)
class Consumer:
    name: str
    seen_time_ms: int
    pel: set[int] = field(default_factory=set)  # packed IDs (pel.key_of) of its pending entries


@dataclass(slots=True)
class ConsumerGroup:
    name: str
    last_id: StreamID
    # The logical read counter of last_id; None when Redis says it is unknown.
    entries_read: int | None
    pel: Pel = field(default_factory=Pel)
    consumers: dict[str, Consumer] = field(default_factory=dict)
    # Packed IDs released by XNACK and not claimed since, oldest release first, each with
    # the consumer that held it before (None: unknown), which a dead letter names.
    released: dict[int, str | None] = field(default_factory=dict)
    # The delivery policy (app/engine/delivery.py); None: the group is exactly Redis's.
    policy: DeliveryPolicy | None = None
    # What the policy did since it was set (not journaled: /metrics counters restart with
    # the process, as Prometheus counters do).
    redelivered: int = 0
    dead_lettered: int = 0
    # Its webhooks by name (app/engine/commands/webhook_ops.py): each also a consumer of the
    # group once it has read, run by app/delivery.
    webhooks: dict[str, Webhook] = field(default_factory=dict)

    def consumer(self, name: str, now_ms: int, *, refresh: bool = True) -> Consumer:
        """Look a consumer up, creating it if needed; a lookup refreshes its seen-time."""
        c = self.consumers.get(name)
        if c is None:
            c = self.consumers[name] = Consumer(name, now_ms)
        elif refresh:
            c.seen_time_ms = now_ms
        return c

    def lag(self, stream: GroupStream) -> int | None:
        """Entries not yet delivered to the group, or None when unknown (Redis 7 rules)."""
        if not stream.entries_added:
            return 0
        if self.entries_read is not None and not stream.range_has_tombstones(self.last_id):
            return i64(stream.entries_added - self.entries_read)
        read = stream.estimate_entries_read(self.last_id)
        if read is None:
            return None
        return i64(stream.entries_added - read)

    # -- the PEL ---------------------------------------------------------------------------

    def pending(self, sid: StreamID) -> PendingEntry | None:
        return self.pel.get(sid)

    def set_pending(
        self, sid: StreamID, consumer: Consumer | None, delivered_at_ms: int, delivery_count: int
    ) -> PendingEntry:
        """Create or update a pending entry, moving it to ``consumer``'s PEL (None: no owner
        yet, as XCLAIM FORCE creates one before it is assigned)."""
        key = key_of(sid)
        owner = consumer.name if consumer is not None else None
        pending = PendingEntry(owner, delivered_at_ms, delivery_count)
        old = self.pel.put(key, pending)
        if old is not None and old.consumer is not None and old.consumer != owner:
            previous = self.consumers.get(old.consumer)
            if previous is not None:
                previous.pel.discard(key)
        if consumer is not None:
            consumer.pel.add(key)
            if self.released:
                self.released.pop(key, None)
        return pending

    def release(self, sid: StreamID, delivery_count: int, at_ms: int = 0) -> None:
        """XNACK: the entry stays pending with no owner, delivery time ``at_ms`` (0, as
        Redis: claimable at any min-idle-time; a policy's release time, which its back-off
        counts from) and ``delivery_count``, at the end of the released FIFO; created when
        it was not pending (FORCE)."""
        key = key_of(sid)
        old = self.pel.put(key, PendingEntry(None, at_ms, delivery_count))
        holder = self.released.pop(key, None)
        if old is not None and old.consumer is not None:
            holder = old.consumer
            previous = self.consumers.get(old.consumer)
            if previous is not None:
                previous.pel.discard(key)
        self.released[key] = holder

    def released_ids(self) -> list[StreamID]:
        """The released entries in the order claims serve them (oldest release first)."""
        return [sid_of(k) for k in self.released]

    def _forget(self, key: int) -> bool:
        pending = self.pel.pop(key)
        if pending is None:
            return False
        if self.released:
            self.released.pop(key, None)
        if pending.consumer is not None:
            owner = self.consumers.get(pending.consumer)
            if owner is not None:
                owner.pel.discard(key)
        return True

    def ack(self, sid: StreamID) -> bool:
        return self._forget(key_of(sid))

    def ack_many(self, ids: Iterable[StreamID]) -> list[StreamID]:
        """XACK of a batch in one pass: the IDs that were pending (and no longer are)."""
        forget = self._forget
        return [sid for sid in ids if forget(sid.ms << 64 | sid.seq)]

    def drop_pending(self, sid: StreamID) -> None:
        """Forget a pending entry whose stream entry is gone (XCLAIM / XAUTOCLAIM cleanup)."""
        self._forget(key_of(sid))

    def remove_consumer(self, name: str) -> int | None:
        """Delete a consumer and its pending entries; how many it had (None: no consumer)."""
        gone = self.consumers.pop(name, None)
        if gone is None:
            return None
        for key in gone.pel:
            self.pel.pop(key)
        return len(gone.pel)

    def consumer_pending(
        self, consumer: Consumer, start: StreamID = MIN_ID, end: StreamID = MAX_ID
    ) -> Iterator[StreamID]:
        """A consumer's pending IDs from ``start`` to ``end`` in order: its own set sorted
        when it is the smaller part of the group PEL, else the group's ordered keys filtered
        by owner — so the walk costs about min(k log k, group PEL), never both."""
        mine = consumer.pel
        if not mine:
            return iter(())
        lo, hi = key_of(start), key_of(end)
        if len(mine) * 4 <= len(self.pel):
            return map(sid_of, sorted(k for k in mine if lo <= k <= hi))
        return map(sid_of, filter(mine.__contains__, self.pel.keys(start, end)))

    # -- delivery ----------------------------------------------------------------------------

    def claimable(
        self, min_idle_ms: int, now_ms: int, count: int, usable: Callable[[int], bool]
    ) -> list[int]:
        """What an XREADGROUP ... CLAIM read takes, in its order (Redis 8.4): released
        entries first, oldest release first, then entries idle at least ``min_idle_ms``,
        longest idle first, and among entries of one delivery time the one given it first
        (as redis-server 8.6 serves them, not by ID); only those ``usable`` says yes to (an
        entry gone from the stream is passed over), at most ``count`` (0: all). The walk
        follows the PEL's time index, so it costs the entries it returns, not the PEL's size."""
        out: list[int] = []
        for key in self.released:
            if count and len(out) >= count:
                return out
            if usable(key):
                out.append(key)
        cutoff = now_ms - min_idle_ms
        entries = self.pel
        for _, _, key in self.pel.by_time().irange(maximum=(cutoff, math.inf)):
            if count and len(out) >= count:
                break
            if entries.entry(key).consumer is not None and usable(key):
                out.append(key)
        return out

    def next_claimable_ms(self, min_idle_ms: int, usable: Callable[[int], bool]) -> int | None:
        """When the next owned entry ``usable`` says yes to turns idle enough to claim
        (None: there is none)."""
        for at, _, key in self.pel.by_time():
            if self.pel.entry(key).consumer is not None and usable(key):
                return int(at) + min_idle_ms
        return None

    def read_new(
        self, stream: GroupStream, consumer: Consumer, count: int, noack: bool, now_ms: int
    ) -> list[Entry]:
        """Deliver entries after ``last_id`` (XREADGROUP ``>``) and record them as pending."""
        start = self.last_id.incr()
        if start is None:
            return []
        entries = stream.range(start, MAX_ID, count)
        for entry in entries:
            sid = entry.id
            if sid > self.last_id:
                if self.entries_read is not None and not stream.range_has_tombstones(sid):
                    self.entries_read = i64(self.entries_read + 1)
                elif stream.entries_added:
                    self.entries_read = stream.estimate_entries_read(sid)
                self.last_id = sid
        if not noack:
            self.deliver([e.id for e in entries], consumer, now_ms)
        return entries

    def deliver(self, ids: list[StreamID], consumer: Consumer, now_ms: int) -> None:
        """Make ``ids`` pending for ``consumer`` since ``now_ms``, delivery count 1: what
        XREADGROUP ``>`` does to what it returns (and replay of its ``Delivered`` effect)."""
        fresh: list[int] = []
        for sid in ids:
            key = sid.ms << 64 | sid.seq
            if self.pel.lookup(key) is None:
                fresh.append(key)
            else:
                # Possible after XGROUP SETID moved last_id back: the entry changes owner.
                self.set_pending(sid, consumer, now_ms, 1)
        if fresh:
            # One value for the whole delivery: owner, time and count are the same.
            self.pel.put_new(fresh, PendingEntry(consumer.name, now_ms, 1))
            consumer.pel.update(fresh)

    def read_history(
        self, stream: GroupStream, consumer: Consumer, after: StreamID, count: int, now_ms: int
    ) -> list[tuple[StreamID, Fields | None]]:
        """The consumer's own pending entries after ``after``; deleted ones come back as None."""
        start = after.incr()
        out: list[tuple[StreamID, Fields | None]] = []
        if start is None:
            return out
        for sid in self.consumer_pending(consumer, start):
            if count and len(out) >= count:
                break
            fields = stream.get(sid)
            if fields is not None:
                key = key_of(sid)
                pending = self.pel.entry(key)
                count_now = u64(pending.delivery_count + 1)
                self.pel.put(key, PendingEntry(pending.consumer, now_ms, count_now))
            out.append((sid, fields))
        return out
