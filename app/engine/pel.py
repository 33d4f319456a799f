"""A consumer group's pending entries list (PEL), kept compact.

Redis keeps two rax trees per group (the group PEL and each consumer's PEL) pointing at one
``streamNACK``. Here a pending entry is one slot in a dict and one in a sorted list, keyed by
the ID packed into a single int (``ms << 64 | seq``, which sorts as IDs do), and its value is
an immutable ``PendingEntry`` tuple holding the owner's *name*: no per-entry object the cyclic
GC has to visit, and one tuple shared by every entry a read delivered at once. A consumer's
own pending set is a plain set of the same ints; ordered walks of it go through the group's
sorted keys or sort the set, whichever is smaller (``ConsumerGroup.consumer_pending``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

from sortedcontainers import SortedList

from app.engine.ids import StreamID

MASK64 = (1 << 64) - 1


class PendingEntry(NamedTuple):
    """An entry delivered and not yet acknowledged (Redis's ``streamNACK``)."""

    consumer: str | None  # the owner's name; None only while XCLAIM FORCE creates it
    delivered_at_ms: int
    delivery_count: int


def key_of(sid: StreamID) -> int:
    """An ID as one int that orders as IDs do."""
    return sid.ms << 64 | sid.seq


def sid_of(key: int) -> StreamID:
    return StreamID(key >> 64, key & MASK64)


class Pel:
    """Pending entries by packed ID: a dict for lookups, a sorted list for ranges, and, once
    a group is read with CLAIM, a sorted list by delivery time (``by_time``)."""

    __slots__ = ("_by_time", "_entries", "_keys", "_next", "_order")

    def __init__(self) -> None:
        self._entries: dict[int, PendingEntry] = {}
        self._keys: SortedList = SortedList()
        # (delivery time, order, packed ID) of every entry, the order being when its value
        # was set (``items_by_key``'s); built by the first claim on read and kept from then
        # on, so a group never read with CLAIM pays nothing per delivery.
        self._by_time: SortedList | None = None
        self._order: dict[int, int] = {}
        self._next = 0

    def by_time(self) -> SortedList:
        """Entries by delivery time, ties in the order the times were set: the order
        XREADGROUP CLAIM takes idle entries in (longest idle first), without walking the
        whole PEL on every read."""
        if self._by_time is None:
            self._order = {k: i for i, k in enumerate(self._entries)}
            self._next = len(self._order)
            self._by_time = SortedList(
                (p.delivered_at_ms, self._order[k], k) for k, p in self._entries.items()
            )
        return self._by_time

    def _index(self, key: int, old: PendingEntry | None, new: PendingEntry | None) -> None:
        """Keep ``by_time`` in step with one entry's change (it exists)."""
        by_time = self._by_time
        assert by_time is not None
        if old is not None:
            by_time.remove((old.delivered_at_ms, self._order.pop(key), key))
        if new is not None:
            order = self._order[key] = self._next
            self._next += 1
            by_time.add((new.delivered_at_ms, order, key))

    def __len__(self) -> int:
        return len(self._entries)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def __contains__(self, sid: StreamID) -> bool:
        return key_of(sid) in self._entries

    def get(self, sid: StreamID) -> PendingEntry | None:
        return self._entries.get(key_of(sid))

    def items_by_key(self) -> Iterable[tuple[int, PendingEntry]]:
        """Every (packed ID, entry), in the order their values were last set: among entries
        of one delivery time, the one given it first comes first (CLAIM's order for ties)."""
        return self._entries.items()

    def entry(self, key: int) -> PendingEntry:
        return self._entries[key]

    def lookup(self, key: int) -> PendingEntry | None:
        return self._entries.get(key)

    def put(self, key: int, pending: PendingEntry) -> PendingEntry | None:
        """Set the entry at ``key``; returns what was there. An entry set again moves to
        the end of ``items_by_key``: redis-server 8.6 serves CLAIM's ties of delivery time
        in the order the times were given, not by ID."""
        entries = self._entries
        old = entries.pop(key, None)
        entries[key] = pending
        if old is None:
            self._keys.add(key)
        if self._by_time is not None:
            self._index(key, old, pending)
        return old

    def put_new(self, keys: Iterable[int], pending: PendingEntry) -> None:
        """Add entries known to be absent, all with one shared ``pending`` value."""
        entries, add = self._entries, self._keys.add
        keys = list(keys)
        for key in keys:
            entries[key] = pending
            add(key)
        if self._by_time is not None:
            for key in keys:
                self._index(key, None, pending)

    def load(self, entries: dict[int, PendingEntry]) -> None:
        """Take a whole PEL at once (loading a snapshot): one sort, not one insert each.
        ``entries``' order becomes ``items_by_key``'s."""
        self._entries = entries
        self._keys = SortedList(entries)
        self._by_time = None
        self._order = {}

    def pop(self, key: int) -> PendingEntry | None:
        pending = self._entries.pop(key, None)
        if pending is not None:
            self._keys.remove(key)
            if self._by_time is not None:
                self._index(key, pending, None)
        return pending

    def first(self) -> StreamID:
        return sid_of(self._keys[0])

    def last(self) -> StreamID:
        return sid_of(self._keys[-1])

    def keys(self, start: StreamID | None = None, end: StreamID | None = None) -> Iterator[int]:
        """Packed IDs in order, from ``start`` to ``end`` (inclusive; None: unbounded)."""
        lo = None if start is None else key_of(start)
        hi = None if end is None else key_of(end)
        it: Iterator[int] = self._keys.irange(lo, hi)
        return it

    def count_from(self, start: StreamID) -> int:
        """How many pending entries have an ID >= ``start``."""
        before: int = self._keys.bisect_left(key_of(start))
        return len(self._keys) - before

    def items(self, count: int = 0) -> list[tuple[StreamID, PendingEntry]]:
        """The first ``count`` entries in ID order (0: all)."""
        keys = self._keys[:count] if count else self._keys
        entries = self._entries
        return [(sid_of(k), entries[k]) for k in keys]
