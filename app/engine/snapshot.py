"""Snapshots: a consistent view of the keyspace taken on the loop, encoded off it.

``snapshot_view`` copies what a snapshot needs in O(nodes + pending entries) on the event
loop; ``encode_snapshot`` serializes that view in a worker thread while the loop keeps
mutating the store (nodes only grow at their end, so a node and its size are enough).
``decode_snapshot`` loads one into an empty keyspace with every node exactly as it was, so
``~`` trimming after a restart removes what it would have removed before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.engine.codec import decode_json, encode_json, sid_from_text, sid_text
from app.engine.effects import ReplayError
from app.engine.groups import Consumer, ConsumerGroup, PendingEntry
from app.engine.ids import StreamID
from app.engine.keyspace import Keyspace, StreamConfig
from app.engine.stream import Node

SNAPSHOT_FORMAT = 1


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
            s.last_id = sid_from_text(sd["last_id"])
            s.entries_added = sd["entries_added"]
            s.max_deleted_id = sid_from_text(sd["max_deleted_id"])
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
                g = s.groups[name] = ConsumerGroup(name, sid_from_text(last_id), entries_read)
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
