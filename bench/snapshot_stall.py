"""How much a background snapshot holds up the event loop, in process (issue 38).

    python -m bench.snapshot_stall [--entries 2000000] [--modes thread,fork,sliced] [--repeat 2]

Builds a store of ``--entries`` entries (4 streams, fields ``f1 v1 f2 <i>``, one group with
1,000 pending), journals to a SQLite file (``--fsync everysec``), then for each mode:

- ``thread``: the view taken on the loop, encoded in a worker thread (before issue 38);
- ``fork``: encoded in a forked child (``app.storage.forked``);
- ``sliced``: a prototype of the other design, the view taken on the loop, then the document
  encoded on the loop node by node in slices of at most ``--slice-ms`` (not in the service).

Meanwhile a ticker (1 ms sleeps) records the loop's longest lateness, and requests arrive on a
fixed schedule (one every 2 ms: an XADD and an XRANGE COUNT 10) whose latency counts from the
moment each was due. Each mode reports the same window without a snapshot first, then with
one: the loop's worst stall, the requests' p50 / p99 / max, the snapshot's wall time, and the
parent's CPU time during it (the child's apart).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from app.engine.commands.streams import XAddArgs
from app.engine.snapshot import _encode_node, encode_snapshot
from app.engine.store import Store
from app.settings import FsyncMode
from app.storage import forked, migrate, snapshots
from app.storage.database import Database, create_db_engine
from app.storage.snapshots import Snapshotter
from app.storage.writer import JournalWriter

PERIOD_S = 0.002
# When the fork took (s) and when storing began (perf_counter), set by the wrappers below.
marks: dict[str, float] = {}


def _timed_fork(store: Store) -> Any:
    t = time.perf_counter()
    child = forked.fork_encoder(store)
    marks["fork"] = time.perf_counter() - t
    return child


def _timed_store(db: Database) -> None:
    write = db.write_snapshot

    def timed(covers: int, data: bytes) -> int:
        marks["store"] = time.perf_counter()
        return write(covers, data)

    db.write_snapshot = timed  # type: ignore[method-assign]


def build(entries: int) -> Store:
    store = Store()
    for start in range(0, entries, 1000):
        for k in range(4):
            run = [
                XAddArgs(f"s{k}", ("f1", "v1", "f2", str(i)))
                for i in range(start + k, min(start + 1000, entries), 4)
            ]
            if run:
                store.append_run(run)
    store.execute(["XGROUP", "CREATE", "s0", "g", "0"])
    store.execute(["XREADGROUP", "GROUP", "g", "c", "COUNT", "1000", "STREAMS", "s0", ">"])
    return store


async def sliced_encode(store: Store, slice_s: float) -> bytes:
    """The document assembled from per-node fragments, encoded on the loop in slices (the
    view itself is one step: it must be consistent). Equal to ``encode_snapshot`` for a
    keyspace of plain streams and groups (checked by the caller)."""
    view = store.snapshot_view()
    head = orjson.loads(encode_snapshot(view.__class__(view.config, [], view.config_set)))
    parts: list[bytes] = []
    until = time.perf_counter() + slice_s
    for i, sv in enumerate(view.streams):
        nodes: list[bytes] = []
        for nv in sv.nodes:
            nodes.append(orjson.dumps(_encode_node(nv)))
            if time.perf_counter() > until:
                await asyncio.sleep(0)
                until = time.perf_counter() + slice_s
        rest = {
            "key": sv.key,
            "last_id": f"{sv.last_id.ms}-{sv.last_id.seq}",
            "entries_added": sv.entries_added,
            "max_deleted_id": f"{sv.max_deleted_id.ms}-{sv.max_deleted_id.seq}",
            "nodes": [],
            "groups": sv.groups,
        }
        text = orjson.dumps(rest)
        cut = text.index(b'"nodes":[') + len(b'"nodes":[')
        parts.append((b"," if i else b"") + text[:cut] + b",".join(nodes) + text[cut:])
    whole = orjson.dumps(head)
    cut = whole.index(b'"streams":[') + len(b'"streams":[')
    return whole[:cut] + b"".join(parts) + whole[cut:]


class Load:
    """The ticker and the scheduled requests, recording into the current window."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.lateness: list[float] = []
        self.latency: list[float] = []
        self.stop = False
        self.n = 0
        # (when, lateness, the process's CPU time since the previous tick) for the phases:
        # under load, the CPU the process spent between two ticks is the stall it would
        # have been on an idle machine (the GIL-bound part of it; a child's CPU is apart).
        self.ticks: list[tuple[float, float, float]] = []
        self.cpu = time.process_time()

    async def ticker(self) -> None:
        while not self.stop:
            due = time.perf_counter() + 0.001
            await asyncio.sleep(0.001)
            now, cpu = time.perf_counter(), time.process_time()
            self.lateness.append(now - due)
            self.ticks.append((now, now - due, cpu - self.cpu))
            self.cpu = cpu

    async def requests(self) -> None:
        loop = asyncio.get_running_loop()
        due = time.perf_counter()
        pending: set[asyncio.Task[None]] = set()
        while not self.stop:
            due += PERIOD_S
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            while due < time.perf_counter() - PERIOD_S:  # requests that arrived meanwhile
                t = loop.create_task(self._one(due))
                pending.add(t)
                t.add_done_callback(pending.discard)
                due += PERIOD_S
            t = loop.create_task(self._one(due))
            pending.add(t)
            t.add_done_callback(pending.discard)
        await asyncio.gather(*pending)

    async def _one(self, due: float) -> None:
        self.n += 1
        self.store.execute(["XADD", "load", "*", "f", str(self.n)])
        await asyncio.sleep(0)  # the reply's write, another turn
        self.store.execute(["XRANGE", "s1", "-", "+", "COUNT", "10"])
        self.latency.append(time.perf_counter() - due)

    def window(self) -> tuple[list[float], list[float]]:
        out = (self.lateness, self.latency)
        self.lateness, self.latency = [], []
        return out


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] * 1000


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


async def one_mode(
    store: Store, db: Database, mode: str, slice_s: float, seq: int
) -> dict[str, Any]:
    writer = JournalWriter(db, FsyncMode.EVERYSEC)
    writer.start(seq)
    store.journal = writer
    snaps = Snapshotter(db, store, writer, fork=mode == "fork")
    load = Load(store)
    tasks = [asyncio.create_task(load.ticker()), asyncio.create_task(load.requests())]
    await asyncio.sleep(0.5)
    load.window()
    await asyncio.sleep(1.5)
    quiet = load.window()
    cpu0, child0, t0 = time.process_time(), child_cpu(), time.perf_counter()
    marks.clear()
    marks["store"] = float("inf")
    if mode == "sliced":
        data = await sliced_encode(store, slice_s)
        encoded = time.perf_counter()
        await writer.flush()
        await asyncio.to_thread(db.write_snapshot, writer.last_seq, data)
    else:
        taken = await snaps.take()
        encoded = t0 + taken.encode_ms / 1000
    wall = time.perf_counter() - t0
    cpu, child = time.process_time() - cpu0, child_cpu() - child0
    await asyncio.sleep(0.2)
    busy = load.window()
    load.stop = True
    await asyncio.gather(*tasks)
    store.journal = None
    await writer.close()

    def worst(start: float, end: float, cpu: bool = False) -> float:
        return max(
            (c if cpu else late for when, late, c in load.ticks if start <= when - late < end),
            default=0,
        )

    return {
        "fork_ms": marks.get("fork", 0.0) * 1000,
        "stall_encoding": worst(t0, encoded) * 1000,
        "stall_storing": worst(min(encoded, marks["store"]), t0 + wall + 0.2) * 1000,
        "cpu_stall_quiet": worst(t0 - 1.5, t0, cpu=True) * 1000,
        "cpu_stall": worst(t0, t0 + wall + 0.2, cpu=True) * 1000,
        "seq": writer.last_seq,
        "mode": mode,
        "quiet_stall": max(quiet[0]) * 1000,
        "quiet_p50": pct(quiet[1], 0.5),
        "quiet_p99": pct(quiet[1], 0.99),
        "stall": max(busy[0]) * 1000,
        "p50": pct(busy[1], 0.5),
        "p99": pct(busy[1], 0.99),
        "max": pct(busy[1], 1.0),
        "encode_ms": (encoded - t0) * 1000,
        "wall_ms": wall * 1000,
        "cpu_ms": cpu * 1000,
        "child_cpu_ms": child * 1000,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=2_000_000)
    ap.add_argument("--modes", default="thread,fork,sliced")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--slice-ms", type=float, default=5.0)
    args = ap.parse_args()
    t = time.perf_counter()
    store = build(args.entries)
    view = store.snapshot_view()
    t1 = time.perf_counter()
    whole = encode_snapshot(view)
    print(
        f"{args.entries} entries built in {t1 - t:.1f} s; snapshot {len(whole) / 1e6:.1f} MB;"
        f" RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB;"
        f" load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    assert asyncio.run(sliced_encode(store, 1.0)) == whole, "the sliced prototype differs"
    del view, whole
    gc.collect()
    with tempfile.TemporaryDirectory() as folder:
        engine = create_db_engine(f"sqlite:///{Path(folder) / 'x.db'}", FsyncMode.EVERYSEC)
        migrate.upgrade(engine)
        db = Database(engine)
        _timed_store(db)
        snapshots.fork_encoder = _timed_fork  # type: ignore[assignment]
        cols = "mode quiet_stall quiet_p99 stall stall_encoding stall_storing fork_ms p50 p99 max"
        cols += " cpu_stall_quiet cpu_stall encode_ms wall_ms cpu_ms child_cpu_ms"
        print("| " + " | ".join(cols.split()) + " | load |")
        rows: dict[str, list[dict[str, Any]]] = {}
        seq = 0
        for _ in range(args.repeat):
            for mode in args.modes.split(","):
                r = asyncio.run(one_mode(store, db, mode, args.slice_ms / 1000, seq))
                seq = r["seq"]
                rows.setdefault(mode, []).append(r)
                cells = [r["mode"]] + [f"{r[c]:.1f}" for c in cols.split()[1:]]
                print("| " + " | ".join(cells) + f" | {os.getloadavg()[0]:.2f} |", flush=True)
        for mode, rs in rows.items():
            ratio = statistics.median(r["p99"] / r["quiet_p99"] for r in rs)
            print(f"{mode}: p99 during / without a snapshot, median {ratio:.2f}x", flush=True)
        db.close()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
