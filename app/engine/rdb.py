"""A stream as Redis serializes it (RDB types STREAM_LISTPACKS and STREAM_LISTPACKS_2): the
values RESTORE takes and DUMP gives.

The value, after its type byte (``rdbSaveObject`` / ``rdbLoadObject`` in Redis 7.0)::

    nodes             length, then per node: master ID (16-byte string, ms and seq as
                      big-endian uint64) and its listpack (a string, maybe LZF-compressed)
    length            live entries
    last_id           ms, seq (lengths)
    first_id          ms, seq                         } type 19 only; type 15 (Redis < 7)
    max_deleted_id    ms, seq                         } has none, and entries_added is
    entries_added     length                          } the length, as Redis loads it
    groups            length, then per group: name, last ID (ms, seq), entries_read (type 19;
                      2**64 - 1 for unknown, type 15 estimates it from the stream), the group
                      PEL (length; 16-byte ID, delivery time as int64 LE, delivery count),
                      the consumers (length; name, seen time, their PEL as 16-byte IDs)

A node's listpack (``t_stream.c``)::

    count | deleted | number of master fields | master fields ... | 0
    then per entry:  flags | ms - master ms | seq - master seq |
                     values ... (flags & SAMEFIELDS)  or  n | field | value ... (otherwise)
                     | lp-count (elements of the entry before it: n + 3, or 2n + 4)

Each listpack becomes one engine node with the same entries (deleted ones kept as flags)
and the same byte size, so later appends split nodes and ``~`` trimming drops entries
exactly where redis-server would after the same RESTORE. Redis 7.0 has no type 21
(STREAM_LISTPACKS_3, Redis 7.2): such payloads carry RDB version 11 and fail the footer check.

The loader is stricter than redis-server's default (``sanitize-dump-payload no``), which
takes some damaged listpacks and crashes later: every element is read and checked, and a
payload that is not one consistent stream — counts that disagree with the entries, live
entries out of order, a group PEL entry no consumer owns, a consumer PEL entry missing from
its group's — is refused as "Bad data format", as the deep sanitization refuses it.
The ``first_id`` recorded in type 19 is read and not kept: the engine derives it from the
entries. Bytes after the value are ignored, as ``restoreCommand`` ignores them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from itertools import pairwise

from app.engine import lpcodec
from app.engine.groups import Consumer, ConsumerGroup
from app.engine.ids import MIN_ID, UINT64_MAX, StreamID, string2ll
from app.engine.node import MASK64, Node
from app.engine.pel import PendingEntry, key_of, sid_of
from app.engine.rdbio import BadPayload, Reader, Writer, seal, unseal
from app.engine.stream import Stream

__all__ = ["BadPayload", "NotAStream", "dump_stream", "load_stream"]

RDB_TYPE_STREAM_LISTPACKS = 15
RDB_TYPE_STREAM_LISTPACKS_2 = 19

_OTHER_TYPES = {
    0: "string", 1: "list", 2: "set", 3: "zset", 4: "hash", 5: "zset", 6: "module",
    7: "module", 9: "hash", 10: "list", 11: "set", 12: "zset", 13: "hash", 14: "list",
    16: "hash", 17: "zset", 18: "list",
}  # fmt: skip
"""The other RDB object types Redis 7.0 takes (``rdbIsObjectType``), by the key type."""

_DELETED = 1  # STREAM_ITEM_FLAG_DELETED
_SAMEFIELDS = 2  # STREAM_ITEM_FLAG_SAMEFIELDS
_UNKNOWN_ENTRIES_READ = UINT64_MAX  # SCG_INVALID_ENTRIES_READ (-1) as rdbSaveLen writes it


class NotAStream(BadPayload):
    """A sound payload of another key type (a string, a hash...): xstreams holds streams only."""

    def __init__(self, type_name: str) -> None:
        super().__init__(type_name)
        self.type_name = type_name


def _text(data: bytes) -> str:
    """Bytes as the engine's str: what is not UTF-8 stays as lone surrogates."""
    return data.decode("utf-8", "surrogateescape")


def _as_text(value: lpcodec.Element) -> str:
    return str(value) if isinstance(value, int) else _text(value)


def _as_int(value: lpcodec.Element) -> int:
    """A listpack integer; a string element that reads as one counts too (``lpGetInteger``)."""
    if isinstance(value, int):
        return value
    parsed = string2ll(_text(value)) if len(value) <= 20 else None
    return _bad("not an integer") if parsed is None else parsed


def _bad(reason: str) -> int:
    raise BadPayload(reason)


def _raw_id(raw: bytes) -> StreamID:
    ms, seq = struct.unpack(">QQ", raw)
    return StreamID(ms, seq)


# -- loading --------------------------------------------------------------------------------


def _node(master: StreamID, lp: bytes, shared: tuple[str, ...] | None) -> Node:
    """One engine node holding a listpack's entries, deleted ones flagged."""
    elements = lpcodec.decode(lp)
    it: Iterator[lpcodec.Element] = iter(elements)
    try:
        count, ndeleted, nm = _as_int(next(it)), _as_int(next(it)), _as_int(next(it))
        if nm < 1 or nm > len(elements):  # XADD takes at least one field
            raise BadPayload("master field count out of range")
        names = tuple(_as_text(next(it)) for _ in range(nm))
        if _as_int(next(it)) != 0:
            raise BadPayload("master entry not terminated")
        node = Node(master, ())
        node.master_fields = shared if shared == names else names
        dead: list[int] = []
        i = 0
        for first in it:
            flags = _as_int(first)
            dms, dseq = _as_int(next(it)), _as_int(next(it))
            if flags & _SAMEFIELDS:
                values = [_as_text(next(it)) for _ in range(nm)]
                fields = [*names, *names]
                fields[1::2] = values
                expected = nm + 3
            else:
                nf = _as_int(next(it))
                if nf < 1 or nf > len(elements):
                    raise BadPayload("entry field count out of range")
                fields = [_as_text(next(it)) for _ in range(2 * nf)]
                expected = 2 * nf + 4
            if _as_int(next(it)) != expected:
                raise BadPayload("entry lp-count wrong")
            sid = StreamID((master.ms + dms) & MASK64, (master.seq + dseq) & MASK64)
            node.put(sid, tuple(fields), bool(flags & _SAMEFIELDS))
            if flags & _DELETED:
                dead.append(i)
            i += 1
    except StopIteration:
        raise BadPayload("listpack ends inside an entry") from None
    if len(dead) != ndeleted or i - len(dead) != count:
        raise BadPayload("node counts disagree with its entries")
    if dead:
        node.deleted = bytearray((i + 7) >> 3)
        for j in dead:
            node.deleted[j >> 3] |= 1 << (j & 7)
    node.live, node.ndeleted = count, ndeleted
    node.lp_bytes = len(lp)
    node.ordered = all(a < b for a, b in pairwise(node.ids()))
    return node


def _group(r: Reader, s: Stream, v2: bool) -> ConsumerGroup:
    name = _text(r.string())
    last_id = StreamID(r.length(), r.length())
    entries_read: int | None
    if v2:
        entries_read = r.length()
        if entries_read == _UNKNOWN_ENTRIES_READ:
            entries_read = None
        elif entries_read >= 1 << 63:
            raise BadPayload("entries_read out of range")
    else:
        entries_read = s.estimate_entries_read(last_id)
    g = ConsumerGroup(name, last_id, entries_read)
    times: dict[int, tuple[int, int]] = {}
    for _ in range(r.length()):
        key = key_of(_raw_id(r.raw(16)))
        delivered_at_ms, delivery_count = r.millis(), r.length()
        if key in times:
            raise BadPayload("duplicated group PEL entry")
        times[key] = (delivered_at_ms, delivery_count)
    pel: dict[int, PendingEntry] = {}
    for _ in range(r.length()):
        cname = _text(r.string())
        if cname in g.consumers:
            raise BadPayload("duplicated consumer")
        c = g.consumers[cname] = Consumer(cname, r.millis())
        for _ in range(r.length()):
            key = key_of(_raw_id(r.raw(16)))
            if key not in times or key in pel:
                raise BadPayload("consumer PEL entry not in its group's PEL, or owned twice")
            pel[key] = PendingEntry(cname, *times[key])
            c.pel.add(key)
    if len(pel) != len(times):
        raise BadPayload("group PEL entry without a consumer")
    g.pel.load(pel)
    return g


def load_stream(
    payload: bytes, node_max_entries: int, node_max_bytes: int, expanded: int = 0
) -> Stream:
    """The stream a DUMP payload holds (RESTORE). Raises ``rdbio.PayloadVersionError`` for a
    footer RESTORE refuses, ``NotAStream`` for another key type, ``BadPayload`` otherwise;
    ``rdbio.TooLarge`` when its compressed strings expand past ``expanded`` bytes (0: no
    bound)."""
    r = Reader(unseal(payload), expanded)
    kind = r.byte()
    if kind not in (RDB_TYPE_STREAM_LISTPACKS, RDB_TYPE_STREAM_LISTPACKS_2):
        if kind in _OTHER_TYPES:
            raise NotAStream(_OTHER_TYPES[kind])
        raise BadPayload(f"RDB type {kind}")
    v2 = kind == RDB_TYPE_STREAM_LISTPACKS_2
    s = Stream(node_max_entries, node_max_bytes)
    listpacks: dict[StreamID, bytes] = {}
    for _ in range(r.length()):
        raw = r.string()
        if len(raw) != 16:
            raise BadPayload("node key is not the size of a stream ID")
        master = _raw_id(raw)
        if master in listpacks:
            raise BadPayload("listpack re-added with existing key")
        listpacks[master] = r.string()
    length = r.length()
    s.last_id = StreamID(r.length(), r.length())
    if v2:
        r.length(), r.length()  # first_id: derived from the entries here
        s.max_deleted_id = StreamID(r.length(), r.length())
        s.entries_added = r.length()
    else:
        s.max_deleted_id, s.entries_added = MIN_ID, length
    shared: tuple[str, ...] | None = None
    for master in sorted(listpacks):  # the rax orders nodes by key, whatever the payload did
        node = _node(master, listpacks[master], shared)
        shared = node.master_fields
        # A node with only deleted entries stays, as in Redis (a trim leaves such nodes, and
        # later appends land in them); one with no entry at all is no node Redis makes.
        if len(node):
            s.nodes.append(node)
            s.firsts.append(master)
            s.length += node.live
    if s.length != length:
        raise BadPayload("stream length disagrees with its nodes")
    live = [sid for node in s.nodes for sid in node.live_ids()]
    if any(a >= b for a, b in pairwise(live)) or (live and live[-1] > s.last_id):
        raise BadPayload("entries out of order or past the last ID")
    for _ in range(r.length()):
        g = _group(r, s, v2)
        if g.name in s.groups:
            raise BadPayload("duplicated consumer group name")
        s.groups[g.name] = g
    return s


# -- dumping --------------------------------------------------------------------------------


def _signed(delta: int) -> int:
    """A node's ID delta as the int64 Redis stores (uint64 difference cast to signed)."""
    delta &= MASK64
    return delta - (1 << 64) if delta >= 1 << 63 else delta


def node_listpack(node: Node) -> bytes:
    """A node's entries as the listpack redis-server would hold for them."""
    el = lpcodec.element
    names = node.master_fields
    parts = [el(node.live), el(node.ndeleted), el(len(names)), *map(el, names), el(0)]
    master = node.master
    for i, sid in enumerate(node.ids()):
        fields = node.fields_at(i)
        same = not (node.starts is not None and node.mixed >> i & 1)
        flags = (_SAMEFIELDS if same else 0) | (_DELETED if node.is_deleted(i) else 0)
        parts += (el(flags), el(_signed(sid.ms - master.ms)), el(_signed(sid.seq - master.seq)))
        nf = len(fields) // 2
        if same:
            parts += map(el, fields[1::2])
            parts.append(el(nf + 3))
        else:
            parts.append(el(nf))
            parts += map(el, fields)
            parts.append(el(2 * nf + 4))
    return lpcodec.encode(parts)


def _name(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def dump_stream(s: Stream) -> bytes:
    """A DUMP payload of ``s`` that redis-server 7.0 RESTOREs: type STREAM_LISTPACKS_2, RDB
    version 10, CRC64; strings uncompressed. Groups and consumers in byte order, as
    Redis's rax iterates them."""
    w = Writer()
    w.raw(bytes((RDB_TYPE_STREAM_LISTPACKS_2,)))
    w.length(len(s.nodes))
    for node in s.nodes:
        w.string(struct.pack(">QQ", node.master.ms, node.master.seq))
        w.string(node_listpack(node))
    w.length(s.length)
    first = s.first_id
    for value in (s.last_id.ms, s.last_id.seq, first.ms, first.seq):
        w.length(value)
    w.length(s.max_deleted_id.ms)
    w.length(s.max_deleted_id.seq)
    w.length(s.entries_added)
    w.length(len(s.groups))
    for gname in sorted(s.groups, key=_name):
        g = s.groups[gname]
        w.string(_name(gname))
        w.length(g.last_id.ms)
        w.length(g.last_id.seq)
        w.length(_UNKNOWN_ENTRIES_READ if g.entries_read is None else g.entries_read)
        items = g.pel.items()
        w.length(len(items))
        for sid, p in items:
            w.raw(struct.pack(">QQ", sid.ms, sid.seq))
            w.millis(p.delivered_at_ms)
            w.length(p.delivery_count)
        w.length(len(g.consumers))
        for cname in sorted(g.consumers, key=_name):
            c = g.consumers[cname]
            w.string(_name(cname))
            w.millis(c.seen_time_ms)
            w.length(len(c.pel))
            for key in sorted(c.pel):
                sid = sid_of(key)
                w.raw(struct.pack(">QQ", sid.ms, sid.seq))
    return seal(w.getvalue())
