"""A stream's entries, kept in nodes the way Redis keeps them in listpack macro nodes.

Each node holds up to ``node_max_entries`` entries (live and deleted) and closes early when
its modelled listpack size reaches ``node_max_bytes``. Deleting an entry only flags it, and a
node goes away when its last live entry does — so ``~`` trimming, which drops whole nodes,
gives the same result as redis-server. The node is also the unit a future compact encoding
(and snapshots) works on.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from app.engine.ids import MAX_ID, MIN_ID, StreamID
from app.engine.listpack import LP_EMPTY_BYTES, byte_len, int_size, str_size

if TYPE_CHECKING:
    from app.engine.groups import ConsumerGroup

STREAM_LISTPACK_MAX_SIZE = 1 << 30
_SAMEFIELDS = 2  # STREAM_ITEM_FLAG_SAMEFIELDS; the flags element costs 2 bytes either way

Fields = tuple[str, ...]
"""Field/value pairs flattened in the order the client gave them: (f1, v1, f2, v2, ...)."""


@dataclass(frozen=True, slots=True)
class Entry:
    id: StreamID
    fields: Fields


class TrimStrategy(StrEnum):
    MAXLEN = "MAXLEN"  # keep at most `threshold` entries
    MINID = "MINID"  # drop entries with IDs below `minid`


@dataclass(frozen=True, slots=True)
class TrimSpec:
    """A parsed MAXLEN/MINID clause. ``limit`` 0 means unlimited (exact trimming)."""

    strategy: TrimStrategy
    maxlen: int = 0
    minid: StreamID = MIN_ID
    approx: bool = False
    limit: int = 0


class Node:
    """One macro node: entries in ID order, deletion flags, and the modelled listpack size."""

    __slots__ = (
        "deleted",
        "fields",
        "ids",
        "live",
        "lp_bytes",
        "master_fields",
        "ndeleted",
        "ordered",
    )

    def __init__(self, first: StreamID, fields: Fields) -> None:
        names = fields[0::2]
        self.master_fields: Fields = names
        self.ids: list[StreamID] = []
        self.fields: list[Fields] = []
        self.deleted = bytearray()
        self.live = 0
        self.ndeleted = 0
        # False once an entry lands after a deleted one with a greater ID (possible when
        # XSETID moved the last ID back below a tombstone): then the node is scanned, not
        # bisected, exactly as Redis scans a listpack.
        self.ordered = True
        self.lp_bytes = (
            LP_EMPTY_BYTES
            + int_size(1)
            + int_size(0)
            + int_size(len(names))
            + sum(str_size(f) for f in names)
            + int_size(0)
        )

    @property
    def master_id(self) -> StreamID:
        return self.ids[0]

    def append(self, sid: StreamID, fields: Fields) -> None:
        if self.ids:
            self.lp_bytes += int_size(self.live + 1) - int_size(self.live)
            master = self.ids[0]
        else:
            master = sid
        names = fields[0::2]
        nfields = len(names)
        same = names == self.master_fields
        size = int_size(_SAMEFIELDS) + int_size(sid.ms - master.ms) + int_size(sid.seq - master.seq)
        if same:
            size += sum(str_size(v) for v in fields[1::2]) + int_size(nfields + 3)
        else:
            size += int_size(nfields) + sum(str_size(x) for x in fields)
            size += int_size(2 * nfields + 4)
        self.lp_bytes += size
        if self.ids and sid < self.ids[-1]:
            self.ordered = False
        self.ids.append(sid)
        self.fields.append(fields)
        self.deleted.append(0)
        self.live += 1

    def mark_deleted(self, i: int) -> None:
        self.deleted[i] = 1
        self.lp_bytes += int_size(self.live - 1) - int_size(self.live)
        self.lp_bytes += int_size(self.ndeleted + 1) - int_size(self.ndeleted)
        self.live -= 1
        self.ndeleted += 1


def _first_at_or_after(node: Node, sid: StreamID) -> int:
    """Where a forward scan of ``node`` from ``sid`` starts."""
    if node.ordered:
        return bisect_left(node.ids, sid)
    return 0  # scan it all; the live entries are in order, tombstones are skipped


def _last_at_or_before(node: Node, sid: StreamID) -> int:
    """Where a backward scan of ``node`` down from ``sid`` starts."""
    if node.ordered:
        return bisect_right(node.ids, sid) - 1
    return len(node.ids) - 1


def id_follows(last: StreamID, sid: StreamID) -> bool:
    """XADD's ordering rule, the one copy that commands and replay both use: an entry's ID
    is greater than its stream's last ID, so IDs never go backwards (``streamAppendItem``)."""
    return sid > last


class Stream:
    """Entries plus the metadata Redis 7 keeps: last ID, entries added, max deleted ID, groups."""

    __slots__ = (
        "entries_added",
        "firsts",
        "groups",
        "last_id",
        "length",
        "max_deleted_id",
        "node_max_bytes",
        "node_max_entries",
        "nodes",
    )

    def __init__(self, node_max_entries: int = 100, node_max_bytes: int = 4096) -> None:
        self.nodes: list[Node] = []
        self.firsts: list[StreamID] = []  # master ID of each node, for bisection
        self.length = 0
        self.last_id = MIN_ID
        self.max_deleted_id = MIN_ID
        self.entries_added = 0
        self.groups: dict[str, ConsumerGroup] = {}
        self.set_node_limits(node_max_entries, node_max_bytes)

    def set_node_limits(self, node_max_entries: int, node_max_bytes: int) -> None:
        """Where the next node starts (``stream-node-max-entries`` / ``-bytes``; a bytes limit
        of 0 means the listpack's own maximum, as ``streamAppendItem`` reads it)."""
        self.node_max_entries = node_max_entries
        if node_max_bytes <= 0 or node_max_bytes > STREAM_LISTPACK_MAX_SIZE:
            node_max_bytes = STREAM_LISTPACK_MAX_SIZE
        self.node_max_bytes = node_max_bytes

    # -- writing -------------------------------------------------------------------------

    def append(self, sid: StreamID, fields: Fields) -> None:
        """Add an entry whose ID the caller has checked is greater than ``last_id``."""
        self.append_many((sid,), (fields,))

    def append_many(self, ids: Sequence[StreamID], rows: Sequence[Fields]) -> None:
        """Add entries whose IDs the caller has checked increase from above ``last_id`` (one
        XADD, or a batch of them in one call). A node closes when it holds
        ``node_max_entries`` entries or its listpack plus the new entry's bytes reach
        ``node_max_bytes``, checked before each entry as ``streamAppendItem`` does."""
        if not ids:
            return
        nodes = self.nodes
        node = nodes[-1] if nodes else None
        max_bytes, max_entries = self.node_max_bytes, self.node_max_entries
        for sid, fields in zip(ids, rows, strict=True):
            if node is not None:
                total = sum(map(len, fields))
                if not all(map(str.isascii, fields)):
                    total = sum(map(byte_len, fields))
                if node.lp_bytes + total >= max_bytes or (
                    max_entries and node.live + node.ndeleted >= max_entries
                ):
                    node = None
            if node is None:
                node = Node(sid, fields)
                nodes.append(node)
                self.firsts.append(sid)
            node.append(sid, fields)
        self.length += len(ids)
        self.entries_added += len(ids)
        self.last_id = ids[-1]

    def delete(self, sid: StreamID) -> bool:
        """Flag one entry deleted (XDEL); a node whose last live entry goes is dropped."""
        found = self._locate(sid)
        if found is None:
            return False
        k, i = found
        node = self.nodes[k]
        if node.live == 1:
            del self.nodes[k]
            del self.firsts[k]
        else:
            node.mark_deleted(i)
        self.length -= 1
        return True

    def trim(self, spec: TrimSpec) -> int:
        """Remove entries by MAXLEN or MINID exactly as ``streamTrim`` does; returns how many."""
        deleted = 0
        drop = 0
        maxlen = spec.maxlen
        for node in self.nodes:
            if spec.strategy is TrimStrategy.MAXLEN and self.length <= maxlen:
                break
            entries = node.live
            if spec.limit and deleted + entries > spec.limit:
                break
            if spec.strategy is TrimStrategy.MAXLEN:
                remove_node = self.length - entries >= maxlen
            else:
                remove_node = node.ids[-1] < spec.minid
            if remove_node:
                drop += 1
                self.length -= entries
                deleted += entries
                continue
            if spec.approx:
                break
            for i, sid in enumerate(node.ids):
                if spec.strategy is TrimStrategy.MAXLEN:
                    if self.length <= maxlen:
                        break
                elif sid >= spec.minid:
                    break
                if not node.deleted[i]:
                    node.mark_deleted(i)
                    self.length -= 1
                    deleted += 1
            break
        if drop:
            del self.nodes[:drop]
            del self.firsts[:drop]
        return deleted

    # -- reading -------------------------------------------------------------------------

    def _locate(self, sid: StreamID) -> tuple[int, int] | None:
        k = bisect_right(self.firsts, sid) - 1
        if k < 0:
            return None
        node = self.nodes[k]
        if not node.ordered:
            for i, other in enumerate(node.ids):
                if other == sid and not node.deleted[i]:
                    return k, i
            return None
        i = bisect_left(node.ids, sid)
        if i < len(node.ids) and node.ids[i] == sid and not node.deleted[i]:
            return k, i
        return None

    def get(self, sid: StreamID) -> Fields | None:
        found = self._locate(sid)
        if found is None:
            return None
        k, i = found
        return self.nodes[k].fields[i]

    def exists(self, sid: StreamID) -> bool:
        return self._locate(sid) is not None

    def range(
        self, start: StreamID = MIN_ID, end: StreamID = MAX_ID, count: int = 0, rev: bool = False
    ) -> list[Entry]:
        """Live entries with start <= ID <= end, at most ``count`` (0: all)."""
        out: list[Entry] = []
        if start > end:
            return out
        it = self._iter_rev(start, end) if rev else self._iter(start, end)
        for entry in it:
            out.append(entry)
            if count and len(out) >= count:
                break
        return out

    def _iter(self, start: StreamID, end: StreamID) -> Iterator[Entry]:
        nodes = self.nodes
        k = max(bisect_right(self.firsts, start) - 1, 0)
        i = _first_at_or_after(nodes[k], start) if k < len(nodes) else 0
        while k < len(nodes):
            node = nodes[k]
            ids, deleted, fields = node.ids, node.deleted, node.fields
            for j in range(i, len(ids)):
                sid = ids[j]
                if deleted[j] or sid < start:
                    continue  # Redis skips tombstones before comparing with the end
                if sid > end:
                    return
                yield Entry(sid, fields[j])
            k += 1
            i = 0

    def _iter_rev(self, start: StreamID, end: StreamID) -> Iterator[Entry]:
        nodes = self.nodes
        k = bisect_right(self.firsts, end) - 1
        if k < 0:
            return
        j = _last_at_or_before(nodes[k], end)
        while k >= 0:
            node = nodes[k]
            ids, deleted, fields = node.ids, node.deleted, node.fields
            while j >= 0:
                sid = ids[j]
                if not deleted[j]:
                    if sid < start:
                        return
                    if sid <= end:
                        yield Entry(sid, fields[j])
                j -= 1
            k -= 1
            if k >= 0:
                j = len(nodes[k].ids) - 1

    @property
    def first_id(self) -> StreamID:
        """The first live entry's ID, 0-0 when empty (Redis's ``first_id``)."""
        for entry in self._iter(MIN_ID, MAX_ID):
            return entry.id
        return MIN_ID

    def last_valid_id(self) -> StreamID:
        """The last live entry's ID (``streamLastValidID``), 0-0 when empty."""
        for entry in self._iter_rev(MIN_ID, MAX_ID):
            return entry.id
        return MIN_ID

    # -- Redis 7 read counters (lag) -----------------------------------------------------

    def range_has_tombstones(self, start: StreamID | None) -> bool:
        """Whether a deleted entry may lie at or after ``start`` (``streamRangeHasTombstones``)."""
        if not self.length or self.max_deleted_id == MIN_ID:
            return False
        if self.first_id > self.max_deleted_id:
            return False
        return (start or MIN_ID) <= self.max_deleted_id

    def estimate_entries_read(self, sid: StreamID) -> int | None:
        """The logical read counter of ``sid`` (``streamEstimateDistanceFromFirstEverEntry``)."""
        if not self.entries_added:
            return 0
        if not self.length and sid <= self.last_id:
            return self.entries_added
        if sid == self.last_id:
            return self.entries_added
        if sid > self.last_id:
            return None
        first = self.first_id
        if self.max_deleted_id == MIN_ID or self.max_deleted_id < first:
            if sid < first:
                return self.entries_added - self.length
            if sid == first:
                return self.entries_added - self.length + 1
        return None
