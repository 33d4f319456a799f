"""The journal of effects, replay, and snapshots: the engine's side of durability.

A write command records what it *did* — the ID XADD generated, the entries XREADGROUP
delivered to whom and when, the owner, time and count XCLAIM set — as a list of effects
(plain JSON values). Replaying records in order rebuilds the same state without reading the
clock or re-deciding anything. Storage (app/storage) keeps the records and snapshots; the
engine knows nothing of where they go.

Effects, one list each (IDs as "ms-seq" strings):

    ["new", key]                                   create an empty stream
    ["del", key]                                   delete a key
    ["flush"]                                      delete every key
    ["add", key, id, [f1, v1, ...]]                append an entry
    ["xdel", key, [id, ...]]                       delete entries (XDEL)
    ["trim", key, strategy, maxlen, minid, approx, limit]   trim (a pure function of state)
    ["setid", key, last_id, entries_added, max_deleted_id]  XSETID (nulls: unchanged)
    ["gcreate", key, group, last_id, entries_read]
    ["gset", key, group, last_id, entries_read]
    ["gdestroy", key, group]
    ["consumer", key, group, name, seen_time_ms]   create or refresh a consumer
    ["cdel", key, group, name]
    ["pel", key, group, id, consumer, delivered_at_ms, delivery_count]  set a pending entry
    ["ack", key, group, [id, ...]]                 remove pending entries
    ["rename", key, new_key]                       RENAME: the stream, groups and all, moves
    ["config", parameter, value]                   CONFIG SET of a node limit (no key)

Replay refuses, with ``ReplayError``, any effect that does not fit the state it meets: an
entry ID not greater than its stream's last ID (XADD's own rule, ``id_follows``), a stream
created that exists or deleted that does not, a group created twice or destroyed while
absent, a consumer removed or an entry deleted or acknowledged that is not there. A command
records each of those only when it happened, so on a sound journal none can occur; on a
damaged or edited one, applying them anyway would silently build a state that differs from
the one acknowledged (entries out of order, a group reset, counters off).
"""

from __future__ import annotations

import json
import math
import re
import sys
from array import array
from binascii import a2b_base64, b2a_base64
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Protocol

import orjson

from app.engine.groups import Consumer, ConsumerGroup, PendingEntry
from app.engine.ids import StreamID
from app.engine.keyspace import Keyspace, StreamConfig
from app.engine.stream import Node, Stream, TrimSpec, TrimStrategy, id_follows

Effect = list[Any]
SNAPSHOT_FORMAT = 2


class JournalSink(Protocol):
    """Receives each write command's effects, synchronously and in order."""

    def append(self, record: list[Effect]) -> None: ...


class ReplayError(Exception):
    """A journal record or snapshot the engine cannot apply: recovery must stop."""


def sid_text(sid: StreamID) -> str:
    return f"{sid.ms}-{sid.seq}"


def _sid(text: Any) -> StreamID:
    if not isinstance(text, str):
        raise ReplayError(f"expected an ID string, got {text!r}")
    ms, _, seq = text.partition("-")
    try:
        return StreamID(int(ms), int(seq))
    except ValueError as e:
        raise ReplayError(f"malformed ID {text!r}") from e


def encode_json(value: Any) -> bytes:
    """orjson, or for strings holding bytes that are not UTF-8 (kept as lone surrogates
    U+DC80..U+DCFF, PEP 383) the standard library's JSON with each such byte written as the
    escape ``\\udcNN``: the one JSON form of every surface, lossless and still strict UTF-8.
    ``decode_json`` reads both.

    orjson refuses lone surrogates, so the slower path runs only for such data.
    """
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        # A lone surrogate can only stand inside a JSON string here: its escape means the same.
        return _SURROGATE.sub(_escape, text).encode()


_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match[0]):04x}"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"number out of range: {text}")
    return number


def decode_json(data: bytes) -> Any:
    """orjson, or the standard library's JSON for text orjson refuses only for its ``\\udcNN``
    escapes (it takes nothing else orjson refuses: no NaN, no infinite number). Raises
    ValueError for anything that is no such JSON (damaged data, text that is not UTF-8)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data, parse_constant=_no_constant, parse_float=_finite)


# -- recording ------------------------------------------------------------------------------


def stamp_keys(record: list[Effect], stamps: dict[str, int], seq: int) -> bool:
    """Set ``stamps[key] = seq`` for every key the record changed (every effect but ``flush``
    and ``config`` names its key second, ``rename`` its second key third); False when it
    changed every key (a CONFIG SET changes how every stream grows). Storage uses it to hold
    back exactly the replies that could show the record before it is durable. It allocates
    nothing: it runs for every write, and per-record objects cost the cyclic GC more than
    the work itself."""
    for effect in record:
        op = effect[0]
        if op == "flush" or op == "config":
            return False
        stamps[effect[1]] = seq
        if op == "rename":
            stamps[effect[2]] = seq
    return True


def group_state(key: str, g: ConsumerGroup) -> Effect:
    return ["gset", key, g.name, sid_text(g.last_id), g.entries_read]


def consumer_state(key: str, g: ConsumerGroup, c: Consumer) -> Effect:
    return ["consumer", key, g.name, c.name, c.seen_time_ms]


def pending_state(key: str, g: ConsumerGroup, sid: StreamID, p: PendingEntry) -> Effect:
    return ["pel", key, g.name, sid_text(sid), p.consumer, p.delivered_at_ms, p.delivery_count]


# -- replay ---------------------------------------------------------------------------------


def apply_record(ks: Keyspace, record: list[Effect]) -> None:
    """Apply one record's effects; raises ReplayError for anything unknown or malformed."""
    if not isinstance(record, list):
        raise ReplayError(
            f"a journal record must be a list of effects, got {type(record).__name__}"
        )
    for effect in record:
        try:
            _apply(ks, effect)
        except ReplayError:
            raise
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
            raise ReplayError(f"cannot apply effect {effect!r}: {e!r}") from e


def _stream(ks: Keyspace, key: str) -> Stream:
    s = ks.get(key)
    if s is None:
        raise ReplayError(f"effect on missing stream {key!r}")
    return s


def _group(ks: Keyspace, key: str, name: str) -> ConsumerGroup:
    g = _stream(ks, key).groups.get(name)
    if g is None:
        raise ReplayError(f"effect on missing group {name!r} of {key!r}")
    return g


def _apply(ks: Keyspace, e: Effect) -> None:
    op = e[0]
    if op == "add":
        s = _stream(ks, e[1])
        sid = _sid(e[2])
        if not id_follows(s.last_id, sid):
            raise ReplayError(
                f"entry {e[2]} of {e[1]!r} is not greater than the stream's last ID"
                f" {sid_text(s.last_id)}: IDs would go backwards"
            )
        s.append(sid, tuple(e[3]))
    elif op == "pel":
        g = _group(ks, e[1], e[2])
        sid = _sid(e[3])
        owner = e[4]
        if owner is None:  # the entry keeps the owner it has, if any
            p = g.pending(sid)
            owner = p.consumer if p is not None else None
        c = None
        if owner is not None:
            c = g.consumers.get(owner)
            if c is None:
                raise ReplayError(f"pending entry for missing consumer {owner!r}")
        if not isinstance(e[5], int) or not isinstance(e[6], int):
            raise ReplayError(f"pending entry {e[3]} with a time or count that is no integer")
        g.set_pending(sid, c, e[5], e[6])
    elif op == "ack":
        g = _group(ks, e[1], e[2])
        for text in e[3]:
            if not g.ack(_sid(text)):
                raise ReplayError(f"ack of {text} in group {e[2]!r} of {e[1]!r}: not pending")
    elif op == "gset":
        g = _group(ks, e[1], e[2])
        g.last_id, g.entries_read = _sid(e[3]), e[4]
    elif op == "consumer":
        g = _group(ks, e[1], e[2])
        c = g.consumers.get(e[3])
        if c is None:
            g.consumers[e[3]] = Consumer(e[3], e[4])
        else:
            c.seen_time_ms = e[4]
    elif op == "new":
        if e[1] in ks.streams:
            raise ReplayError(f"stream {e[1]!r} created again while it exists")
        ks.create(e[1])
    elif op == "del":
        if ks.streams.pop(e[1], None) is None:
            raise ReplayError(f"deletion of missing stream {e[1]!r}")
    elif op == "flush":
        ks.streams.clear()
    elif op == "rename":
        if e[1] not in ks.streams:
            raise ReplayError(f"rename of missing stream {e[1]!r}")
        ks.rename(e[1], e[2])
    elif op == "config":
        _configure(ks, e[1], e[2])
    elif op == "xdel":
        s = _stream(ks, e[1])
        for text in e[2]:
            sid = _sid(text)
            if not s.delete(sid):
                raise ReplayError(f"deletion of missing entry {text} of {e[1]!r}")
            if sid > s.max_deleted_id:
                s.max_deleted_id = sid
    elif op == "trim":
        s = _stream(ks, e[1])
        s.trim(TrimSpec(TrimStrategy(e[2]), e[3], _sid(e[4]), bool(e[5]), e[6]))
    elif op == "setid":
        s = _stream(ks, e[1])
        s.last_id = _sid(e[2])
        if e[3] is not None:
            s.entries_added = e[3]
        if e[4] is not None:
            s.max_deleted_id = _sid(e[4])
    elif op == "gcreate":
        s = _stream(ks, e[1])
        if e[2] in s.groups:
            raise ReplayError(f"group {e[2]!r} of {e[1]!r} created again while it exists")
        s.groups[e[2]] = ConsumerGroup(e[2], _sid(e[3]), e[4])
    elif op == "gdestroy":
        if _stream(ks, e[1]).groups.pop(e[2], None) is None:
            raise ReplayError(f"destruction of missing group {e[2]!r} of {e[1]!r}")
    elif op == "cdel":
        g = _group(ks, e[1], e[2])
        if g.remove_consumer(e[3]) is None:
            raise ReplayError(f"deletion of missing consumer {e[3]!r} in group {e[2]!r}")
    else:
        raise ReplayError(f"unknown effect {op!r}")


def _configure(ks: Keyspace, name: Any, value: Any) -> None:
    if name not in ("stream-node-max-entries", "stream-node-max-bytes"):
        raise ReplayError(f"CONFIG SET of unknown parameter {name!r}")
    if type(value) is not int or value < 0:
        raise ReplayError(f"CONFIG SET {name} to {value!r}: not a size")
    ks.configure({name: value})


# -- snapshots ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeView:
    """A node's buffers as they were when the view was taken. Entries are only ever added at
    a node's end and the packed prefix never changes (a widened array is a new object), so
    the view keeps the buffers and how much of each belongs to it."""

    master: StreamID
    master_fields: tuple[str, ...]
    size: int  # entries
    dms: array[int]
    dseq: array[int]
    wide: bool
    strs: str
    sep: str | None
    ends: array[int]
    starts: array[int] | None
    mixed: int
    deleted: bytes | None
    live: int
    ndeleted: int
    lp_bytes: int
    ordered: bool


@dataclass(frozen=True, slots=True)
class StreamView:
    key: str
    last_id: StreamID
    entries_added: int
    max_deleted_id: StreamID
    nodes: list[NodeView]
    groups: list[Any]  # plain values, copied


@dataclass(frozen=True, slots=True)
class SnapshotView:
    """A consistent copy taken on the event loop in O(nodes + pending entries)."""

    config: StreamConfig
    streams: list[StreamView]
    config_set: dict[str, int]  # what CONFIG SET changed (restored; the rest is the start's)


def _node_view(n: Node) -> NodeView:
    return NodeView(
        n.master, n.master_fields, len(n), n.dms, n.dseq, n.wide, n.strs, n.sep, n.ends, n.starts,
        n.mixed, None if n.deleted is None else bytes(n.deleted), n.live, n.ndeleted,
        n.lp_bytes, n.ordered,
    )  # fmt: skip


def snapshot_view(ks: Keyspace) -> SnapshotView:
    streams = []
    for key, s in ks.streams.items():
        nodes = [_node_view(n) for n in s.nodes]
        streams.append(
            StreamView(key, s.last_id, s.entries_added, s.max_deleted_id, nodes, group_views(s))
        )
    config = StreamConfig(ks.config.node_max_entries, ks.config.node_max_bytes)
    return SnapshotView(config, streams, dict(ks.config_set))


def _pack(values: array[int], n: int) -> list[str]:
    """An array's first ``n`` elements as [typecode, base64 of little-endian bytes]."""
    part = values[:n]
    if sys.byteorder == "big":
        part.byteswap()
    return [part.typecode, b2a_base64(part.tobytes(), newline=False).decode("ascii")]


def _unpack(packed: list[str]) -> array[int]:
    code, data = packed
    if code not in _ARRAY_CODES:
        raise ReplayError(f"malformed snapshot: array type {code!r}")
    values = array(code)
    values.frombytes(a2b_base64(data))
    if sys.byteorder == "big":
        values.byteswap()
    return values


_ARRAY_CODES = frozenset("bhiqHIQ")


_SEP = "\x1f"  # the separator nodes use unless their strings hold it
_SEP_STORED = "\xff"


def _strs(strs: str, sep: str | None) -> dict[str, Any]:
    """A node's strings for the snapshot. JSON spells the control character that nodes use
    as separator in 6 bytes (\\u001f): when the node holds no U+00FF, that character (2 bytes
    of UTF-8) stands in for it in the snapshot, and loading swaps it back."""
    if sep == _SEP and _SEP_STORED not in strs:
        return {"strs": strs.replace(_SEP, _SEP_STORED), "sep": sep, "swapped": True}
    return {"strs": strs, "sep": sep, "swapped": False}


def _encode_node(nv: NodeView) -> dict[str, Any]:
    nstrs = nv.size * len(nv.master_fields) if nv.starts is None else nv.starts[nv.size]
    return {
        "master": [nv.master.ms, nv.master.seq],
        "master_fields": nv.master_fields,
        "dms": _pack(nv.dms, nv.size),
        "dseq": _pack(nv.dseq, nv.size),
        "wide": nv.wide,
        **_strs(nv.strs[: nv.ends[nstrs]], nv.sep),
        "ends": _pack(nv.ends, nstrs + 1),
        "starts": None if nv.starts is None else _pack(nv.starts, nv.size + 1),
        "mixed": f"{nv.mixed & ((1 << nv.size) - 1):x}",
        "deleted": None if nv.deleted is None else nv.deleted[: (nv.size + 7) >> 3].hex(),
        "live": nv.live,
        "ndeleted": nv.ndeleted,
        "lp_bytes": nv.lp_bytes,
        "ordered": nv.ordered,
    }


def encode_snapshot(view: SnapshotView) -> bytes:
    """Serialize a view; safe in a worker thread while the loop keeps mutating the store.

    Format 2 stores each node's packed buffers as they are (arrays as base64 of their
    little-endian bytes), so loading a node is a few buffer copies, not one object per entry.
    """
    streams = [
        {
            "key": sv.key,
            "last_id": sid_text(sv.last_id),
            "entries_added": sv.entries_added,
            "max_deleted_id": sid_text(sv.max_deleted_id),
            "nodes": [_encode_node(nv) for nv in sv.nodes],
            "groups": sv.groups,
        }
        for sv in view.streams
    ]
    doc = {
        "format": SNAPSHOT_FORMAT,
        "config": [view.config.node_max_entries, view.config.node_max_bytes],
        "streams": streams,
    }
    if view.config_set:
        doc["config_set"] = view.config_set
    return encode_json(doc)


def _decode_node(nd: dict[str, Any]) -> Node:
    ms, seq = nd["master"]
    names = tuple(nd["master_fields"])
    node = Node.__new__(Node)
    node.master = StreamID(ms, seq)
    node.master_fields = names
    node.dms, node.dseq = _unpack(nd["dms"]), _unpack(nd["dseq"])
    node.wide = bool(nd["wide"])
    node.strs = nd["strs"]
    node.sep = nd["sep"]
    if nd["swapped"] and isinstance(node.strs, str):
        node.strs = node.strs.replace(_SEP_STORED, _SEP)
    node.ends = _unpack(nd["ends"])
    node.starts = None if nd["starts"] is None else _unpack(nd["starts"])
    node.mixed = int(nd["mixed"], 16)
    node.deleted = None if nd["deleted"] is None else bytearray.fromhex(nd["deleted"])
    node.live, node.ndeleted, node.lp_bytes = nd["live"], nd["ndeleted"], nd["lp_bytes"]
    node.ordered = bool(nd["ordered"])
    n = len(node.dms)
    nstrs = n * len(names) if node.starts is None else node.starts[-1]
    if (
        not isinstance(node.strs, str)
        or not (node.sep is None or (isinstance(node.sep, str) and len(node.sep) == 1))
        or len(node.dseq) != n
        or (node.starts is not None and len(node.starts) != n + 1)
        or len(node.ends) != nstrs + 1
        or node.ends[-1] != len(node.strs)
        or node.live + node.ndeleted != n
        or not node.live
    ):
        raise ReplayError(f"malformed snapshot: node {ms}-{seq} is inconsistent")
    return node


def _decode_node_v1(nd: dict[str, Any]) -> Node:
    """A node of a format 1 snapshot (lists of IDs and of field tuples)."""
    flat = nd["ids"]
    ids = [StreamID(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]
    node = Node(ids[0], tuple(nd["fields"][0]))
    node.master_fields = tuple(nd["master_fields"])
    for sid, fields in zip(ids, nd["fields"], strict=True):
        fields = tuple(fields)
        node.put(sid, fields, fields[0::2] == node.master_fields)
    for i, flag in enumerate(bytes.fromhex(nd["deleted"])):
        if flag:
            node.mark_deleted(i)
    node.live, node.ndeleted, node.lp_bytes = nd["live"], nd["ndeleted"], nd["lp_bytes"]
    node.ordered = all(a < b for a, b in pairwise(ids))
    return node


def decode_snapshot(data: bytes, ks: Keyspace) -> None:
    """Load a snapshot into an empty keyspace, nodes exactly as they were (formats 1, 2)."""
    try:
        doc = decode_json(data)
    except ValueError as e:
        raise ReplayError(f"snapshot is not valid JSON: {e}") from e
    if not isinstance(doc, dict) or doc.get("format") not in (1, SNAPSHOT_FORMAT):
        raise ReplayError("unknown snapshot format")
    decode_node = _decode_node if doc["format"] == SNAPSHOT_FORMAT else _decode_node_v1
    try:
        # First: streams created below take the limits CONFIG SET gave.
        for name, value in doc.get("config_set", {}).items():
            _configure(ks, name, value)
        for sd in doc["streams"]:
            s = ks.create(sd["key"])
            s.last_id = _sid(sd["last_id"])
            s.entries_added = sd["entries_added"]
            s.max_deleted_id = _sid(sd["max_deleted_id"])
            length = 0
            for nd in sd["nodes"]:
                node = decode_node(nd)
                if s.nodes and s.nodes[-1].master_fields == node.master_fields:
                    node.master_fields = s.nodes[-1].master_fields
                s.nodes.append(node)
                s.firsts.append(node.master)
                length += node.live
            s.length = length
            load_groups(s, sd["groups"])
    except (KeyError, IndexError, TypeError, ValueError, OverflowError) as e:
        raise ReplayError(f"malformed snapshot: {e!r}") from e


def group_views(s: Stream) -> list[Any]:
    """A stream's groups as plain values (name, last ID, entries read, consumers, PEL)."""
    groups = []
    for g in s.groups.values():
        pel = [
            [sid.ms, sid.seq, p.consumer, p.delivered_at_ms, p.delivery_count]
            for sid, p in g.pel.items()
        ]
        consumers = [[c.name, c.seen_time_ms] for c in g.consumers.values()]
        groups.append([g.name, sid_text(g.last_id), g.entries_read, consumers, pel])
    return groups


def load_groups(s: Stream, groups: list[Any]) -> None:
    for name, last_id, entries_read, consumers, pel in groups:
        g = s.groups[name] = ConsumerGroup(name, _sid(last_id), entries_read)
        for cname, seen in consumers:
            g.consumers[cname] = Consumer(cname, seen)
        entries: dict[int, PendingEntry] = {}
        last = None
        for ms, seq, owner, delivered, count in pel:
            key = ms << 64 | seq
            if owner is not None:
                g.consumers[owner].pel.add(key)
            pending = PendingEntry(owner, delivered, count)
            if pending != last:  # entries delivered together share one value, as they did
                last = pending
            entries[key] = last
        g.pel.load(entries)


def restore(ks: Keyspace, snapshot: bytes | None, records: Iterable[list[Effect]]) -> int:
    """Rebuild ``ks`` (empty) from a snapshot and the records after it; returns how many."""
    if snapshot is not None:
        decode_snapshot(snapshot, ks)
    n = 0
    for record in records:
        apply_record(ks, record)
        n += 1
    return n
