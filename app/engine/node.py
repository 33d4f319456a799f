"""A packed stream node: Redis's listpack macro node, kept as a few flat buffers.

A node holds up to ``node-max-entries`` entries of one stream. As in ``t_stream.c`` the
entries are not objects: IDs are deltas from the node's master ID, field names are stored
once when an entry has the master entry's fields (SAMEFIELDS), values sit back to back in one
string, deletion flags are bits. An ``Entry`` object is made only when a reply asks for it.

Layout of one node (``n`` entries, ``nm`` master fields)::

    master          StreamID: the ID of the first entry added to the node (also the
                    stream's index key for the node, ``Stream.firsts``)
    master_fields   (f1, ..., fnm): the first entry's field names; nodes of one stream
                    share the tuple while it stays the same
    dms, dseq       array('b'|'h'|'i'|'q'), one element per entry: ms - master.ms and
                    seq - master.seq. Born as narrow as the deltas allow and widened when an
                    append does not fit; when a delta leaves int64 (IDs near 0 and 2**64 in
                    one node) both become array('Q') of deltas mod 2**64 (``wide``).
    strs            str: every entry's strings in entry order, each followed by ``sep``
                        SAMEFIELDS entry:  v1 ; v2 ; ... vnm ;
                        other entry:       f1 ; v1 ; f2 ; v2 ; ... fk ; vk ;
                    (a str, so a value comes back exactly as it went in: bytes that are
                    not UTF-8 stay lone surrogates, the engine's binary-safe form)
    sep             a character that occurs in no string of the node (chosen again when
                    an append brings it: the old separators are replaced), so one
                    ``str.split`` cuts a whole run of strings; None when every Latin-1
                    character occurs, and then the node is cut by ``ends`` alone
    ends            array('H'|'I'|'Q'): ends[0] = 0, ends[s + 1] = where string s ends
                    plus one (its separator), so string s is strs[ends[s]:ends[s + 1] - 1]
    starts          None while every entry is SAMEFIELDS (entry i's strings are
                    i*nm .. i*nm + nm - 1); else array('H'|'I'|'Q') of n + 1 string
                    indexes: entry i's strings are starts[i] .. starts[i + 1] - 1
    mixed           int bitmap: bit i set when entry i is not SAMEFIELDS
    deleted         None until the first deletion; then bytearray, bit i (byte i >> 3,
                    bit i & 7) set when entry i is deleted

For 3 small fields that is about 10 bytes of IDs and offsets per entry plus the values, and
a few hundred bytes per node (Redis: 22 bytes per entry). ``lp_bytes`` models the size the
same entries take in Redis's listpack, because node boundaries — and so ``~`` trimming —
depend on it (see ``listpack``).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import accumulate, chain, compress, count, repeat
from operator import add, eq, ge, itemgetter, sub
from typing import Final

from app.engine.ids import StreamID
from app.engine.listpack import (
    LP_EMPTY_BYTES,
    fields_bytes,
    int_size,
    plain_strings,
    run_int_size,
    str_size,
    strs_size,
    values_sizes,
)
from app.engine.node_reads import MASK64, Fields, NodeReads

_SAMEFIELDS: Final = 2  # STREAM_ITEM_FLAG_SAMEFIELDS; the flags element costs 2 bytes either way
_SIGNED: Final = "bhiq"
_UNSIGNED: Final = "HIQ"
_SEPARATORS: Final = "\x1f" + "".join(chr(c) for c in range(256) if c != 0x1F)
"""Separator candidates, the ASCII unit separator first: all Latin-1, so a separator never
makes a node's string wider than its content."""
_UMAX: Final = {"H": 0xFFFF, "I": 0xFFFF_FFFF, "Q": MASK64}
# A run this long or longer is sized in C passes when it can be (``Node._plain_run``).
_PLAIN_RUN: Final = 8
_NAMES = itemgetter(slice(0, None, 2))
_VALUES = itemgetter(slice(1, None, 2))
_MS, _SEQ = itemgetter(0), itemgetter(1)


def _unsigned(values: list[int]) -> array[int]:
    """The narrowest unsigned array that holds ``values`` (all >= 0)."""
    top = max(values, default=0)
    return array(next(t for t in _UNSIGNED if top <= _UMAX[t]), values)


class Node(NodeReads):
    """One macro node: packed entries, deletion bits and the modelled listpack size."""

    __slots__ = (
        "deleted",
        "dms",
        "dseq",
        "ends",
        "live",
        "lp_bytes",
        "master",
        "master_fields",
        "mixed",
        "ndeleted",
        "ordered",
        "sep",
        "starts",
        "strs",
        "wide",
    )

    def __init__(self, first: StreamID, fields: Fields, shared: Fields | None = None) -> None:
        names = fields[0::2]
        # A stream's nodes nearly always have the same fields: keep one tuple of them.
        self.master_fields: Fields = shared if shared is not None and shared == names else names
        self.master = first
        self.dms: array[int] = array("b")
        self.dseq: array[int] = array("b")
        self.wide = False
        self.strs = ""
        self.sep: str | None = _SEPARATORS[0]
        self.ends: array[int] = array("H", (0,))
        self.starts: array[int] | None = None
        self.mixed = 0
        self.deleted: bytearray | None = None
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

    @classmethod
    def packed(
        cls,
        master: StreamID,
        names: Fields,
        ids: Sequence[StreamID],
        strs: list[str],
        starts: list[int] | None,
        mixed: int,
    ) -> Node:
        """A node of ``ids`` built in one pass (RESTORE, old snapshots): ``strs`` holds every
        entry's strings in the layout above; ``starts`` (None when every entry is SAMEFIELDS)
        and ``mixed`` as in the layout. One join and one offsets pass, so building costs
        O(entries + strings), where ``put`` per entry would copy the node's string each time.
        Sizes, counts and deletion flags are the caller's to set."""
        node = cls(master, ())
        node.master_fields = names
        mms, mseq = master.ms, master.seq
        dms = [sid.ms - mms for sid in ids]
        dseq = [sid.seq - mseq for sid in ids]
        for code in _SIGNED:
            half = 1 << (array(code).itemsize * 8 - 1)
            low, high = min(dms + dseq, default=0), max(dms + dseq, default=0)
            if -half <= low and high < half:
                node.dms, node.dseq = array(code, dms), array(code, dseq)
                break
        else:  # IDs near 0 and 2**64 in one node: deltas modulo 2**64, as ``_widen_ids``
            node.wide = True
            node.dms = array("Q", [v & MASK64 for v in dms])
            node.dseq = array("Q", [v & MASK64 for v in dseq])
        joined = "".join(strs)
        sep: str | None = _SEPARATORS[0]
        if _SEPARATORS[0] in joined:
            used = set(joined)
            sep = next((c for c in _SEPARATORS if c not in used), None)
        node.sep = sep
        glue = sep or _SEPARATORS[0]  # as ``put`` does: with no separator, ``ends`` cut alone
        node.strs = glue.join(strs) + glue if strs else ""
        node.ends = _unsigned([0, *accumulate(len(s) + 1 for s in strs)])
        node.starts = None if starts is None else _unsigned(starts)
        node.mixed = mixed
        return node

    @classmethod
    def from_rows(
        cls, master: StreamID, names: Fields, ids: Sequence[StreamID], rows: Sequence[Fields]
    ) -> Node:
        """``packed`` from whole field tuples: an entry with the master's ``names`` keeps
        its values only (SAMEFIELDS), any other its names and values."""
        strs: list[str] = []
        starts: list[int] | None = None
        mixed = 0
        for i, fields in enumerate(rows):
            if starts is not None:
                starts.append(len(strs))
            if fields[0::2] == names:
                strs += fields[1::2]
                continue
            if starts is None:
                starts = list(range(0, len(strs) + 1, len(names)))
            mixed |= 1 << i
            strs += fields
        if starts is not None:
            starts.append(len(strs))
        return cls.packed(master, names, ids, strs, starts, mixed)

    def __len__(self) -> int:
        """Entries in the node, live and deleted."""
        return len(self.dms)

    # -- writing -------------------------------------------------------------------------

    def append(self, sid: StreamID, fields: Fields) -> None:
        """Add an entry (greater than the stream's last ID) and account its listpack size."""
        self.append_run((sid,), (fields,), 0, 0, 0)

    def append_run(
        self,
        ids: Sequence[StreamID],
        rows: Sequence[Fields],
        start: int,
        max_bytes: int,
        max_entries: int,
    ) -> int:
        """``append`` of ``ids[start:]`` while the node has room (the check ``streamAppendItem``
        makes before each entry; the caller made it for ``ids[start]``); returns the index of
        the first entry left out. The sizes are accounted entry by entry, since they decide
        where the node closes, but the strings of the run are packed in one go (``_pack``)."""
        master = self.master
        mms, mseq, mfields = master.ms, master.seq, self.master_fields
        n = self.live + self.ndeleted
        if n and self.ordered:
            prev = (
                (mms + self.dms[-1]) & MASK64,
                (mseq + self.dseq[-1]) & MASK64,
            )
        else:
            prev = None
        if len(ids) - start >= _PLAIN_RUN:
            done = self._plain_run(ids, rows, start, max_bytes, max_entries, n, prev)
            if done is not None:
                return done
        samefields = int_size(_SAMEFIELDS)
        # The master's names' bytes: an entry with the same names adds only its values'.
        names_bytes = fields_bytes(mfields)
        lp_bytes, live, ordered = self.lp_bytes, self.live, self.ordered
        end = len(ids)
        i = start
        all_same = True
        # int_size inlined where it is 2 (0..127): most deltas and counts of a node.
        while i < end:
            sid, fields = ids[i], rows[i]
            names = fields[0::2]
            nfields = len(names)
            same = names == mfields
            if same:
                values, raw = values_sizes(fields[1::2])
                raw += names_bytes
            else:
                raw = fields_bytes(fields)
            if i > start and (lp_bytes + raw >= max_bytes or (max_entries and n >= max_entries)):
                break
            if n and live >= 127:
                lp_bytes += int_size(live + 1) - int_size(live)
            d = sid.ms - mms
            size = samefields + (2 if 0 <= d <= 127 else int_size(d))
            d = sid.seq - mseq
            size += 2 if 0 <= d <= 127 else int_size(d)
            if same:
                size += values + (2 if nfields <= 124 else int_size(nfields + 3))
            else:
                all_same = False
                size += int_size(nfields) + strs_size(fields) + int_size(2 * nfields + 4)
            lp_bytes += size
            if prev is not None and sid < prev:
                ordered = False
            prev = sid if ordered else None
            live += 1
            n += 1
            i += 1
        self.lp_bytes, self.live, self.ordered = lp_bytes, live, ordered
        self._pack(ids[start:i], rows[start:i], all_same)
        return i

    def _plain_run(
        self,
        ids: Sequence[StreamID],
        rows: Sequence[Fields],
        start: int,
        max_bytes: int,
        max_entries: int,
        n: int,
        prev: tuple[int, int] | None,
    ) -> int | None:
        """``append_run``'s sizing done in a few C passes over the run, for its common
        case: every entry has the master's names and plain values (``plain_strings``), and
        the node's live count stays under 128 (past it the header's count element grows).
        The same sizes and the same closing point as entry by entry; None when the run is
        not such a run. The run's IDs increase (``Stream.append_many``'s contract), so only
        its first can fall below the node's last (after XSETID moved the top back)."""
        mfields = self.master_fields
        nf = len(mfields)
        k = len(ids) - start
        if max_entries:
            k = min(k, max(max_entries - n, 1))  # the first entry is always taken
        live = self.live
        if not nf or live + k > 127 or self.sep == "\x00" or self.wide:
            return None
        whole = start == 0 and k == len(ids)
        run_ids = ids if whole else ids[start : start + k]
        run_rows = rows if whole else rows[start : start + k]
        if not all(map(eq, map(_NAMES, run_rows), repeat(mfields))):
            return None
        plain = plain_strings(list(map(_VALUES, run_rows)))
        if plain is None:
            return None
        strs, joined = plain
        master = self.master
        dms = list(map(sub, map(_MS, run_ids), repeat(master.ms)))
        dseq = list(map(sub, map(_SEQ, run_ids), repeat(master.seq)))
        # An entry: flags, two ID deltas, its values (each its length + 2), the count.
        base = int_size(_SAMEFIELDS) + 2 * nf + int_size(nf + 3)
        size_ms, size_seq = run_int_size(dms), run_int_size(dseq)
        total = len(joined) - len(strs) + 1  # the run's value bytes (plain: ASCII)
        # The node closes before the first later entry whose fields would reach max_bytes:
        # never inside the run when the node after the whole run stays below that.
        room = max_bytes - fields_bytes(mfields)
        after = self.lp_bytes + k * base + total
        if size_ms is not None and size_seq is not None and after + k * (size_ms + size_seq) < room:
            stop = k
            self.lp_bytes = after + k * (size_ms + size_seq)
        else:
            lengths = list(map(len, map("".join, map(_VALUES, run_rows))))
            sizes = [base + x for x in lengths]
            for deltas, size in ((dms, size_ms), (dseq, size_seq)):
                if size is not None:
                    sizes = list(map(add, sizes, repeat(size)))
                else:
                    sizes = list(map(add, sizes, map(int_size, deltas)))
            before = list(accumulate(sizes, initial=self.lp_bytes))  # the node before each
            over = map(ge, map(add, before[1:k], lengths[1:k]), repeat(room))
            stop = next(compress(count(1), over), k)
            self.lp_bytes = before[stop]
        if self.ordered and prev is not None and run_ids[0] < prev:
            self.ordered = False
        self.live = live + stop
        if stop < k:
            dms, dseq, strs = dms[:stop], dseq[:stop], strs[: stop * nf]
            joined = "\x00".join(strs)
        if not self._pack_plain(dms, dseq, strs, joined):
            self._pack(run_ids[:stop], run_rows[:stop], True)
        return start + stop

    def _pack(self, ids: Sequence[StreamID], rows: Sequence[Fields], all_same: bool) -> None:
        """``put`` of a run at once: the common case (SAMEFIELDS entries in a node of such
        entries, narrow deltas) with one join and one offsets pass; anything else entry by
        entry."""
        if len(ids) == 1 or self.wide or not all_same or self.starts is not None:
            for sid, fields in zip(ids, rows, strict=True):
                self.put(sid, fields, fields[0::2] == self.master_fields)
            return
        mms, mseq = self.master.ms, self.master.seq
        new_ms = [sid.ms - mms for sid in ids]
        new_seq = [sid.seq - mseq for sid in ids]
        strs = list(chain.from_iterable(map(_VALUES, rows)))
        if not self._pack_plain(new_ms, new_seq, strs, "".join(strs)):
            for sid, fields in zip(ids, rows, strict=True):
                self.put(sid, fields, True)

    def _pack_plain(
        self, new_ms: list[int], new_seq: list[int], strs: list[str], joined: str
    ) -> bool:
        """Pack SAMEFIELDS entries given as their ID deltas and their values in order
        (``joined``: the values joined by any character the node's separator is not). False,
        with nothing changed, when this node cannot take them so (a per-entry layout, deltas
        beyond int64): the caller then puts them one by one."""
        if self.wide or self.starts is not None:
            return False
        try:
            dms = array(self.dms.typecode, new_ms)
            dseq = array(self.dseq.typecode, new_seq)
        except OverflowError:  # wider deltas (IDs of real clocks): the arrays widen once
            if not self._widen_run(new_ms, new_seq):
                return False
            dms, dseq = array(self.dms.typecode), array(self.dseq.typecode)
        if self.sep is not None and self.sep in joined:
            self._new_separator(joined)
        ends = self.ends
        new = list(map(add, accumulate(map(len, strs)), count(ends[-1] + 1)))
        if new and new[-1] > _UMAX[ends.typecode]:
            self.ends = _unsigned([*ends, *new])
        else:
            ends.extend(new)
        self.dms.extend(dms)
        self.dseq.extend(dseq)
        sep = self.sep or _SEPARATORS[0]
        self._extend(sep.join(strs) + sep)
        if self.deleted is not None:
            self.deleted.extend(bytes(((len(self.dms) + 7) >> 3) - len(self.deleted)))
        return True

    def put(self, sid: StreamID, fields: Fields, same: bool) -> None:
        """Pack one entry's ID and strings (no size accounting: ``append`` and loading)."""
        i = len(self.dms)
        dms = sid.ms - self.master.ms
        dseq = sid.seq - self.master.seq
        if self.wide:
            dms &= MASK64
            dseq &= MASK64
        try:
            self.dms.append(dms)
        except OverflowError:
            self._widen_ids(dms, dseq)
        else:
            try:
                self.dseq.append(dseq)
            except OverflowError:
                self.dms.pop()
                self._widen_ids(dms, dseq)
        strs = fields[1::2] if same else fields
        if not same:
            if self.starts is None:
                nm = len(self.master_fields)
                self.starts = _unsigned(list(range(0, nm * i + 1, nm)))
            self.mixed |= 1 << i
        ends = self.ends
        joined = "".join(strs)
        if self.sep is not None and self.sep in joined:
            self._new_separator(joined)
        # String k ends at base + (its length and those before it) + k + 1 separators.
        new = list(map(add, accumulate(map(len, strs)), count(ends[-1] + 1)))
        if new and new[-1] > _UMAX[ends.typecode]:
            ends = self.ends = _unsigned([*ends, *new])
        else:
            ends.extend(new)
        if self.starts is not None:
            top = len(ends) - 1
            if top > _UMAX[self.starts.typecode]:
                self.starts = _unsigned([*self.starts, top])
            else:
                self.starts.append(top)
        sep = self.sep or _SEPARATORS[0]
        self._extend(sep.join(strs) + sep)
        if self.deleted is not None and not i & 7:
            self.deleted.append(0)

    def _extend(self, more: str) -> None:
        """``strs += more`` in amortized O(len(more)), not O(len(strs)): CPython grows a
        string in place when only a local name holds it, never one held by an attribute.
        (A snapshot view that holds the old string makes this a copy, as it must be.)"""
        strs = self.strs
        self.strs = ""
        strs += more
        self.strs = strs

    def _new_separator(self, joined: str) -> None:
        """Pick a separator absent from the node and from ``joined`` (the strings coming)."""
        used = set(self.strs.replace(self.sep, "") if self.sep else self.strs)
        used.update(joined)
        sep = next((c for c in _SEPARATORS if c not in used), None)
        if sep is not None and self.sep is not None:
            self.strs = self.strs.replace(self.sep, sep)
        self.sep = sep

    def _widen_run(self, dms: list[int], dseq: list[int]) -> bool:
        """``_widen_ids`` for a run of deltas, appended here: False, with nothing changed,
        when they need more than int64 (``put`` then goes to deltas modulo 2**64)."""
        values = [*self.dms, *dms], [*self.dseq, *dseq]
        low = min(min(values[0]), min(values[1]))
        high = max(max(values[0]), max(values[1]))
        for code in _SIGNED:
            half = 1 << (array(code).itemsize * 8 - 1)
            if -half <= low and high < half:
                self.dms, self.dseq = array(code, values[0]), array(code, values[1])
                return True
        return False

    def _widen_ids(self, dms: int, dseq: int) -> None:
        """Make room for deltas that do not fit the arrays' current element type."""
        values = [*self.dms, dms], [*self.dseq, dseq]
        for code in _SIGNED:
            half = 1 << (array(code).itemsize * 8 - 1)
            if all(-half <= v < half for vs in values for v in vs):
                self.dms, self.dseq = array(code, values[0]), array(code, values[1])
                return
        # Beyond int64 (IDs near 0 and 2**64 in one node): deltas modulo 2**64.
        self.wide = True
        self.dms = array("Q", [v & MASK64 for v in values[0]])
        self.dseq = array("Q", [v & MASK64 for v in values[1]])

    def mark_deleted(self, i: int) -> None:
        if self.deleted is None:
            self.deleted = bytearray((len(self.dms) + 7) >> 3)
        self.deleted[i >> 3] |= 1 << (i & 7)
        self.lp_bytes += int_size(self.live - 1) - int_size(self.live)
        self.lp_bytes += int_size(self.ndeleted + 1) - int_size(self.ndeleted)
        self.live -= 1
        self.ndeleted += 1
