"""kill -9 at random moments under concurrent XADD / XREADGROUP / XACK / XCLAIM load.

A model follows every request. A 2xx reply is a fact the recovered state must show; a request
cut off by the kill has an unknown outcome, so both "applied" and "not applied" are accepted
for it — and for nothing else. Each entry's life after delivery (claim, ack) runs in the one
thread that received it, so the order of its operations is known. After each restart:
every acknowledged XADD is present with its fields, nothing is duplicated, every pending entry
has exactly the owner and delivery count the replies said, acknowledged entries are not
pending, and the group's and consumers' PEL agree with each other (no half-applied command).
Readers run beside them (ranges and blocked reads, on the command endpoint and over REST):
every entry any reader was shown must have survived the kill (``--fsync always`` shows
nothing a crash can take back).
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.engine.ids import StreamID
from app.engine.rdb import dump_stream
from app.engine.store import Store
from tests.conftest import Commands
from tests.storage.conftest import DurableServer

KILLS = 10
PRODUCERS = 3
CONSUMERS = 3
# Background snapshots happen during the load too, so kills also land around them.
SMALL_SNAPSHOTS = {"XSTREAMS_SNAPSHOT_AFTER_BYTES": "100000"}


@dataclass
class Pending:
    owner: str
    count: int


@dataclass
class Model:
    """What the replies said. ``maybe_*`` hold the effects of requests cut off by a kill."""

    entries: dict[str, list[str]] = field(default_factory=dict)  # id -> fields (2xx XADD)
    maybe_entries: list[list[str]] = field(default_factory=list)
    pending: dict[str, Pending] = field(default_factory=dict)
    acked: set[str] = field(default_factory=set)
    # id -> (state before, state after) of the one operation cut off on that entry
    maybe_pending: dict[str, tuple[Pending | None, Pending | None]] = field(default_factory=dict)
    maybe_delivered: bool = False  # an XREADGROUP cut off: unknown entries may be pending
    shown: set[str] = field(default_factory=set)  # every entry ID a reader was shown
    lock: threading.Lock = field(default_factory=threading.Lock)


def post(client: httpx.Client, *args: str) -> Any:
    """The result, or raises ``Unknown`` when the server went away mid-request."""
    try:
        r = client.post("/", json=list(args))
    except httpx.TransportError as e:
        raise Unknown from e
    assert r.status_code == 200, (r.status_code, r.text)
    return r.json()["result"]


class Unknown(Exception):
    """The request was cut off: it may or may not have been applied."""


def producer(url: str, model: Model, name: str, stop: threading.Event) -> None:
    with httpx.Client(base_url=url, timeout=10) as client:
        n = 0
        while not stop.is_set():
            n += 1
            fields = ["p", name, "n", str(n)]
            try:
                sid = post(client, "XADD", "s", "*", *fields)
            except Unknown:
                with model.lock:
                    model.maybe_entries.append(fields)
                return
            with model.lock:
                model.entries[sid] = fields


def consumer(url: str, model: Model, name: str, stop: threading.Event) -> None:
    rng = random.Random()
    claimer = f"{name}-claims"
    with httpx.Client(base_url=url, timeout=10) as client:
        while not stop.is_set():
            try:
                got = post(
                    client, "XREADGROUP", "GROUP", "g", name, "COUNT", "5", "STREAMS", "s", ">"
                )
            except Unknown:
                with model.lock:
                    model.maybe_delivered = True
                return
            ids = [e[0] for e in got[0][1]] if got else []
            with model.lock:
                for sid in ids:
                    model.pending[sid] = Pending(name, 1)
            for sid in ids:
                action = rng.choice(["ack", "claim", "keep"])
                if action == "keep":
                    continue
                with model.lock:
                    before = model.pending[sid]
                if action == "claim":
                    after: Pending | None = Pending(claimer, before.count + 1)
                    args = ["XCLAIM", "s", "g", claimer, "0", sid]
                else:
                    after = None
                    args = ["XACK", "s", "g", sid]
                try:
                    reply = post(client, *args)
                except Unknown:
                    with model.lock:
                        model.pending.pop(sid)
                        model.maybe_pending[sid] = (before, after)
                    return
                with model.lock:
                    if action == "claim":
                        assert [r[0] for r in reply] == [sid], reply
                        model.pending[sid] = after  # type: ignore[assignment]
                    else:
                        assert reply == 1, reply
                        del model.pending[sid]
                        model.acked.add(sid)


READS = [
    ("POST", "/", ["XREVRANGE", "s", "+", "-", "COUNT", "10"]),
    ("POST", "/", ["XREAD", "BLOCK", "300", "STREAMS", "s", "$"]),
    ("GET", "/v1/streams/s/entries?order=desc&count=10", None),
    ("GET", "/v1/streams/s/entries?after=$&block_ms=300", None),
]


def reader(url: str, model: Model, method: str, path: str, body: Any) -> None:
    """Reads until the server dies; keeps every entry ID it was shown."""
    with httpx.Client(base_url=url, timeout=10) as client:
        while True:
            try:
                r = client.request(method, path, json=body)
            except httpx.TransportError:
                return
            if r.status_code != 200:
                continue
            ids = re.findall(r"\b\d{10,}-\d+\b", r.text)
            with model.lock:
                model.shown.update(ids)


def start_load(url: str, model: Model, cycle: int) -> list[threading.Thread]:
    """Clients that run until the server dies under them (never stopped politely)."""
    stop = threading.Event()  # never set: the kill ends the load
    threads = (
        [
            threading.Thread(target=producer, args=(url, model, f"p{i}-{cycle}", stop), daemon=True)
            for i in range(PRODUCERS)
        ]
        + [
            threading.Thread(target=consumer, args=(url, model, f"c{i}", stop), daemon=True)
            for i in range(CONSUMERS)
        ]
        + [threading.Thread(target=reader, args=(url, model, *read), daemon=True) for read in READS]
    )
    for t in threads:
        t.start()
    return threads


def pending_as_recovered(client: httpx.Client) -> dict[str, Pending]:
    rows = post(client, "XPENDING", "s", "g", "-", "+", "1000000")
    return {r[0]: Pending(r[1], r[3]) for r in rows}


def check(client: httpx.Client, model: Model) -> None:
    entries = {e[0]: e[1] for e in post(client, "XRANGE", "s", "-", "+")}
    # Every acknowledged XADD, with its fields; nothing twice; nothing never attempted.
    for sid, fields in model.entries.items():
        assert entries.get(sid) == fields, f"acknowledged entry {sid} lost or changed"
    seen = [tuple(f) for f in entries.values()]
    assert len(seen) == len(set(seen)), "an entry was duplicated"
    extra = [f for sid, f in entries.items() if sid not in model.entries]
    assert all(f in model.maybe_entries for f in extra), extra
    lost = model.shown - set(entries)
    assert not lost, f"readers were shown entries the crash took back: {sorted(lost)[:5]}"
    for sid, f in entries.items():  # unknown outcomes that did land become facts
        model.entries.setdefault(sid, f)
    model.maybe_entries.clear()

    pel = pending_as_recovered(client)
    for sid, p in model.pending.items():
        assert pel.get(sid) == p, f"pending {sid}: replies said {p}, recovered {pel.get(sid)}"
    for sid in model.acked:
        assert sid not in pel, f"acknowledged {sid} is pending again"
    for sid, (before, after) in model.maybe_pending.items():
        assert pel.get(sid) in (before, after), (sid, before, after, pel.get(sid))
    unexplained = set(pel) - set(model.pending) - set(model.maybe_pending)
    if not model.maybe_delivered:
        assert not unexplained, f"pending entries nobody was told about: {sorted(unexplained)}"
    # Resolve unknowns with what was recovered.
    for sid in set(model.maybe_pending) | unexplained:
        if sid in pel:
            model.pending[sid] = pel[sid]
        else:
            model.acked.add(sid)
    model.maybe_pending.clear()
    model.maybe_delivered = False

    # Group and consumer views of the PEL agree: no command left half-applied.
    info = post(client, "XINFO", "STREAM", "s", "FULL", "COUNT", "0")
    group = dict(zip(info[info.index("groups") + 1][0][::2],
                     info[info.index("groups") + 1][0][1::2], strict=True))  # fmt: skip
    owned: dict[str, str] = {}
    for c in group["consumers"]:
        cd = dict(zip(c[::2], c[1::2], strict=True))
        assert cd["pel-count"] == len(cd["pending"])
        for row in cd["pending"]:
            owned[row[0]] = cd["name"]
    assert owned == {sid: p.owner for sid, p in pel.items()}
    assert group["pel-count"] == len(pel)


@pytest.mark.timeout(200)
def test_kill_9_loses_nothing_acknowledged(db_url: str, tmp_path: Path) -> None:
    rng = random.Random(0x5EED)
    model = Model()
    srv = DurableServer(tmp_path, db_url, env=SMALL_SNAPSHOTS)
    with httpx.Client(base_url=srv.url, timeout=10) as client:
        assert post(client, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM") == "OK"
    try:
        for cycle in range(KILLS):
            threads = start_load(srv.url, model, cycle)
            time.sleep(rng.uniform(0.3, 1.2))
            srv.kill()
            for t in threads:
                t.join(10)
            srv = DurableServer(tmp_path, db_url, env=SMALL_SNAPSHOTS)
            with httpx.Client(base_url=srv.url, timeout=30) as client:
                check(client, model)
    finally:
        srv.stop()
    assert len(model.entries) > 100 and model.acked and model.pending
    assert len(model.shown) > 100  # the readers did read


def _edge_payload() -> str:
    """A DUMP payload whose counters sit at the top of their C types: a pending entry with
    delivery count 2**64-1 and delivery time -2**63, ``entries_added`` 2**64-1, the group's
    ``entries_read`` 2**63-1 and a consumer seen at 2**63-1 (built with the engine's own RDB
    writer; redis-server takes it, tests/differential/test_dump_restore.py)."""
    store = Store()
    for args in (
        ["XADD", "s", "1-0", "a", "1"],
        ["XADD", "s", "2-0", "a", "2"],
        ["XGROUP", "CREATE", "s", "g", "0"],
        ["XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">"],
    ):
        store.execute(args)
    stream = store.keyspace.streams["s"]
    group = stream.groups["g"]
    group.set_pending(StreamID(1, 0), group.consumers["c"], -(2**63), 2**64 - 1)
    group.consumers["c"].seen_time_ms = 2**63 - 1
    group.entries_read = 2**63 - 1
    stream.entries_added = 2**64 - 1
    return dump_stream(stream).decode("utf-8", "surrogateescape")


def _edge_state(xs: Commands) -> list[Any]:
    return [
        xs("XINFO", "STREAM", "t", "FULL"),
        xs("XINFO", "GROUPS", "t"),
        xs("XPENDING", "t", "g", "-", "+", "10"),
        xs("XRANGE", "other", "-", "+"),
    ]


@pytest.mark.timeout(120)
def test_counters_past_64_bits_survive_kill_9(db_url: str, tmp_path: Path) -> None:
    """XCLAIM of a pending entry restored with delivery count 2**64-1 once journaled 2**64,
    which read back as a float: after the next kill -9 every start failed. Each counter
    moved past its type's edge (delivery count, entries_added, entries_read) wraps as in
    redis-server, and the state comes back the same after kill -9, through the journal and
    then through the shutdown snapshot; another stream's later writes come back too."""
    srv = DurableServer(tmp_path, db_url)
    xs = Commands(srv.url)
    try:
        # Bytes that are not UTF-8 travel as \udcNN escapes (json.dumps writes them).
        body = json.dumps(["RESTORE", "t", "0", _edge_payload()]).encode()
        assert xs.client.post("/", content=body).json() == {"result": "OK"}
        claimed = xs("XCLAIM", "t", "g", "c2", "0", "1-0", "TIME", "1000")
        assert claimed == [["1-0", ["a", "1"]]]
        assert xs("XADD", "t", "3-0", "a", "3") == "3-0"
        assert xs("XREADGROUP", "GROUP", "g", "c", "STREAMS", "t", ">") == [
            ["t", [["2-0", ["a", "2"]], ["3-0", ["a", "3"]]]]
        ]
        assert xs("XADD", "other", "1-0", "f", "v") == "1-0"
        before = _edge_state(xs)
        full = before[0]
        group = full[full.index("groups") + 1][0]
        assert full[full.index("entries-added") + 1] == 0
        assert group[group.index("entries-read") + 1] == -(2**63) + 1
        assert [row[3] for row in before[2]] == [0, 1, 1]
    finally:
        xs.client.close()
        srv.kill()
    for _ in range(2):  # after kill -9: the journal; after a clean stop: the snapshot
        srv = DurableServer(tmp_path, db_url)
        xs = Commands(srv.url)
        try:
            after = _edge_state(xs)
            assert after[:2] == before[:2]
            assert [row[::3] for row in after[2]] == [row[::3] for row in before[2]]
            assert after[3] == before[3]
        finally:
            xs.client.close()
            srv.stop()
