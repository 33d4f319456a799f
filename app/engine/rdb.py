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
    groups            length, then per group: name, last ID (ms, seq), entries_read (type 19:
                      a long long as a length, so 2**64 - 1 (-1) for unknown; type 15
                      estimates it from the stream), the group
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
from itertools import pairwise

from app.engine import lpcodec
from app.engine.consumer_groups import Consumer, ConsumerGroup
from app.engine.ids import MIN_ID, UINT64_MAX, StreamID, string2ll
from app.engine.int64 import i64, u64
from app.engine.node import Node
from app.engine.node_reads import MASK64
from app.engine.pel import PendingEntry, key_of, sid_of
from app.engine.rdbio import BadPayload, Reader, TooLarge, Writer, seal, unseal
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


def _texts(elements: list[lpcodec.Element]) -> list[str]:
    """Listpack elements as the engine's strings (integers as their decimal text)."""
    return [_text(v) if v.__class__ is bytes else str(v) for v in elements]


def _node(
    master: StreamID, lp: bytes, shared: tuple[str, ...] | None, max_entries: int = 0
) -> Node:
    """One engine node holding a listpack's entries, deleted ones flagged; ``TooLarge`` past
    ``max_entries`` entries, live and deleted (0: no bound). One pass over the elements
    collects IDs and strings; ``Node.packed`` then builds the node at once (linear in the
    listpack, as no per-entry append can be)."""
    elements = lpcodec.decode(lp)
    total = len(elements)
    if total < 4:
        raise BadPayload("listpack ends inside the master entry")
    count, ndeleted, nm = _as_int(elements[0]), _as_int(elements[1]), _as_int(elements[2])
    if nm < 1 or nm > total:  # XADD takes at least one field
        raise BadPayload("master field count out of range")
    if 4 + nm > total or _as_int(elements[3 + nm]) != 0:
        raise BadPayload("master entry not terminated")
    names = tuple(_texts(elements[3 : 3 + nm]))
    mms, mseq = master.ms, master.seq
    ids: list[StreamID] = []
    strings: list[lpcodec.Element] = []
    starts: list[int] | None = None
    mixed = 0
    dead: list[int] = []
    i = 0
    p = 4 + nm
    while p < total:
        if max_entries and i >= max_entries:
            raise TooLarge("node_entries", max_entries)
        if p + 3 > total:
            raise BadPayload("listpack ends inside an entry")
        flags, dms, dseq = _as_int(elements[p]), _as_int(elements[p + 1]), _as_int(elements[p + 2])
        if flags & _SAMEFIELDS:
            q = p + 3 + nm
            expected = nm + 3
            values = elements[p + 3 : q]
            if starts is not None:
                starts.append(len(strings))
        else:
            if p + 3 >= total:
                raise BadPayload("listpack ends inside an entry")
            nf = _as_int(elements[p + 3])
            if nf < 1 or nf > total:
                raise BadPayload("entry field count out of range")
            q = p + 4 + 2 * nf
            expected = 2 * nf + 4
            values = elements[p + 4 : q]
            if starts is None:
                starts = list(range(0, len(strings) + 1, nm))
            else:
                starts.append(len(strings))
            mixed |= 1 << i
        if q >= total:
            raise BadPayload("listpack ends inside an entry")
        if _as_int(elements[q]) != expected:
            raise BadPayload("entry lp-count wrong")
        strings += values
        ids.append(StreamID((mms + dms) & MASK64, (mseq + dseq) & MASK64))
        if flags & _DELETED:
            dead.append(i)
        i += 1
        p = q + 1
    if len(dead) != ndeleted or i - len(dead) != count:
        raise BadPayload("node counts disagree with its entries")
    if starts is not None:
        starts.append(len(strings))
    names = shared if shared == names else names
    node = Node.packed(master, names, ids, _texts(strings), starts, mixed)
    if dead:
        node.deleted = bytearray((i + 7) >> 3)
        for j in dead:
            node.deleted[j >> 3] |= 1 << (j & 7)
    node.live, node.ndeleted = count, ndeleted
    node.lp_bytes = len(lp)
    node.ordered = all(a < b for a, b in pairwise(ids))
    return node


def _group(r: Reader, s: Stream, v2: bool) -> ConsumerGroup:
    name = _text(r.string())
    last_id = StreamID(r.length(), r.length())
    entries_read: int | None
    if v2:
        # A long long saved as a length: read back as Redis casts it, -1 meaning unknown.
        entries_read = i64(r.length())
        if entries_read == -1:
            entries_read = None
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
    owners: dict[int, str] = {}
    for _ in range(r.length()):
        cname = _text(r.string())
        if cname in g.consumers:
            raise BadPayload("duplicated consumer")
        c = g.consumers[cname] = Consumer(cname, r.millis())
        for _ in range(r.length()):
            key = key_of(_raw_id(r.raw(16)))
            if key not in times or key in owners:
                raise BadPayload("consumer PEL entry not in its group's PEL, or owned twice")
            owners[key] = cname
            c.pel.add(key)
    if len(owners) != len(times):
        raise BadPayload("group PEL entry without a consumer")
    # In the group PEL's order (IDs), which CLAIM's ties of delivery time then follow.
    g.pel.load({key: PendingEntry(owners[key], *t) for key, t in times.items()})
    return g


def load_stream(
    payload: bytes,
    node_max_entries: int,
    node_max_bytes: int,
    expanded: int = 0,
    node_entries: int = 0,
) -> Stream:
    """The stream a DUMP payload holds (RESTORE). Raises ``rdbio.PayloadVersionError`` for a
    footer RESTORE refuses, ``NotAStream`` for another key type, ``BadPayload`` otherwise;
    ``rdbio.TooLarge`` when it would take more than ``expanded`` bytes with its LZF strings
    expanded (about its size as DUMP writes it), or when a node holds more than
    ``node_entries`` entries, deleted ones included (0: no bound). Those two bound the
    decoding work, which walks every element as Redis's deep sanitization does: a small LZF
    payload can expand to millions of entries."""
    r = Reader(unseal(payload), expanded, len(payload))
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
        node = _node(master, listpacks[master], shared, node_entries)
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


def node_listpack(node: Node) -> bytes:
    """A node's entries as the listpack redis-server would hold for them."""
    el = lpcodec.element
    names = node.master_fields
    parts = [el(node.live), el(node.ndeleted), el(len(names)), *map(el, names), el(0)]
    if node.starts is None and not node.wide:
        return lpcodec.encode(parts + _uniform_entries(node))
    master = node.master
    for i, sid in enumerate(node.ids()):
        fields = node.fields_at(i)
        same = not (node.starts is not None and node.mixed >> i & 1)
        flags = (_SAMEFIELDS if same else 0) | (_DELETED if node.is_deleted(i) else 0)
        parts += (el(flags), el(i64(sid.ms - master.ms)), el(i64(sid.seq - master.seq)))
        nf = len(fields) // 2
        if same:
            parts += map(el, fields[1::2])
            parts.append(el(nf + 3))
        else:
            parts.append(el(nf))
            parts += map(el, fields)
            parts.append(el(2 * nf + 4))
    return lpcodec.encode(parts)


def _uniform_entries(node: Node) -> list[bytes]:
    """The entries of a node whose entries all have the master's fields, deltas within
    int64 (most nodes): every value encoded in one pass over the node's strings, the
    flags and lp-count shared, no field tuple built."""
    el = lpcodec.element
    nm = len(node.master_fields)
    n = len(node)
    values = list(map(el, node.strings(0, n * nm)))
    same, dead, tail = el(_SAMEFIELDS), el(_SAMEFIELDS | _DELETED), el(nm + 3)
    deleted = node.deleted
    parts: list[bytes] = []
    for i, (dms, dseq) in enumerate(zip(node.dms, node.dseq, strict=True)):
        flags = dead if deleted is not None and deleted[i >> 3] >> (i & 7) & 1 else same
        parts += (flags, el(dms), el(dseq), *values[i * nm : i * nm + nm], tail)
    return parts


def _name(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _floor(s: Stream) -> int:
    """The bytes a DUMP of ``s`` takes at least, in O(nodes + groups + consumers): the
    nodes' listpacks (their modelled sizes are exact, see ``listpack``), 25 bytes per group
    PEL entry (ID, time, count), 16 per consumer PEL entry."""
    size = sum(node.lp_bytes for node in s.nodes)
    for g in s.groups.values():
        size += 25 * len(g.pel) + sum(16 * len(c.pel) + 10 for c in g.consumers.values())
    return size


def dump_stream(s: Stream, limit: int = 0) -> bytes:
    """A DUMP payload of ``s`` that redis-server 7.0 RESTOREs: type STREAM_LISTPACKS_2, RDB
    version 10, CRC64; strings uncompressed. Groups and consumers in byte order, as
    Redis's rax iterates them. ``rdbio.TooLarge`` when the payload would pass ``limit``
    bytes (0: no bound): told at once when what it takes at least passes it (``_floor``),
    else found while encoding, after each node and each consumer, so the work is bounded by
    about ``limit`` either way."""
    if limit and _floor(s) > limit:
        raise TooLarge("dump", limit)
    w = Writer()
    w.raw(bytes((RDB_TYPE_STREAM_LISTPACKS_2,)))
    w.length(len(s.nodes))
    for node in s.nodes:
        w.string(struct.pack(">QQ", node.master.ms, node.master.seq))
        w.string(node_listpack(node))
        if limit and w.size > limit:
            raise TooLarge("dump", limit)
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
        w.length(_UNKNOWN_ENTRIES_READ if g.entries_read is None else u64(g.entries_read))
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
            if limit and w.size > limit:
                raise TooLarge("dump", limit)
        if limit and w.size > limit:
            raise TooLarge("dump", limit)
    payload = seal(w.getvalue())
    if limit and len(payload) > limit:
        raise TooLarge("dump", limit)
    return payload
