"""Workload 7 of ``python -m bench``: recovery of a million entries (3 small fields each, 1 %
of them pending in a group), from the journal and from a snapshot, beside redis-server loading
the same data from its AOF and from an RDB (issue 13: ≤ 5 s from the journal, ≤ 2 s from a
snapshot).

The journal is written straight into a SQLite database by bench/durability.py's
``build_journal`` (records as the engine makes them; filling a server through HTTP would take
minutes and measure nothing more). Two xstreams figures per source:

- ``recover()``: the load itself, in a fresh process (durability's ``measure_recovery``), the
  figure the issue's targets are about;
- restart: ``xstreams serve`` on that data folder until /readyz answers, the like of
  redis-server's figure (interpreter start and imports included).

redis-server is filled through redis-benchmark with ``--appendonly yes`` (every XADD is an AOF
command, nothing rewritten) and SAVEd to dump.rdb; each restart on that folder, with the AOF
on or off, is timed from the process start until PING answers and ``INFO persistence`` says
``loading:0``. The journal rounds run first; then an offline snapshot (``xstreams snapshot``'s
code) folds the journal and the snapshot rounds follow. Every round checks the loaded length
and pending count, and that the journal rounds still replayed every record (a background
snapshot in between would have made them snapshot rounds).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import hiredis
import orjson

from bench import durability, harness
from bench.client import FIELDS
from bench.harness import LOOPBACK, Fleet, Sample
from bench.workloads import Cell, Plan, Row, _fill_redis, _post, measure

# No background snapshot while a restart row serves the journal: the next round must find it.
_NO_SNAPSHOT = {
    "XSTREAMS_SNAPSHOT_AFTER_BYTES": str(1 << 60),
    "XSTREAMS_SNAPSHOT_AFTER_RECORDS": str(1 << 60),
}
# Issue 37's targets: the journal of entries recovers in at most this many times
# redis-server's AOF load of the same XADDs, and 100k idempotency records in at most 1 s.
JOURNAL_VS_AOF = 2.5
IDEMPOTENCY_MAX_S = 1.0


def _resp(sock: socket.socket, *args: str) -> object:
    sock.sendall(b"".join([f"*{len(args)}\r\n".encode()] + [
        f"${len(a.encode())}\r\n{a}\r\n".encode() for a in args
    ]))  # fmt: skip
    reader = hiredis.Reader()
    while (reply := reader.gets()) is False:
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("redis-server closed the connection")
        reader.feed(chunk)
    return reply


def _redis_loaded(port: int, deadline: float) -> None:
    """Return once redis-server answers PING (not -LOADING) and reports ``loading:0``."""
    while time.perf_counter() < deadline:
        try:
            with socket.create_connection((LOOPBACK, port), timeout=5) as sock:
                if _resp(sock, "PING") == b"PONG":
                    info = _resp(sock, "INFO", "persistence")
                    assert isinstance(info, bytes)
                    if b"loading:0\r\n" in info:
                        return
        except OSError:
            pass
        time.sleep(0.005)
    raise RuntimeError("redis-server did not finish loading")


def _redis_restart(
    fleet: Fleet, folder: Path, aof: bool, entries: int, pending: int, binary: str
) -> Sample:
    t0 = time.perf_counter()
    server = fleet.redis_in("redis-restart", folder, appendonly=aof, binary=binary)
    try:
        _redis_loaded(server.port, t0 + 300)
        took = time.perf_counter() - t0
        cpu = server.cpu_seconds()
        length = int(harness.redis_cli(server, "XLEN", "s"))
        summary = harness.redis_cli(server, "XPENDING", "s", "g").splitlines()
    finally:
        server.stop()
    if (length, int(summary[0])) != (entries, pending):
        raise RuntimeError(f"redis loaded {length} entries, {summary[0]} pending")
    return Sample(took, None, None, 0.0, cpu / took)


def _xs_recover(db: durability.Db, entries: int, pending: int, journal: bool) -> Sample:
    took, _peak_mib, cpu, length, pel, records = durability.measure_recovery(db)
    replayed_all = records >= entries  # XADDs, then the group's records
    if (length, pel) != (entries, pending) or replayed_all != journal:
        raise RuntimeError(f"recover(): {length} entries, {pel} pending, {records} records")
    return Sample(took, None, None, 0.0, cpu / took)


def _xs_restart(fleet: Fleet, folder: Path, entries: int) -> Sample:
    t0 = time.perf_counter()
    server = fleet.xstreams("xstreams-restart", "always", data_dir=folder, env=_NO_SNAPSHOT)
    try:
        took = time.perf_counter() - t0
        cpu = server.cpu_seconds()
        length = _post(server, ["XLEN", "s"])
    finally:
        server.stop()
    if length != entries:
        raise RuntimeError(f"xstreams restarted with {length} entries, wanted {entries}")
    return Sample(took, None, None, 0.0, cpu / took)


def _redis_from_commands(
    fleet: Fleet, folder: Path, binary: str, commands: Iterator[list[str]]
) -> None:
    """Fill a redis-server with AOF on (``folder``) through one pipelined connection, then
    create group g and SAVE: what ``_redis_restart`` loads and checks."""
    server = fleet.redis_in("redis-restart-fill", folder, appendonly=True, binary=binary)
    try:
        with socket.create_connection((LOOPBACK, server.port), timeout=60) as sock:
            reader = hiredis.Reader()
            batch: list[bytes] = []

            def flush() -> None:
                sock.sendall(b"".join(batch))
                for _ in batch:
                    while (reply := reader.gets()) is False:
                        reader.feed(sock.recv(1 << 16))
                    if isinstance(reply, hiredis.ReplyError):
                        raise RuntimeError(f"redis-server refused a fill command: {reply}")
                batch.clear()

            for argv in commands:
                batch.append(hiredis.pack_command(tuple(argv)))
                if len(batch) == 1000:
                    flush()
            if batch:
                flush()
        harness.redis_cli(server, "XGROUP", "CREATE", "s", "g", "0")
        harness.redis_cli(server, "SAVE")
    finally:
        server.stop()


def _xadds(n: int) -> Iterator[list[str]]:
    return (["XADD", "s", "*", *FIELDS] for _ in range(n))


def _idmp_xadds(n: int) -> Iterator[list[str]]:
    """XADD IDMP over 4 producers, every iid new (Redis 8.6's idempotent append)."""
    return (["XADD", "s", "IDMP", f"p{i % 4}", f"iid-{i}", "*", *FIELDS] for i in range(n))


def build_engine_journal(db: durability.Db, commands: Iterator[list[str]], keep: bool) -> int:
    """A journal made by the engine itself running ``commands`` (records exactly as the
    service writes them), then XGROUP CREATE s g 0; with ``keep``, each command is run as an
    Idempotency-Key request is: its response kept (``Store.remember``) as a record of its
    own, under a key of its own. Returns the records written."""
    import hashlib

    from app.api.idempotency import encode_response
    from app.engine.codec import encode_record
    from app.engine.effects import Record
    from app.engine.store import Store
    from app.storage import migrate
    from app.storage.database import Database, create_db_engine

    engine = create_db_engine(db.url)
    migrate.upgrade(engine)
    database = Database(engine)

    class Sink:
        def __init__(self) -> None:
            self.seq = 0
            self.chunk: list[tuple[int, bytes]] = []

        def append(self, record: Record) -> None:
            self.seq += 1
            self.chunk.append((self.seq, encode_record(record)))
            if len(self.chunk) == 20_000:
                self.flush()

        def flush(self) -> None:
            if self.chunk:
                database.append(self.chunk)
                self.chunk = []

    sink = Sink()
    store = Store(journal=sink)
    head = [(b"content-type", b"application/json")]
    for i, argv in enumerate(commands):
        reply = store.execute(argv)
        if keep:  # as app/api/idempotency.py keeps a command endpoint's answer
            body = orjson.dumps({"result": str(reply)})
            response = encode_response(200, [*head, (b"content-length", b"%d" % len(body))], body)
            fingerprint = hashlib.sha256(b"POST / " + orjson.dumps(argv)).digest()
            store.remember(f"key:bench\nrequest-{i:08d}", fingerprint, response)
    store.execute(["XGROUP", "CREATE", "s", "g", "0"])
    sink.flush()
    database.close()
    return sink.seq


@dataclass(frozen=True)
class _Dataset:
    """What one group of rows recovers: a journal, and the AOF redis-server loads beside it."""

    name: str  # the cells' key part
    short: str  # the cells' label part
    label: str  # what the rows say it is
    entries: int
    pending: int
    journal_only: bool  # no snapshot rows
    redis_binary: str = "redis-server"


def _measure_dataset(
    fleet: Fleet,
    plan: Plan,
    log: Callable[[str], None],
    data: _Dataset,
    build: Callable[[durability.Db], None],
    fill_redis: Callable[[Path], None],
) -> tuple[list[Cell], list[Cell]]:
    """Build both sides, then measure the journal rounds, fold the journal into a snapshot
    and measure the snapshot rounds (unless ``journal_only``)."""
    n, pending, tag = data.entries, data.pending, data.name
    folder = fleet.tmpdir(f"xstreams-recovery{tag}")
    db = durability.sqlite_db(folder)  # xstreams.db in the folder: what --data-dir opens
    t0 = time.perf_counter()
    build(db)
    log(f"  xstreams journal of {data.label} written in {time.perf_counter() - t0:.1f} s")
    redis_dir = fleet.tmpdir(f"redis-recovery{tag}")
    fill_redis(redis_dir)

    def cells(source: str, journal: bool) -> list[Cell]:
        anchor = "AOF" if journal else "RDB"
        of = f" ({data.short})" if data.short else ""
        return [
            Cell(f"xs_recover_{source}{tag}", f"xstreams recover() from the {source}{of}", "s",
                 lambda _r: _xs_recover(db, n, pending, journal)),
            Cell(f"xs_restart_{source}{tag}", f"xstreams serve until ready, {source}{of}", "s",
                 lambda _r: _xs_restart(fleet, folder, n)),
            Cell(f"redis_restart_{source}{tag}", f"redis-server until loaded, {anchor}{of}",
                 "s", lambda _r: _redis_restart(fleet, redis_dir, journal, n, pending,
                                                data.redis_binary)),
        ]  # fmt: skip

    journal_cells = cells("journal", True)
    measure(journal_cells, plan.rounds, log)
    snapshot_cells: list[Cell] = []
    if not data.journal_only:
        t0 = time.perf_counter()
        snapshot_bytes = durability.snapshot_offline(db)
        log(f"  snapshot of {snapshot_bytes:,} bytes taken in {time.perf_counter() - t0:.1f} s")
        snapshot_cells = cells("snapshot", False)
        measure(snapshot_cells, plan.rounds, log)
    return journal_cells, snapshot_cells


def recovery(fleet: Fleet, plan: Plan, log: Callable[[str], None]) -> tuple[list[Cell], list[Row]]:
    """7) Recovery from the journal and from a snapshot, beside redis-server's AOF and RDB;
    then journals of Idempotency-Key XADDs and of XADD IDMP beside the AOF of as many XADDs
    (issue 37)."""
    n = plan.recovery_entries
    pending = n // 100
    quick = " (--quick; full run: 1,000,000)" if plan.quick else ""
    size = f"{n:,} entries{quick}"

    def fill_entries(folder: Path) -> None:
        redis = fleet.redis_in("redis-recovery-fill", folder, appendonly=True)
        _fill_redis(redis, "s", n)
        harness.redis_cli(redis, "XGROUP", "CREATE", "s", "g", "0")
        harness.redis_cli(redis, "XREADGROUP", "GROUP", "g", "c", "COUNT", str(pending),
                          "STREAMS", "s", ">")  # fmt: skip
        harness.redis_cli(redis, "SAVE")
        redis.stop()

    entries = _Dataset("", "", size, n, pending, journal_only=False)
    journal_cells, snapshot_cells = _measure_dataset(
        fleet, plan, log, entries,
        lambda db: durability.build_journal(db, n, pending, FIELDS), fill_entries,
    )  # fmt: skip
    rows = []
    for source, anchor, limit in (("journal", "AOF", 5.0), ("snapshot", "RDB", 2.0)):
        rows += [
            Row(f"7. recovery from the {source}, {size} (redis: {anchor} load)", "s",
                f"xs_recover_{source}", f"redis_restart_{source}", None,
                {"kind": "max", "value": limit}),
            Row(f"7. restart from the {source} until /readyz, {size} (redis: {anchor})", "s",
                f"xs_restart_{source}", f"redis_restart_{source}", None),
        ]  # fmt: skip
    rows.append(
        Row(f"7. recovery from the journal, {size}, against redis-server's AOF load (issue 37)",
            "s", "xs_recover_journal", "redis_restart_journal", None,
            {"kind": "redis_ratio", "value": JOURNAL_VS_AOF})
    )  # fmt: skip
    cells = journal_cells + snapshot_cells

    k = plan.restart_records
    kept = _Dataset("_idempotency", "Idempotency-Key", f"{k:,} Idempotency-Key XADDs", k, 0,
                    journal_only=True)  # fmt: skip
    more, _none = _measure_dataset(
        fleet, plan, log, kept,
        lambda db: log(f"  {build_engine_journal(db, _xadds(k), keep=True):,} records"),
        lambda folder: _redis_from_commands(fleet, folder, "redis-server", _xadds(k)),
    )  # fmt: skip
    cells += more
    what = f"{k:,} Idempotency-Key XADDs ({k:,} entry + {k:,} kept-response records)"
    rows += [
        Row(f"7. recovery from the journal, {what} (redis: AOF of {k:,} XADDs)", "s",
            "xs_recover_journal_idempotency", "redis_restart_journal_idempotency", None,
            {"kind": "max", "value": IDEMPOTENCY_MAX_S}),
        Row(f"7. restart from the journal until /readyz, {what} (redis: AOF)", "s",
            "xs_restart_journal_idempotency", "redis_restart_journal_idempotency", None),
    ]  # fmt: skip
    if not os.access(harness.REDIS8_SERVER, os.X_OK):
        log(f"  no redis-server 8 at {harness.REDIS8_SERVER} (.ci/redis8): IDMP rows skipped")
        return cells, rows
    idmp = _Dataset("_idmp", "XADD IDMP", f"{k:,} XADD IDMP", k, 0, journal_only=True,
                    redis_binary=str(harness.REDIS8_SERVER))  # fmt: skip
    more, _none = _measure_dataset(
        fleet, plan, log, idmp,
        lambda db: log(f"  {build_engine_journal(db, _idmp_xadds(k), keep=False):,} records"),
        lambda folder: _redis_from_commands(fleet, folder, idmp.redis_binary, _idmp_xadds(k)),
    )  # fmt: skip
    cells += more
    what = f"{k:,} XADD IDMP over 4 producers"
    rows += [
        Row(f"7. recovery from the journal, {what} (redis 8.6: AOF of the same XADDs)", "s",
            "xs_recover_journal_idmp", "redis_restart_journal_idmp", None,
            {"kind": "redis_ratio", "value": JOURNAL_VS_AOF}),
        Row(f"7. restart from the journal until /readyz, {what} (redis 8.6: AOF)", "s",
            "xs_restart_journal_idmp", "redis_restart_journal_idmp", None),
    ]  # fmt: skip
    return cells, rows
