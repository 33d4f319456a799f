"""A stream's entries, kept in nodes the way Redis keeps them in listpack macro nodes.

Each node (``node.Node``, packed as a listpack is) holds up to ``node_max_entries`` entries
(live and deleted) and closes early when its modelled listpack size reaches
``node_max_bytes``. Deleting an entry only flags it, and a node goes away when its last live
entry does — so ``~`` trimming, which drops whole nodes, gives the same result as
redis-server. The node is also the unit snapshots store.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from operator import gt
from typing import TYPE_CHECKING

from app.engine.ids import MAX_ID, MIN_ID, StreamID
from app.engine.int64 import i64, u64
from app.engine.listpack import fields_bytes
from app.engine.node import Node
from app.engine.node_reads import Entry, Fields
from app.engine.refpolicy import RefPolicy

if TYPE_CHECKING:
    from app.engine.consumer_groups import ConsumerGroup
    from app.engine.idmp import Idmp

__all__ = [
    "Entry",
    "Fields",
    "Node",
    "RefPolicy",
    "Stream",
    "TrimOutcome",
    "TrimSpec",
    "TrimStrategy",
    "id_follows",
]

STREAM_LISTPACK_MAX_SIZE = 1 << 30


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
    policy: RefPolicy = RefPolicy.KEEPREF  # what trimming does to group references (8.2)


@dataclass(frozen=True, slots=True)
class TrimOutcome:
    """What a trim did: ``deleted`` entries (the reply), ``dropped`` nodes. A trim may drop
    a node that held only deleted entries and delete nothing: the reply is 0, yet the
    stream changed (so the journal must hear of it)."""

    deleted: int
    dropped: int

    @property
    def changed(self) -> bool:
        return bool(self.deleted or self.dropped)


def id_follows(last: StreamID, sid: StreamID) -> bool:
    """XADD's ordering rule, the one copy that commands and replay both use: an entry's ID
    is greater than its stream's last ID, so IDs never go backwards (``streamAppendItem``)."""
    return sid > last


def ids_follow(last: StreamID, ids: Sequence[StreamID]) -> bool:
    """``id_follows`` for a run: each of ``ids`` above the one before, the first above
    ``last``, compared in one C pass (replay checks a journal row's entries so)."""
    before = [last]
    before += ids
    return all(map(gt, ids, before))


class Stream:
    """Entries plus the metadata Redis 7 keeps: last ID, entries added, max deleted ID, groups."""

    __slots__ = (
        "entries_added",
        "firsts",
        "groups",
        "idmp",
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
        self.idmp: Idmp | None = None  # IDMP state (Redis 8.6), once a command gave it some
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
        if len(ids) != len(rows):
            raise ValueError("one row of fields per ID")
        i, end = 0, len(ids)
        while i < end:
            sid, fields = ids[i], rows[i]
            if node is None:
                node = Node(sid, fields)
                nodes.append(node)
                self.firsts.append(sid)
            elif node.lp_bytes + fields_bytes(fields) >= max_bytes or (
                max_entries and node.live + node.ndeleted >= max_entries
            ):
                node = Node(sid, fields, node.master_fields)
                nodes.append(node)
                self.firsts.append(sid)
            i = node.append_run(ids, rows, i, max_bytes, max_entries)
        self.length += len(ids)
        self.entries_added = u64(self.entries_added + len(ids))
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

    def trim(
        self,
        spec: TrimSpec,
        *,
        keep: Callable[[StreamID], bool] | None = None,
        removed: list[StreamID] | None = None,
    ) -> TrimOutcome:
        """Remove entries by MAXLEN or MINID exactly as ``streamTrim`` does.

        Whole nodes go first; in the first node that cannot go, exact trimming flags entries
        deleted. That node stays even when none of its entries is left live, as in Redis:
        later appends land in it, and a later trim drops it whole.

        ``keep`` (the ACKED policy) names entries that must stay: a node holding one is not
        dropped whole, and its other entries are flagged one by one, on to the next nodes
        until the threshold is met. Under DELREF and ACKED, ``~`` does not stop trimming
        inside a node (redis-server 8.6 trims them exactly; LIMIT still counts nodes).
        ``removed`` collects the IDs of the live entries removed (DELREF drops their
        references after)."""
        deleted = 0
        gone: list[int] = []  # indexes of the nodes dropped whole
        maxlen = spec.maxlen
        nodes = self.nodes
        for k, node in enumerate(nodes):
            if spec.strategy is TrimStrategy.MAXLEN and self.length <= maxlen:
                break
            entries = node.live
            if spec.limit and deleted + entries > spec.limit:
                break
            if spec.strategy is TrimStrategy.MAXLEN:
                remove_node = self.length - entries >= maxlen
            else:
                remove_node = node.id_at(len(node) - 1) < spec.minid
            live = None
            if remove_node and (keep is not None or removed is not None):
                live = [sid for i, sid in enumerate(node.ids()) if not node.is_deleted(i)]
                if keep is not None and any(map(keep, live)):
                    remove_node = False
            if remove_node:
                if removed is not None and live is not None:
                    removed.extend(live)
                gone.append(k)
                self.length -= entries
                deleted += entries
                continue
            if spec.approx and spec.policy is RefPolicy.KEEPREF:
                break  # DELREF and ACKED trim inside a node even with ~ (redis-server 8.6)
            reached = False
            for i, sid in enumerate(node.ids()):
                if spec.strategy is TrimStrategy.MAXLEN:
                    reached = self.length <= maxlen
                else:
                    reached = sid >= spec.minid
                if reached:
                    break
                if node.is_deleted(i) or (keep is not None and keep(sid)):
                    continue
                node.mark_deleted(i)
                self.length -= 1
                deleted += 1
                if removed is not None:
                    removed.append(sid)
            if keep is None or reached:
                break
        if gone:
            if len(gone) == gone[-1] + 1:  # a prefix, as always without ``keep``
                del nodes[: len(gone)]
                del self.firsts[: len(gone)]
            else:
                dropped = set(gone)
                nodes[:] = [n for k, n in enumerate(nodes) if k not in dropped]
                self.firsts[:] = [f for k, f in enumerate(self.firsts) if k not in dropped]
        return TrimOutcome(deleted, len(gone))

    # -- reading -------------------------------------------------------------------------

    def _locate(self, sid: StreamID) -> tuple[int, int] | None:
        """Where the live entry ``sid`` is, found as Redis finds it (``streamEntryExists``,
        XDEL): from the last node whose master ID is <= ``sid`` (else the first), the first
        live entry >= ``sid`` in node order, which is ``sid`` or tells it is absent. (After
        XSETID under a node's deleted entries, later appends hold IDs below its master.)"""
        nodes = self.nodes
        k = max(bisect_right(self.firsts, sid) - 1, 0)
        while k < len(nodes):
            i = nodes[k].seek(sid)
            if i >= 0:
                return (k, i) if nodes[k].id_at(i) == sid else None
            k += 1
        return None

    def get(self, sid: StreamID) -> Fields | None:
        found = self._locate(sid)
        if found is None:
            return None
        k, i = found
        return self.nodes[k].fields_at(i)

    def exists(self, sid: StreamID) -> bool:
        return self._locate(sid) is not None

    def range(
        self, start: StreamID = MIN_ID, end: StreamID = MAX_ID, count: int = 0, rev: bool = False
    ) -> list[Entry]:
        """Live entries with start <= ID <= end, at most ``count`` (0: all)."""
        out: list[Entry] = []
        if start > end or not self.nodes:
            return out
        room = count if count > 0 else -1
        nodes = self.nodes
        if rev:
            # Redis seeks the last node whose master ID is <= end, else the last node.
            k = bisect_right(self.firsts, end) - 1
            if k < 0:
                k = len(nodes) - 1
            if nodes[k].read_rev(nodes[k].rindex(end), start, end, room, out):
                return out
            for prev in range(k - 1, -1, -1):
                if nodes[prev].read_rev(len(nodes[prev]) - 1, start, end, room, out):
                    break
            return out
        k = max(bisect_right(self.firsts, start) - 1, 0)
        if nodes[k].read(nodes[k].index(start), start, end, room, out):
            return out
        for nxt in range(k + 1, len(nodes)):
            if nodes[nxt].read(0, start, end, room, out):
                break
        return out

    @property
    def first_id(self) -> StreamID:
        """The first live entry's ID, 0-0 when empty (Redis's ``first_id``). Nodes that a
        trim left with deleted entries only are passed over (see ``trim``)."""
        if self.length:
            for node in self.nodes:
                i = node.first_live()
                if i >= 0:
                    return node.id_at(i)
        return MIN_ID

    def last_valid_id(self) -> StreamID:
        """The last live entry's ID (``streamLastValidID``), 0-0 when empty."""
        if self.length:
            for node in reversed(self.nodes):
                i = node.last_live()
                if i >= 0:
                    return node.id_at(i)
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
        """The logical read counter of ``sid`` (``streamEstimateDistanceFromFirstEverEntry``).
        Redis returns it as a ``long long`` in which -1 means unknown, so a wrapped
        ``entries_added`` can make it negative, or unknown."""
        estimate = self._estimate(sid)
        if estimate is None:
            return None
        estimate = i64(estimate)
        return None if estimate == -1 else estimate

    def _estimate(self, sid: StreamID) -> int | None:
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
