"""Durability benchmark: XADD throughput per --fsync mode and database, beside redis-server AOF;
recovery time and peak memory for 1M entries with 10k pending; bytes on disk per entry.

    .venv/bin/python bench/durability.py [--seconds 3] [--clients 64] [--entries 1000000]
        [--skip-pg] [--skip-redis] [--skip-recovery]

Everything runs on loopback and stops by itself: each throughput cell runs ``--seconds``, the
servers are subprocesses of this script on free ports with temporary data folders, and the
redis-server it starts (``--appendonly yes`` in a temporary ``--dir``) is its own, never the
one on 6379. PostgreSQL cells use a schema of their own in database ``test``, dropped after.

Clients are raw asyncio HTTP/1.1 (and RESP) connections with keep-alive, ``--clients`` of
them, each sending one request at a time: "single" is one XADD per request, "batch" is 100
XADDs per request (``/pipeline`` for xstreams, a RESP pipeline for redis-server). Client and
server share the machine's cores, so figures are for comparing columns, not absolutes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PG_ADMIN = os.environ.get("XSTREAMS_BENCH_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
FIELDS = ["item", "book", "qty", "2"]
BATCH = 100


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- load generators --------------------------------------------------------------------------


async def _http_worker(port: int, path: str, body: bytes, deadline: float) -> tuple[int, int]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    request = head + body
    ok = bad = 0
    while time.perf_counter() < deadline:
        writer.write(request)
        raw = await reader.readuntil(b"\r\n\r\n")
        low = raw.lower()
        i = low.index(b"content-length:") + 15
        length = int(low[i : low.index(b"\r\n", i)])
        await reader.readexactly(length)
        if raw[9:12] == b"200":
            ok += 1
        else:
            bad += 1
    writer.close()
    return ok, bad


async def _resp_worker(port: int, batch: int, deadline: float) -> tuple[int, int]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    args = ["XADD", "bench", "*", *FIELDS]
    one = f"*{len(args)}\r\n".encode() + b"".join(f"${len(a)}\r\n{a}\r\n".encode() for a in args)
    request = one * batch
    ok = bad = 0
    while time.perf_counter() < deadline:
        writer.write(request)
        for _ in range(batch):
            line = await reader.readline()
            if line[:1] == b"$":
                await reader.readexactly(int(line[1:]) + 2)
            else:
                bad += 1
        ok += 1
    writer.close()
    return ok, bad


async def _drive(workers: list[asyncio.Future[tuple[int, int]]]) -> tuple[int, int]:
    results = await asyncio.gather(*workers)
    return sum(r[0] for r in results), sum(r[1] for r in results)


def xstreams_load(port: int, batch: bool, clients: int, seconds: float) -> float:
    """Entries per second acknowledged with 200."""
    if batch:
        path, body = "/pipeline", orjson.dumps([["XADD", "bench", "*", *FIELDS]] * BATCH)
    else:
        path, body = "/", orjson.dumps(["XADD", "bench", "*", *FIELDS])

    async def run() -> tuple[int, int]:
        deadline = time.perf_counter() + seconds
        return await _drive(
            [
                asyncio.ensure_future(_http_worker(port, path, body, deadline))
                for _ in range(clients)
            ]
        )

    t0 = time.perf_counter()
    ok, bad = asyncio.run(run())
    elapsed = time.perf_counter() - t0
    if bad:
        print(f"  warning: {bad} non-200 replies", file=sys.stderr)
    return ok * (BATCH if batch else 1) / elapsed


def redis_load(port: int, batch: bool, clients: int, seconds: float) -> float:
    n = BATCH if batch else 1

    async def run() -> tuple[int, int]:
        deadline = time.perf_counter() + seconds
        return await _drive(
            [asyncio.ensure_future(_resp_worker(port, n, deadline)) for _ in range(clients)]
        )

    t0 = time.perf_counter()
    ok, _ = asyncio.run(run())
    return ok * n / (time.perf_counter() - t0)


# -- servers ---------------------------------------------------------------------------------


class Xstreams:
    def __init__(self, data_dir: Path, url: str, fsync: str) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--port", str(self.port),
             "--data-dir", str(data_dir), "--database-url", url, "--fsync", fsync,
             "--log-level", "warning"],
            cwd=ROOT,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise RuntimeError("xstreams did not start")
            time.sleep(0.1)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Redis:
    def __init__(self, data_dir: Path, appendfsync: str) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--dir", str(data_dir), "--appendonly", "yes", "--appendfsync", appendfsync,
             "--auto-aof-rewrite-percentage", "0",
             "--save", "", "--loglevel", "warning"],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        for _ in range(100):
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


# -- databases -------------------------------------------------------------------------------


@dataclass
class Db:
    name: str
    url: str
    schema: str | None = None

    def drop(self) -> None:
        if self.schema is not None:
            from sqlalchemy import create_engine, text

            engine = create_engine(PG_ADMIN)
            with engine.begin() as conn:
                conn.execute(text(f'drop schema if exists "{self.schema}" cascade'))
            engine.dispose()


def sqlite_db(folder: Path) -> Db:
    folder.mkdir(parents=True, exist_ok=True)
    return Db("SQLite", f"sqlite:///{folder / 'xstreams.db'}")


def pg_db() -> Db:
    from sqlalchemy import create_engine, text

    schema = f"xs_bench_{secrets.token_hex(4)}"
    engine = create_engine(PG_ADMIN)
    with engine.begin() as conn:
        conn.execute(text(f'create schema "{schema}"'))
    engine.dispose()
    return Db("PostgreSQL", f"{PG_ADMIN}?options=-csearch_path%3D{schema}", schema)


def journal_bytes_per_row(db: Db) -> tuple[int, int]:
    """(records, bytes on disk) of the journal table."""
    from sqlalchemy import create_engine, func, select, text

    from app.storage.tables import journal

    engine = create_engine(db.url)
    with engine.connect() as conn:
        rows = int(
            conn.execute(select(func.sum(journal.c.last_seq - journal.c.seq + 1))).scalar() or 0
        )
        if engine.dialect.name == "postgresql":
            size = int(
                conn.execute(text("select pg_total_relation_size('xstreams_journal')")).scalar()
                or 0
            )
        else:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            path = Path(engine.url.database or "")
            size = path.stat().st_size
    engine.dispose()
    return rows, size


# -- recovery --------------------------------------------------------------------------------

RECOVER_SNIPPET = """
import sys, time
sys.path.insert(0, {root!r})
from app.engine.store import Store
from app.storage.database import Database, create_db_engine
from app.storage.recovery import recover


def hwm_mib():
    # VmHWM belongs to this process image (ru_maxrss may carry the parent's over exec).
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return 0


db = Database(create_db_engine({url!r}))
store = Store()
t = time.perf_counter()
c = time.process_time()
r = recover(db, store)
took = time.perf_counter() - t
cpu = time.process_time() - c
n = store.execute(["XLEN", "s"])
p = store.execute(["XPENDING", "s", "g"]).count
print(f"{{took:.3f}} {{hwm_mib()}} {{cpu:.3f}} {{n}} {{p}} {{r.records}}")
"""


def build_journal(db: Db, entries: int, pending: int, fields: list[str] = FIELDS) -> None:
    """``entries`` XADD records as the engine writes them (``fields`` each, in stream ``s``),
    then XGROUP CREATE and one XREADGROUP delivering ``pending`` entries to group ``g``
    (records made by the engine itself). Also used by workload 7 of ``python -m bench``."""
    from app.engine.codec import encode_record
    from app.engine.effects import Record
    from app.engine.store import Store
    from app.storage import migrate
    from app.storage.database import Database, create_db_engine

    engine = create_db_engine(db.url)
    migrate.upgrade(engine)
    database = Database(engine)
    base_ms = 1_700_000_000_000
    chunk: list[tuple[int, bytes]] = []
    seq = 0
    for i in range(entries):
        sid = f"{base_ms + i // 1000}-{i % 1000}"
        record = [["add", "s", sid, fields]]
        if i == 0:
            record.insert(0, ["new", "s"])
        seq += 1
        chunk.append((seq, orjson.dumps(record)))
        if len(chunk) == 20_000:
            database.append(chunk)
            chunk = []
    if chunk:
        database.append(chunk)

    class Sink:
        def __init__(self) -> None:
            self.records: list[Record] = []

        def append(self, record: Record) -> None:
            self.records.append(record)

    # The group records come from the engine, on a stream holding the same first IDs.
    sink = Sink()
    store = Store(journal=sink)
    for i in range(pending):
        store.execute(["XADD", "s", f"{base_ms + i // 1000}-{i % 1000}", *fields])
    sink.records.clear()
    store.execute(["XGROUP", "CREATE", "s", "g", "0"])
    store.execute(["XREADGROUP", "GROUP", "g", "c", "COUNT", str(pending), "STREAMS", "s", ">"])
    database.append([(seq + 1 + k, encode_record(r)) for k, r in enumerate(sink.records)])
    database.close()


def measure_recovery(db: Db) -> tuple[float, int, float, int, int, int]:
    """Load ``db`` into a fresh store in a process of its own (recover(), as the service
    does at start): wall s, peak RSS MiB, CPU s, XLEN s, pending of group g, records
    replayed after the snapshot."""
    out = subprocess.run(
        [sys.executable, "-c", RECOVER_SNIPPET.format(root=str(ROOT), url=db.url)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    ).stdout.split()
    return float(out[0]), int(out[1]), float(out[2]), int(out[3]), int(out[4]), int(out[5])


def snapshot_offline(db: Db) -> int:
    from app.settings import Settings
    from app.storage.offline import snapshot_database

    return snapshot_database(Settings(database_url=db.url)).size_bytes


# -- main ------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--pending", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=2, help="rounds; each cell keeps its best")
    ap.add_argument("--skip-pg", action="store_true")
    ap.add_argument("--skip-redis", action="store_true")
    ap.add_argument("--skip-recovery", action="store_true")
    ap.add_argument("--skip-throughput", action="store_true")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="xs-bench-"))
    disk: list[tuple[str, str]] = []
    try:
        kinds = [("sqlite", lambda d: sqlite_db(d))]
        if not a.skip_pg:
            kinds.append(("pg", lambda d: pg_db()))
        best: dict[tuple[str, str], tuple[float, float]] = {}
        # Rounds interleave the cells and keep each cell's best: on a shared machine, a
        # neighbour's burst then cannot decide a comparison between two modes.
        for rnd in range(0 if a.skip_throughput else a.repeat):
            for kind, make in kinds:
                for mode in ("always", "everysec", "off"):
                    folder = tmp / f"{kind}-{mode}-{rnd}"
                    db = make(folder)
                    srv = Xstreams(folder, db.url, mode)
                    try:
                        single = xstreams_load(srv.port, False, a.clients, a.seconds)
                        batch = xstreams_load(srv.port, True, a.clients, a.seconds)
                        if mode == "always" and rnd == 0:
                            # Journal on disk per entry, before a shutdown snapshot folds it.
                            n, size = journal_bytes_per_row(db)
                            if n:
                                disk.append((f"{db.name} journal", f"{size / n:.0f}"))
                    finally:
                        srv.stop()
                        db.drop()
                    key = (f"xstreams {db.name}", mode)
                    old = best.get(key, (0.0, 0.0))
                    best[key] = (max(old[0], single), max(old[1], batch))
                    print(f"  round {rnd}: {db.name:10} {mode:8} single {single:8.0f}/s"
                          f"  batch {batch:8.0f}/s", file=sys.stderr)  # fmt: skip
            if not a.skip_redis and shutil.which("redis-server"):
                for mode in ("always", "everysec"):
                    folder = tmp / f"redis-{mode}-{rnd}"
                    folder.mkdir()
                    r = Redis(folder, mode)
                    try:
                        single = redis_load(r.port, False, a.clients, a.seconds)
                        batch = redis_load(r.port, True, a.clients, a.seconds)
                    finally:
                        r.stop()
                    key = ("redis-server 7 AOF", mode)
                    old = best.get(key, (0.0, 0.0))
                    best[key] = (max(old[0], single), max(old[1], batch))
                    if rnd == 0:
                        aof = sum(p.stat().st_size for p in folder.rglob("*.aof"))
                        n_entries = (single + batch) * a.seconds
                        disk.append((f"redis AOF ({mode})", f"{aof / n_entries:.0f}"))
        rows = [(name, mode, s, b) for (name, mode), (s, b) in best.items()]
        print()
        print("XADD entries/s (higher is better)")
        print(f"| {'server':24} | {'mode':8} | {'single':>10} | {'batch of 100':>12} |")
        print(f"|{'-' * 26}|{'-' * 10}|{'-' * 12}|{'-' * 14}|")
        for name, mode, single, batch in rows:
            print(f"| {name:24} | {mode:8} | {single:10.0f} | {batch:12.0f} |")
        for name in sorted({r[0] for r in rows if r[0].startswith("xstreams")}):
            by = {m: (s, b) for n, m, s, b in rows if n == name}
            single_ratio = by["always"][0] / by["off"][0]
            batch_ratio = by["always"][1] / by["off"][1]
            print(f"{name}: always / off = {single_ratio:.2f} single, {batch_ratio:.2f} batch"
                  " (target >= 0.50)")  # fmt: skip
        if not a.skip_recovery:
            print()
            print(f"Recovery of {a.entries:,} entries with {a.pending:,} pending")
            head = f"| {'database':10} | {'from':24} | {'wall s':>7} | {'CPU s':>6} |"
            print(head + f" {'peak RSS MiB':>12} |")
            print(f"|{'-' * 12}|{'-' * 26}|{'-' * 9}|{'-' * 8}|{'-' * 14}|")
            dbs = [sqlite_db(tmp / "recovery")] + ([] if a.skip_pg else [pg_db()])
            for db in dbs:
                try:
                    build_journal(db, a.entries, a.pending)
                    n_rows, size = journal_bytes_per_row(db)
                    disk.append((f"{db.name} journal (1M records)", f"{size / n_rows:.0f}"))
                    took, peak, cpu, n, p, rec = measure_recovery(db)
                    assert (n, p) == (a.entries, a.pending), (n, p)
                    label = f"journal ({rec:,} records)"
                    print(f"| {db.name:10} | {label:24} | {took:7.2f} | {cpu:6.2f} | {peak:12} |")
                    snap = snapshot_offline(db)
                    disk.append((f"{db.name} snapshot", f"{snap / a.entries:.0f}"))
                    took, peak, cpu, n, p, rec = measure_recovery(db)
                    assert (n, p, rec) == (a.entries, a.pending, 0), (n, p, rec)
                    label = "snapshot"
                    print(f"| {db.name:10} | {label:24} | {took:7.2f} | {cpu:6.2f} | {peak:12} |")
                finally:
                    db.drop()
        print()
        print("Bytes on disk per entry")
        for name, value in disk:
            print(f"| {name:28} | {value:>8} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
