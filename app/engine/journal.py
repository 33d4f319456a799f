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
    ["adds", key, [id, ...], [[f1, v1, ...], ...]] append a batch of entries (bulk XADD)
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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from app.engine.groups import Consumer, ConsumerGroup, PendingEntry
from app.engine.ids import StreamID
from app.engine.keyspace import Keyspace, StreamConfig
from app.engine.stream import Fields, Node, Stream, TrimSpec, TrimStrategy, id_follows

Effect = list[Any]
SNAPSHOT_FORMAT = 1


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
    names its key second); False when it changed every key. Storage uses it to hold back
    exactly the replies that could show the record before it is durable. It allocates
    nothing: it runs for every write, and per-record objects cost the cyclic GC more than
    the work itself."""
    for effect in record:
        if effect[0] == "flush":
            return False
        stamps[effect[1]] = seq
    return True


def adds_effect(key: str, ids: Sequence[StreamID], rows: Sequence[Fields]) -> Effect:
    """A batch of appends to one stream (``commands.bulk``) as one effect: the IDs in order
    and each entry's fields (tuples, which the encoder writes as arrays, copied nowhere)."""
    return ["adds", key, [f"{sid.ms}-{sid.seq}" for sid in ids], rows]


def group_state(key: str, g: ConsumerGroup) -> Effect:
    return ["gset", key, g.name, sid_text(g.last_id), g.entries_read]


def consumer_state(key: str, g: ConsumerGroup, c: Consumer) -> Effect:
    return ["consumer", key, g.name, c.name, c.seen_time_ms]


def pending_state(key: str, g: ConsumerGroup, sid: StreamID, p: PendingEntry) -> Effect:
    owner = p.consumer.name if p.consumer is not None else None
    return ["pel", key, g.name, sid_text(sid), owner, p.delivered_at_ms, p.delivery_count]


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
    elif op == "adds":
        s = _stream(ks, e[1])
        ids = [_sid(text) for text in e[2]]
        rows = e[3]
        if not isinstance(rows, list) or len(rows) != len(ids) or not ids:
            raise ReplayError(f"a batch of {len(ids)} IDs with {len(rows)} entries")
        last = s.last_id
        for sid in ids:
            if not id_follows(last, sid):
                raise ReplayError(
                    f"entry {sid_text(sid)} of {e[1]!r} is not greater than the stream's last"
                    f" ID {sid_text(last)}: IDs would go backwards"
                )
            last = sid
        s.append_many(ids, [tuple(f) for f in rows])
    elif op == "pel":
        g = _group(ks, e[1], e[2])
        sid = _sid(e[3])
        p = g.pel.get(sid)
        if p is None:
            p = g.pel[sid] = PendingEntry(None, e[5], e[6])
        else:
            p.delivered_at_ms, p.delivery_count = e[5], e[6]
        if e[4] is not None:
            c = g.consumers.get(e[4])
            if c is None:
                raise ReplayError(f"pending entry for missing consumer {e[4]!r}")
            g.assign(sid, p, c)
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
        gone = g.consumers.pop(e[3], None)
        if gone is None:
            raise ReplayError(f"deletion of missing consumer {e[3]!r} in group {e[2]!r}")
        for sid in gone.pel:
            g.pel.pop(sid, None)
    else:
        raise ReplayError(f"unknown effect {op!r}")


# -- snapshots ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeView:
    node: Node
    size: int  # entries in the node when the view was taken (nodes only grow at the end)
    deleted: bytes
    live: int
    ndeleted: int
    lp_bytes: int


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


def snapshot_view(ks: Keyspace) -> SnapshotView:
    streams = []
    for key, s in ks.streams.items():
        nodes = [
            NodeView(n, len(n.ids), bytes(n.deleted), n.live, n.ndeleted, n.lp_bytes)
            for n in s.nodes
        ]
        groups = []
        for g in s.groups.values():
            pel = [
                [sid.ms, sid.seq, p.consumer.name if p.consumer else None, p.delivered_at_ms,
                 p.delivery_count]
                for sid, p in g.pel.items()
            ]  # fmt: skip
            consumers = [[c.name, c.seen_time_ms] for c in g.consumers.values()]
            groups.append([g.name, sid_text(g.last_id), g.entries_read, consumers, pel])
        streams.append(StreamView(key, s.last_id, s.entries_added, s.max_deleted_id, nodes, groups))
    return SnapshotView(StreamConfig(ks.config.node_max_entries, ks.config.node_max_bytes), streams)


def encode_snapshot(view: SnapshotView) -> bytes:
    """Serialize a view; safe in a worker thread while the loop keeps mutating the store."""
    streams = []
    for sv in view.streams:
        nodes = []
        for nv in sv.nodes:
            ids = nv.node.ids[: nv.size]
            flat: list[int] = []
            for sid in ids:
                flat.append(sid.ms)
                flat.append(sid.seq)
            nodes.append(
                {
                    "ids": flat,
                    "fields": nv.node.fields[: nv.size],
                    "deleted": nv.deleted.hex(),
                    "live": nv.live,
                    "ndeleted": nv.ndeleted,
                    "lp_bytes": nv.lp_bytes,
                    "master_fields": nv.node.master_fields,
                }
            )
        streams.append(
            {
                "key": sv.key,
                "last_id": sid_text(sv.last_id),
                "entries_added": sv.entries_added,
                "max_deleted_id": sid_text(sv.max_deleted_id),
                "nodes": nodes,
                "groups": sv.groups,
            }
        )
    doc = {
        "format": SNAPSHOT_FORMAT,
        "config": [view.config.node_max_entries, view.config.node_max_bytes],
        "streams": streams,
    }
    return encode_json(doc)


def decode_snapshot(data: bytes, ks: Keyspace) -> None:
    """Load a snapshot into an empty keyspace, nodes exactly as they were."""
    try:
        doc = decode_json(data)
    except ValueError as e:
        raise ReplayError(f"snapshot is not valid JSON: {e}") from e
    if not isinstance(doc, dict) or doc.get("format") != SNAPSHOT_FORMAT:
        raise ReplayError("unknown snapshot format")
    try:
        for sd in doc["streams"]:
            s = ks.create(sd["key"])
            s.last_id = _sid(sd["last_id"])
            s.entries_added = sd["entries_added"]
            s.max_deleted_id = _sid(sd["max_deleted_id"])
            length = 0
            for nd in sd["nodes"]:
                flat = nd["ids"]
                node = Node.__new__(Node)
                node.ids = [StreamID(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]
                node.fields = [tuple(f) for f in nd["fields"]]
                node.deleted = bytearray.fromhex(nd["deleted"])
                node.live, node.ndeleted, node.lp_bytes = nd["live"], nd["ndeleted"], nd["lp_bytes"]
                node.master_fields = tuple(nd["master_fields"])
                node.ordered = all(a < b for a, b in zip(node.ids, node.ids[1:], strict=False))
                s.nodes.append(node)
                s.firsts.append(node.ids[0])
                length += node.live
            s.length = length
            for name, last_id, entries_read, consumers, pel in sd["groups"]:
                g = s.groups[name] = ConsumerGroup(name, _sid(last_id), entries_read)
                for cname, seen in consumers:
                    g.consumers[cname] = Consumer(cname, seen)
                for ms, seq, owner, delivered, count in pel:
                    sid = StreamID(ms, seq)
                    c = g.consumers[owner] if owner is not None else None
                    p = g.pel[sid] = PendingEntry(c, delivered, count)
                    if c is not None:
                        c.pel[sid] = p
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise ReplayError(f"malformed snapshot: {e!r}") from e


def restore(ks: Keyspace, snapshot: bytes | None, records: Iterable[list[Effect]]) -> int:
    """Rebuild ``ks`` (empty) from a snapshot and the records after it; returns how many."""
    if snapshot is not None:
        decode_snapshot(snapshot, ks)
    n = 0
    for record in records:
        apply_record(ks, record)
        n += 1
    return n
