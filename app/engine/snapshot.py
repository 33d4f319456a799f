"""Snapshots: a consistent view of the keyspace taken on the loop, encoded off it.

``snapshot_view`` copies what a snapshot needs in O(nodes + pending entries) on the event
loop; ``encode_snapshot`` serializes that view in a worker thread while the loop keeps
mutating the store (nodes only grow at their end, so a node and its size are enough).
``decode_snapshot`` loads one into an empty keyspace with every node exactly as it was, so
``~`` trimming after a restart removes what it would have removed before.
"""

from __future__ import annotations

import sys
from array import array
from binascii import a2b_base64, b2a_base64
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from app.engine import config
from app.engine.consumer_groups import Consumer, ConsumerGroup, PendingEntry
from app.engine.delivery import DeliveryPolicy, Retention, Webhook
from app.engine.effects import ReplayError
from app.engine.errors import CommandError
from app.engine.idmp import Idmp
from app.engine.ids import StreamID
from app.engine.json_codec import decode_json, encode_json
from app.engine.keyspace import Keyspace, StreamConfig
from app.engine.pel import MASK64, key_of, sid_of
from app.engine.record_fields import i64, put_i64, put_u64, sid_from_text, sid_text, u64
from app.engine.responses import Stored
from app.engine.stream import Node, Stream

SNAPSHOT_FORMAT = 6
# 3: a group may carry a sixth item, its released (XNACK) IDs in FIFO order; nodes as in 2.
# 4: a stream may carry "idmp", its IDMP state (Redis 8.6: ``idmp_view``); the document may
#    carry "responses", the kept responses of Idempotency-Key (``app.engine.responses``).
# 5: a group with a delivery policy carries it as a seventh item (the sixth, its released
#    entries, then [id, consumer that held it] pairs); one with webhooks carries them as an
#    eighth, {name: webhook}, its seventh then null when it has no policy; the document may
#    carry "retention", [[stream name, retention], ...] (``app.engine.delivery``).
# 6: a stream's "idmp" may carry a sixth item, the producers evicted past the cap, and an iid
#    a fourth, its stamp when that is not its ID's millisecond (``idmp_view``).


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
    idmp: list[Any] | None = None  # plain values, copied (``idmp_view``)


@dataclass(frozen=True, slots=True)
class SnapshotView:
    """A consistent copy taken on the event loop in O(nodes + pending entries)."""

    config: StreamConfig
    streams: list[StreamView]
    config_set: dict[str, int]  # what CONFIG SET changed (restored; the rest is the start's)
    # Idempotent requests' kept responses, oldest first: (name, fingerprint, response, expiry).
    responses: list[tuple[str, bytes, bytes, int]] = field(default_factory=list)
    retention: list[tuple[str, dict[str, int | str]]] = field(default_factory=list)


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
            StreamView(
                key,
                s.last_id,
                s.entries_added,
                s.max_deleted_id,
                nodes,
                group_views(s),
                None if s.idmp is None else idmp_view(s.idmp),
            )
        )
    config = StreamConfig(ks.config.node_max_entries, ks.config.node_max_bytes)
    responses = [
        (name, r.fingerprint, r.response, r.expires_ms) for name, r in ks.responses.entries.items()
    ]
    retention = [(name, r.as_json()) for name, r in ks.retention.items()]
    return SnapshotView(config, streams, dict(ks.config_set), responses, retention)


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
        "master": [put_u64(nv.master.ms, "a node's ID"), put_u64(nv.master.seq, "a node's ID")],
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
    streams = []
    for sv in view.streams:
        sd: dict[str, Any] = {
            "key": sv.key,
            "last_id": sid_text(sv.last_id),
            "entries_added": put_u64(sv.entries_added, "entries_added"),
            "max_deleted_id": sid_text(sv.max_deleted_id),
            "nodes": [_encode_node(nv) for nv in sv.nodes],
            "groups": _checked_groups(sv.groups),
        }
        if sv.idmp is not None:
            sd["idmp"] = sv.idmp
        streams.append(sd)
    released = any(len(g) > 5 for sv in view.streams for g in sv.groups)
    policy = view.retention or any(len(g) > 6 for sv in view.streams for g in sv.groups)
    idmp = any(sv.idmp is not None for sv in view.streams)
    idmp6 = any(sv.idmp is not None and _idmp_format_6(sv.idmp) for sv in view.streams)
    doc: dict[str, Any] = {
        # The oldest format that can hold the state: 2, then 3 with released (XNACK)
        # entries, then 4 with IDMP state or kept responses (Idempotency-Key), 5 with
        # delivery policies, webhooks or retention, 6 with evicted IDMP producers or an IDMP
        # stamp that is not its ID's millisecond, so an older
        # xstreams still loads a snapshot without the newer state and a database that never
        # used the newer commands can move back a version.
        "format": SNAPSHOT_FORMAT
        if idmp6
        else 5
        if policy
        else 4
        if idmp or view.responses
        else 3
        if released
        else 2,
        "config": [view.config.node_max_entries, view.config.node_max_bytes],
        "streams": streams,
    }
    if view.config_set:
        doc["config_set"] = view.config_set
    if view.retention:
        doc["retention"] = [[name, r] for name, r in view.retention]
    if view.responses:
        doc["responses"] = [
            [name, _b64(fingerprint), _b64(response), expires_ms]
            for name, fingerprint, response, expires_ms in view.responses
        ]
    return encode_json(doc)


def _b64(data: bytes) -> str:
    return b2a_base64(data, newline=False).decode("ascii")


def _decode_node(nd: dict[str, Any]) -> Node:
    ms, seq = nd["master"]
    ms, seq = u64(ms), u64(seq)
    names = tuple(nd["master_fields"])
    # Constructed, not Node.__new__: a compiled (mypyc) class runs __init__ from __new__.
    node = Node(StreamID(ms, seq), ())
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
    node.live, node.ndeleted, node.lp_bytes = (
        u64(nd["live"]),
        u64(nd["ndeleted"]),
        u64(nd["lp_bytes"]),
    )
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
        or not n  # (no live entry is fine: a trim can leave only deleted ones, as in Redis)
    ):
        raise ReplayError(f"malformed snapshot: node {ms}-{seq} is inconsistent")
    return node


def _decode_node_v1(nd: dict[str, Any]) -> Node:
    """A node of a format 1 snapshot (lists of IDs and of field tuples)."""
    flat = nd["ids"]
    ids = [StreamID(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]
    rows = [tuple(fields) for fields in nd["fields"]]
    if len(rows) != len(ids):
        raise ReplayError(f"malformed snapshot: node {flat[:2]} is inconsistent")
    node = Node.from_rows(ids[0], tuple(nd["master_fields"]), ids, rows)
    for i, flag in enumerate(bytes.fromhex(nd["deleted"])):
        if flag:
            node.mark_deleted(i)
    node.live, node.ndeleted, node.lp_bytes = nd["live"], nd["ndeleted"], nd["lp_bytes"]
    node.ordered = all(a < b for a, b in pairwise(ids))
    return node


def configure(ks: Keyspace, name: Any, value: Any) -> None:
    """Apply a journaled or snapshotted CONFIG SET, refusing what no CONFIG SET could have
    recorded."""
    p = config.PARAMETERS.get(name) if isinstance(name, str) else None
    if p is None:
        raise ReplayError(f"CONFIG SET of unknown parameter {name!r}")
    if type(value) is not int or value < 0:
        raise ReplayError(f"CONFIG SET {name} to {value!r}: not a size")
    try:
        p.parse(str(value))
    except config.BadValue as e:
        raise ReplayError(f"CONFIG SET {name} to {value!r}: {e}") from None
    ks.configure({name: value})


def decode_snapshot(data: bytes, ks: Keyspace) -> None:
    """Load a snapshot into an empty keyspace, nodes exactly as they were (formats 1-6)."""
    try:
        doc = decode_json(data)
    except ValueError as e:
        raise ReplayError(f"snapshot is not valid JSON: {e}") from e
    if not isinstance(doc, dict) or doc.get("format") not in (1, 2, 3, 4, 5, SNAPSHOT_FORMAT):
        raise ReplayError("unknown snapshot format")
    decode_node = _decode_node if doc["format"] != 1 else _decode_node_v1
    try:
        # First: streams created below take the limits CONFIG SET gave.
        for name, value in doc.get("config_set", {}).items():
            configure(ks, name, value)
        for sd in doc["streams"]:
            s = ks.create(sd["key"])
            s.last_id = sid_from_text(sd["last_id"])
            s.entries_added = u64(sd["entries_added"])
            s.max_deleted_id = sid_from_text(sd["max_deleted_id"])
            length = 0
            for nd in sd["nodes"]:
                node = decode_node(nd)
                if s.nodes and s.nodes[-1].master_fields == node.master_fields:
                    node.master_fields = s.nodes[-1].master_fields
                s.nodes.append(node)
                s.firsts.append(node.master)
                length += node.live
            s.length = length
            load_groups(s, sd["groups"], sd["key"])
            if "idmp" in sd:
                s.idmp = load_idmp(sd["idmp"])
        for name, fingerprint, response, expires_ms in doc.get("responses", []):
            if not isinstance(name, str):
                raise ValueError(f"a kept response {name!r}")
            stored = Stored(a2b_base64(fingerprint), a2b_base64(response), i64(expires_ms))
            ks.responses.put(name, stored)
        for name, value in doc.get("retention", []):
            if not isinstance(name, str):
                raise ValueError(f"a retention's stream name {name!r}")
            ks.retention[name] = Retention.from_json(value)
    except CommandError as e:
        raise ReplayError(f"malformed snapshot: {e}") from e
    except (KeyError, IndexError, TypeError, ValueError, OverflowError) as e:
        raise ReplayError(f"malformed snapshot: {e!r}") from e


def idmp_view(idmp: Idmp) -> list[Any]:
    """A stream's IDMP state as plain values: duration, maxsize, the two counters, then every
    iid still held as ``[producer, iid, id]``, oldest first (each producer's in its order),
    with its stamp as a fourth item when that is not the ID's millisecond (a future-dated
    stream, format 6); then the producers evicted, when some were (format 6). Loading holds
    them in this order, which rebuilds the producers' order too: a producer's newest iid is
    always held, and the producers are in the order of their newest iids."""
    held = [
        [p, iid, sid_text(sid)]
        if stamp == sid.ms
        else [p, iid, sid_text(sid), put_i64(stamp, "a stamp")]
        for p, iid, sid, stamp in idmp.held()
    ]
    view = [
        idmp.duration_s,
        idmp.maxsize,
        put_u64(idmp.iids_added, "iids_added"),
        put_u64(idmp.iids_duplicates, "iids_duplicates"),
        held,
    ]
    if idmp.pids_evicted:
        view.append(put_u64(idmp.pids_evicted, "pids_evicted"))
    return view


def _idmp_format_6(view: list[Any]) -> bool:
    """Whether an ``idmp_view`` needs format 6: evicted producers, or a stamp."""
    return len(view) > 5 or any(len(h) > 3 for h in view[4])


def load_idmp(v: list[Any]) -> Idmp:
    duration, maxsize, added, duplicates, held, *rest = v
    idmp = Idmp(int(duration), int(maxsize), iids_added=u64(added), iids_duplicates=u64(duplicates))
    if rest:
        (evicted,) = rest
        idmp.pids_evicted = u64(evicted)
    for producer, iid, text, *stamp in held:
        if not isinstance(producer, str) or not isinstance(iid, str):
            raise ReplayError(f"malformed snapshot: IDMP producer {producer!r}, iid {iid!r}")
        sid = sid_from_text(text)
        (ms,) = stamp or (sid.ms,)
        idmp.hold(producer, iid, sid, i64(ms))
    return idmp


def group_views(s: Stream) -> list[Any]:
    """A stream's groups as plain values (name, last ID, entries read, consumers, PEL in
    the order of ``Pel.items_by_key``, and
    the released IDs in FIFO order when there are some; format 5's policy and webhooks)."""
    groups = []
    for g in s.groups.values():
        # In the order delivery times were set (``Pel.items_by_key``), which CLAIM's ties
        # follow: loading takes the PEL in this order.
        pel = [
            [k >> 64, k & MASK64, p.consumer, p.delivered_at_ms, p.delivery_count]
            for k, p in g.pel.items_by_key()
        ]
        consumers = [[c.name, c.seen_time_ms] for c in g.consumers.values()]
        group: list[Any] = [g.name, sid_text(g.last_id), g.entries_read, consumers, pel]
        if g.policy is not None or g.webhooks:
            # Format 5: the released entries with who held them (a dead letter names it).
            group.append([[sid_text(sid_of(k)), holder] for k, holder in g.released.items()])
            group.append(None if g.policy is None else g.policy.as_json())
            if g.webhooks:
                group.append({name: h.as_json() for name, h in g.webhooks.items()})
        elif g.released:
            group.append([sid_text(sid) for sid in g.released_ids()])
        groups.append(group)
    return groups


def _checked_groups(groups: list[Any]) -> list[Any]:
    """``group_views``'s values, each integer checked against the domain ``load_groups``
    reads it with (in the encoding thread, not on the loop): a snapshot that could not be
    loaded back is never written."""
    for _, _, entries_read, consumers, pel, *_ in groups:
        if entries_read is not None:
            put_i64(entries_read, "entries_read")
        for _, seen in consumers:
            put_i64(seen, "a seen time")
        for ms, seq, _, delivered, count in pel:
            put_u64(ms, "a pending ID")
            put_u64(seq, "a pending ID")
            put_i64(delivered, "a delivery time")
            put_u64(count, "a delivery count")
    return groups


def load_groups(s: Stream, groups: list[Any], stream: str) -> None:
    for name, last_id, entries_read, consumers, pel, *more in groups:
        if not isinstance(name, str) or len(more) > 3:
            raise ReplayError(f"malformed snapshot: group name {name!r}")
        read = None if entries_read is None else i64(entries_read)
        g = s.groups[name] = ConsumerGroup(name, sid_from_text(last_id), read)
        for cname, seen in consumers:
            if not isinstance(cname, str):
                raise ReplayError(f"malformed snapshot: consumer name {cname!r}")
            g.consumers[cname] = Consumer(cname, i64(seen))
        entries: dict[int, PendingEntry] = {}
        last = None
        for ms, seq, owner, delivered, count in pel:
            key = u64(ms) << 64 | u64(seq)
            delivered, count = i64(delivered), u64(count)
            if owner is not None:
                g.consumers[owner].pel.add(key)
            pending = PendingEntry(owner, delivered, count)
            if pending != last:  # entries delivered together share one value, as they did
                last = pending
            entries[key] = last
        g.pel.load(entries)
        for item in more[0] if more else ():
            text, holder = item if isinstance(item, list) else (item, None)
            if holder is not None and not isinstance(holder, str):
                raise ReplayError(f"malformed snapshot: released {text!r} held by {holder!r}")
            key = key_of(sid_from_text(text))
            unowned = entries.get(key)
            if unowned is None or unowned.consumer is not None:
                raise ReplayError(f"malformed snapshot: released {text!r} is not an unowned entry")
            g.released[key] = holder
        try:
            if len(more) > 1 and more[1] is not None:
                g.policy = DeliveryPolicy.from_json(more[1])
            for hook_name, value in (more[2] if len(more) > 2 else {}).items():
                g.webhooks[hook_name] = Webhook.from_json(stream, name, hook_name, value)
        except CommandError as e:
            raise ReplayError(
                f"malformed snapshot: group {name!r}'s policy or webhooks: {e}"
            ) from e
