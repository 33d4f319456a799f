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

import socket
import time
from collections.abc import Callable
from pathlib import Path

import hiredis

from bench import durability, harness
from bench.client import FIELDS
from bench.harness import LOOPBACK, Fleet, Sample
from bench.workloads import Cell, Plan, Row, _fill_redis, _post, measure

# No background snapshot while a restart row serves the journal: the next round must find it.
_NO_SNAPSHOT = {"XSTREAMS_SNAPSHOT_AFTER_BYTES": str(1 << 60)}


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


def _redis_restart(fleet: Fleet, folder: Path, aof: bool, entries: int, pending: int) -> Sample:
    t0 = time.perf_counter()
    server = fleet.redis_in("redis-restart", folder, appendonly=aof)
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


def recovery(fleet: Fleet, plan: Plan, log: Callable[[str], None]) -> tuple[list[Cell], list[Row]]:
    """7) Recovery from the journal and from a snapshot, beside redis-server's AOF and RDB."""
    n = plan.recovery_entries
    pending = n // 100
    folder = fleet.tmpdir("xstreams-recovery")
    db = durability.sqlite_db(folder)  # xstreams.db in the folder: what --data-dir opens
    t0 = time.perf_counter()
    durability.build_journal(db, n, pending, FIELDS)
    log(f"  xstreams journal of {n:,} entries written in {time.perf_counter() - t0:.1f} s")
    redis_dir = fleet.tmpdir("redis-recovery")
    redis = fleet.redis_in("redis-recovery-fill", redis_dir, appendonly=True)
    _fill_redis(redis, "s", n)
    harness.redis_cli(redis, "XGROUP", "CREATE", "s", "g", "0")
    harness.redis_cli(redis, "XREADGROUP", "GROUP", "g", "c", "COUNT", str(pending),
                      "STREAMS", "s", ">")  # fmt: skip
    harness.redis_cli(redis, "SAVE")
    redis.stop()
    size = f"{n:,} entries" + (" (--quick; full run: 1,000,000)" if plan.quick else "")

    def cells(source: str, journal: bool) -> list[Cell]:
        return [
            Cell(f"xs_recover_{source}", f"xstreams recover() from the {source}", "s",
                 lambda _r: _xs_recover(db, n, pending, journal)),
            Cell(f"xs_restart_{source}", f"xstreams serve until ready, {source}", "s",
                 lambda _r: _xs_restart(fleet, folder, n)),
            Cell(f"redis_restart_{source}",
                 f"redis-server until loaded, {'AOF' if journal else 'RDB'}", "s",
                 lambda _r: _redis_restart(fleet, redis_dir, journal, n, pending)),
        ]  # fmt: skip

    journal_cells = cells("journal", True)
    measure(journal_cells, plan.rounds, log)
    t0 = time.perf_counter()
    snapshot_bytes = durability.snapshot_offline(db)
    log(f"  snapshot of {snapshot_bytes:,} bytes taken in {time.perf_counter() - t0:.1f} s")
    snapshot_cells = cells("snapshot", False)
    measure(snapshot_cells, plan.rounds, log)
    rows = []
    for source, anchor, limit in (("journal", "AOF", 5.0), ("snapshot", "RDB", 2.0)):
        rows += [
            Row(f"7. recovery from the {source}, {size} (redis: {anchor} load)", "s",
                f"xs_recover_{source}", f"redis_restart_{source}", None,
                {"kind": "max", "value": limit}),
            Row(f"7. restart from the {source} until /readyz, {size} (redis: {anchor})", "s",
                f"xs_restart_{source}", f"redis_restart_{source}", None),
        ]  # fmt: skip
    return journal_cells + snapshot_cells, rows
