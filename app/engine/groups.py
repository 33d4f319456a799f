"""Consumer groups: the pending entries list (PEL), consumers, and delivery (XREADGROUP).

A pending entry is shared by the group PEL and its owner's PEL, as in Redis where both rax
trees point at one ``streamNACK``; moving ownership moves it between consumer PELs only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sortedcontainers import SortedDict

from app.engine.ids import MAX_ID, StreamID
from app.engine.stream import Entry, Fields, Stream


@dataclass(slots=True)
class PendingEntry:
    """An entry delivered and not yet acknowledged (Redis's ``streamNACK``)."""

    consumer: Consumer | None
    delivered_at_ms: int
    delivery_count: int


@dataclass(slots=True)
class Consumer:
    name: str
    seen_time_ms: int
    pel: SortedDict = field(default_factory=SortedDict)  # StreamID -> PendingEntry


@dataclass(slots=True)
class ConsumerGroup:
    name: str
    last_id: StreamID
    # The logical read counter of last_id; None when Redis says it is unknown.
    entries_read: int | None
    pel: SortedDict = field(default_factory=SortedDict)  # StreamID -> PendingEntry
    consumers: dict[str, Consumer] = field(default_factory=dict)

    def consumer(self, name: str, now_ms: int, *, refresh: bool = True) -> Consumer:
        """Look a consumer up, creating it if needed; a lookup refreshes its seen-time."""
        c = self.consumers.get(name)
        if c is None:
            c = self.consumers[name] = Consumer(name, now_ms)
        elif refresh:
            c.seen_time_ms = now_ms
        return c

    def lag(self, stream: Stream) -> int | None:
        """Entries not yet delivered to the group, or None when unknown (Redis 7 rules)."""
        if not stream.entries_added:
            return 0
        if self.entries_read is not None and not stream.range_has_tombstones(self.last_id):
            return stream.entries_added - self.entries_read
        read = stream.estimate_entries_read(self.last_id)
        if read is None:
            return None
        return stream.entries_added - read

    def read_new(
        self, stream: Stream, consumer: Consumer, count: int, noack: bool, now_ms: int
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
                    self.entries_read += 1
                elif stream.entries_added:
                    self.entries_read = stream.estimate_entries_read(sid)
                self.last_id = sid
            if noack:
                continue
            pending = self.pel.get(sid)
            if pending is None:
                pending = PendingEntry(consumer, now_ms, 1)
                self.pel[sid] = pending
            else:
                # Possible after XGROUP SETID moved last_id back: the entry changes owner.
                if pending.consumer is not None:
                    pending.consumer.pel.pop(sid, None)
                pending.consumer = consumer
                pending.delivered_at_ms = now_ms
                pending.delivery_count = 1
            consumer.pel[sid] = pending
        return entries

    def read_history(
        self, stream: Stream, consumer: Consumer, after: StreamID, count: int, now_ms: int
    ) -> list[tuple[StreamID, Fields | None]]:
        """The consumer's own pending entries after ``after``; deleted ones come back as None."""
        start = after.incr()
        out: list[tuple[StreamID, Fields | None]] = []
        if start is None:
            return out
        for sid in consumer.pel.irange(minimum=start):
            if count and len(out) >= count:
                break
            fields = stream.get(sid)
            if fields is not None:
                pending: PendingEntry = consumer.pel[sid]
                pending.delivered_at_ms = now_ms
                pending.delivery_count += 1
            out.append((sid, fields))
        return out

    def ack(self, sid: StreamID) -> bool:
        pending = self.pel.pop(sid, None)
        if pending is None:
            return False
        if pending.consumer is not None:
            pending.consumer.pel.pop(sid, None)
        return True

    def drop_pending(self, sid: StreamID) -> None:
        """Forget a pending entry whose stream entry is gone (XCLAIM / XAUTOCLAIM cleanup)."""
        self.ack(sid)

    def assign(self, sid: StreamID, pending: PendingEntry, consumer: Consumer) -> None:
        """Give a pending entry to ``consumer``, moving it out of its old owner's PEL."""
        if pending.consumer is not consumer:
            if pending.consumer is not None:
                pending.consumer.pel.pop(sid, None)
            consumer.pel[sid] = pending
            pending.consumer = consumer
