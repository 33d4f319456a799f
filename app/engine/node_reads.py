"""Reading a packed node: IDs, fields and runs of entries, without unpacking it.

``Node`` (app/engine/node.py) holds the buffers and writes them; this half reads them, the
hot path of XRANGE, XREAD and XREADGROUP. It is a base class rather than functions so a
read stays one attribute lookup on the node. The layout is described in node.py.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from itertools import compress, repeat
from typing import Final, NamedTuple

from app.engine.ids import StreamID

Fields = tuple[str, ...]
"""Field/value pairs flattened in the order the client gave them: (f1, v1, f2, v2, ...)."""

MASK64: Final = (1 << 64) - 1


class Entry(NamedTuple):
    """One entry of a reply. A named tuple rather than a dataclass: a read of 100 entries
    builds them in one C pass (``_entry``), where a dataclass runs its ``__init__`` per
    entry."""

    id: StreamID
    fields: Fields


_entry = tuple.__new__  # Entry((id, fields)) without a Python-level call


class NodeReads:
    """The read side of ``Node``: every method only reads the node's buffers."""

    __slots__ = ()

    master: StreamID
    master_fields: Fields
    dms: array[int]
    dseq: array[int]
    wide: bool
    strs: str
    sep: str | None
    ends: array[int]
    starts: array[int] | None
    mixed: int
    deleted: bytearray | None
    live: int
    ordered: bool

    def is_deleted(self, i: int) -> bool:
        d = self.deleted
        return d is not None and bool(d[i >> 3] >> (i & 7) & 1)

    def first_live(self) -> int:
        """The position of the first live entry, -1 when none is (a trim can leave a node
        holding only deleted entries: Redis keeps it, see ``Stream.trim``)."""
        for i in range(len(self.dms)):
            if not self.is_deleted(i):
                return i
        return -1

    def last_live(self) -> int:
        """The position of the last live entry, -1 when none is."""
        for i in range(len(self.dms) - 1, -1, -1):
            if not self.is_deleted(i):
                return i
        return -1

    def id_at(self, i: int) -> StreamID:
        m = self.master
        if self.wide:
            return StreamID((m.ms + self.dms[i]) & MASK64, (m.seq + self.dseq[i]) & MASK64)
        return StreamID(m.ms + self.dms[i], m.seq + self.dseq[i])

    def ids(self, i: int = 0) -> list[StreamID]:
        """The IDs of entries ``i`` to the last, deleted ones included, in node order."""
        m = self.master
        if self.wide:
            return [
                StreamID((m.ms + a) & MASK64, (m.seq + b) & MASK64)
                for a, b in zip(self.dms[i:], self.dseq[i:], strict=True)
            ]
        dms, dseq = (self.dms[i:], self.dseq[i:]) if i else (self.dms, self.dseq)
        # tuple.__new__ builds each StreamID in C (the namedtuple's own __new__ is Python).
        pairs = zip(map(m.ms.__add__, dms), map(m.seq.__add__, dseq), strict=True)
        return list(map(tuple.__new__, repeat(StreamID), pairs))

    def live_ids(self) -> list[StreamID]:
        ids = self.ids()
        if self.deleted is None:
            return ids
        return list(compress(ids, (not self.is_deleted(i) for i in range(len(ids)))))

    def fields_at(self, i: int) -> Fields:
        """Entry ``i``'s field/value pairs, as they were given."""
        s, e, starts = self.strs, self.ends, self.starts
        if starts is not None and self.mixed >> i & 1:
            return tuple([s[e[k] : e[k + 1] - 1] for k in range(starts[i], starts[i + 1])])
        names = self.master_fields
        a = i * len(names) if starts is None else starts[i]
        out = [*names, *names]
        out[0::2] = names
        out[1::2] = [s[e[k] : e[k + 1] - 1] for k in range(a, a + len(names))]
        return tuple(out)

    def strings(self, a: int, b: int) -> list[str]:
        """Strings ``a`` to ``b - 1`` of the node, sliced in one pass."""
        if a >= b:
            return []
        s, e = self.strs, self.ends
        if self.sep is not None:
            return s[e[a] : e[b] - 1].split(self.sep)
        return [s[e[k] : e[k + 1] - 1] for k in range(a, b)]

    def _uniform(self, i: int, ids: list[StreamID], room: int) -> list[Entry]:
        """The live entries among positions ``i`` .. ``i + len(ids) - 1`` of a node whose
        entries all have the master's fields, at most ``room`` (< 0: all): strings sliced,
        paired with the names and grouped into tuples by C loops, not one step per entry."""
        deleted = self.deleted
        positions: list[int] = []
        if deleted is not None:
            keep = [not deleted[j >> 3] >> (j & 7) & 1 for j in range(i, i + len(ids))]
            ids = list(compress(ids, keep))
            positions = list(compress(range(i, i + len(keep)), keep))
        if 0 <= room < len(ids):
            ids = ids[:room]
        if not ids:
            return []
        names = self.master_fields
        nm = len(names)
        if deleted is None:
            strs = self.strings(i * nm, (i + len(ids)) * nm)
        else:
            base = positions[0]
            every = self.strings(base * nm, (positions[len(ids) - 1] + 1) * nm)
            strs = [every[(p - base) * nm + f] for p in positions[: len(ids)] for f in range(nm)]
        flat = strs * 2
        flat[0::2] = names * len(ids)
        flat[1::2] = strs
        rows = zip(*[iter(flat)] * (2 * nm), strict=True)
        return list(map(_entry, repeat(Entry), zip(ids, rows, strict=True)))

    def read(self, i: int, start: StreamID, end: StreamID, room: int, out: list[Entry]) -> bool:
        """Append live entries from position ``i`` on with ``start <= ID <= end`` to ``out``,
        at most ``room`` of them (< 0: no limit). True when the scan is over: an ID past
        ``end`` was met or ``out`` got full. Decodes the node's IDs and strings in bulk: this
        is every range read's inner loop."""
        n = len(self.dms)
        if i >= n:
            return False
        ids = self.ids(i)
        if self.ordered and self.starts is None:
            cut = bisect_right(ids, end)
            got = self._uniform(i, ids[:cut] if cut < len(ids) else ids, room - len(out))
            out += got
            return cut < len(ids) or len(out) == room
        deleted = self.deleted
        names = self.master_fields
        nm = len(names)
        starts = self.starts
        if starts is None:
            strs = self.strings(i * nm, n * nm)
            base = i * nm
        else:
            strs = self.strings(starts[i], starts[n])
            base = starts[i]
        pairs = [*names, *names]
        pairs[0::2] = names
        mixed = self.mixed
        for j in range(i, n):
            if deleted is not None and deleted[j >> 3] >> (j & 7) & 1:
                continue  # Redis skips tombstones before comparing with the end
            sid = ids[j - i]
            if sid < start:
                continue
            if sid > end:
                return True
            if starts is None:
                a = j * nm - base
                pairs[1::2] = strs[a : a + nm]
                fields = tuple(pairs)
            elif mixed >> j & 1:
                fields = tuple(strs[starts[j] - base : starts[j + 1] - base])
            else:
                a = starts[j] - base
                pairs[1::2] = strs[a : a + nm]
                fields = tuple(pairs)
            out.append(Entry(sid, fields))
            if len(out) == room:
                return True
        return False

    def read_rev(self, j: int, start: StreamID, end: StreamID, room: int, out: list[Entry]) -> bool:
        """``read`` backwards from position ``j`` down: True once an ID below ``start`` was
        met or ``out`` got full."""
        if self.ordered and self.starts is None and j >= 0:
            ids = self.ids()[: j + 1]
            # (A scan that began at the last node, end below every master ID, meets nodes
            # whose IDs are all above end: none of them may come out.)
            ids = ids[: bisect_right(ids, end)]
            cut = bisect_left(ids, start)
            got = self._uniform(cut, ids[cut:], -1)
            got.reverse()
            out += got[: room - len(out)] if room >= 0 else got
            return cut > 0 or len(out) == room
        while j >= 0:
            if not self.is_deleted(j):
                sid = self.id_at(j)
                if sid < start:
                    return True
                if sid <= end:
                    out.append(Entry(sid, self.fields_at(j)))
                    if len(out) == room:
                        return True
            j -= 1
        return False

    def index(self, sid: StreamID) -> int:
        """Where a forward scan from ``sid`` starts (bisect when ordered, else 0)."""
        if not self.ordered:
            return 0  # scan it all; the live entries are in order, tombstones are skipped
        lo, hi = 0, len(self.dms)
        while lo < hi:
            mid = (lo + hi) >> 1
            if self.id_at(mid) < sid:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def rindex(self, sid: StreamID) -> int:
        """Where a backward scan down from ``sid`` starts (bisect when ordered, else the end)."""
        if not self.ordered:
            return len(self.dms) - 1
        lo, hi = 0, len(self.dms)
        while lo < hi:
            mid = (lo + hi) >> 1
            if sid < self.id_at(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo - 1

    def seek(self, sid: StreamID) -> int:
        """The position of the first live entry with an ID >= ``sid``, in node order (as
        Redis's forward iterator meets it), or -1 when there is none."""
        n = len(self.dms)
        for i in range(self.index(sid), n):
            if not self.is_deleted(i) and self.id_at(i) >= sid:
                return i
        return -1
