"""``python -m bench [--quick] [--out DIR]``: xstreams beside redis-server and the bare HTTP
ceiling, measured in one run, with a table, a JSON of every figure and a chart.

Absolute figures drift on a shared 2-core machine, so every xstreams figure stands beside its
anchors from the same run (issue 7). Workloads: 1 XADD, 2 batch append, 3 XRANGE, 4
consume+ack, 5 memory, 6 the Redis backend with 1 and 2 workers (bench/workloads.py), 7
recovery from the journal and from a snapshot (bench/recovery.py), 8 SCAN / KEYS / REST list
pages over 100,000 streams (bench/keyspace.py), 9 the cost of an Idempotency-Key in
throughput and memory (bench/idempotency.py), 10 fairness: one credential flooding beside
another's single appends, the admission gate off and on (bench/fairness.py); ``--only 7,8``
(or ``--only fairness``) picks some. Outputs go to
``--out`` (default bench/results/, git-ignored); the table also replaces the generated part of
bench/REPORT.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import fairness, harness, idempotency, report, workloads
from bench.keyspace import keyspace
from bench.machine import facts
from bench.recovery import recovery
from bench.workloads import Cell, Plan, Row, log_stderr

HERE = Path(__file__).resolve().parent
ALL_STEPS = frozenset(range(1, 11))
NAMED_STEPS = {"fairness": 10}


def _steps(text: str) -> frozenset[int]:
    """``--only 2,3``: the workload numbers to measure (1 XADD ... 5 memory, 6 scale-out,
    7 recovery, 8 keyspace pages, 9 Idempotency-Key, 10 or ``fairness``)."""
    try:
        chosen = frozenset(NAMED_STEPS.get(x) or int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 2,3, got {text!r}") from None
    if not chosen or not chosen <= ALL_STEPS:
        raise argparse.ArgumentTypeError(f"workloads are numbered 1 to {max(ALL_STEPS)}")
    return chosen


def machine() -> dict[str, Any]:
    """What a reader needs to judge the figures: cores, load, versions."""
    found = facts(
        ("xstreams", "fastapi", "uvicorn", "uvloop", "httptools", "orjson"),
        {"redis-server": ["redis-server", "--version"], "wrk": ["wrk", "-v"]},
    )
    redis = found["redis-server"].split()
    found["redis-server"] = redis[2] if len(redis) > 2 else found["redis-server"]
    found["wrk"] = found["wrk"].split(" [")[0]
    return found


def run(plan: Plan, out: Path, only: frozenset[int] = ALL_STEPS) -> dict[str, Any]:
    """Start everything, measure every group interleaved (the steps in ``only``), stop
    everything; the figures."""
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    facts = machine()
    t0 = time.monotonic()
    cells: list[Cell] = []
    rows: list[Row] = []
    with harness.fleet() as fleet:
        log_stderr("starting xstreams (fsync off, fsync always), redis-server x2, bare app")
        servers = workloads.start(fleet)
        counts = workloads._RedisCounts(plan.seconds)
        steps: list[tuple[str, Callable[[], tuple[list[Cell], list[Row]]]]] = [
            ("1) XADD", lambda: workloads.xadd(servers, plan, counts)),
            ("2) batch append", lambda: workloads.batch(servers, plan, counts)),
            ("3) XRANGE", lambda: workloads.xrange(servers, plan, counts)),
            ("4) consume+ack", lambda: workloads.consume(servers, plan)),
        ]
        for number, (name, build) in enumerate(steps, 1):
            if number not in only:
                continue
            log_stderr(f"{name} ({time.monotonic() - t0:.0f} s)")
            group, group_rows = build()
            workloads.measure(group, plan.rounds, log_stderr)
            cells += group
            rows += group_rows
        if 6 in only:
            log_stderr(f"6) Redis backend, 1 and 2 workers ({time.monotonic() - t0:.0f} s)")
            group, group_rows = workloads.scale(fleet, servers, plan, counts)
            workloads.measure(group, plan.rounds, log_stderr)
            cells += group
            rows += group_rows
        if 9 in only:
            log_stderr(f"9) Idempotency-Key ({time.monotonic() - t0:.0f} s)")
            group, group_rows = idempotency.throughput(servers, plan, counts)
            workloads.measure(group, plan.rounds, log_stderr)
            if idempotency.replayed(servers.xs_off):
                raise RuntimeError("workload 9: a key was replayed; keys must be unique")
            cells += group
            rows += group_rows
            group, group_rows = idempotency.memory(fleet, plan, log_stderr)
            cells += group
            rows += group_rows
        if 10 in only:
            log_stderr(f"10) fairness ({time.monotonic() - t0:.0f} s)")
            group, group_rows = fairness.fairness(fleet, plan, log_stderr)
            cells += group
            rows += group_rows
        if 5 in only:
            log_stderr(f"5) memory ({time.monotonic() - t0:.0f} s)")
            group, group_rows = workloads.memory(fleet, plan, log_stderr)
            cells += group
            rows += group_rows
        if 7 in only:
            log_stderr(f"7) recovery ({time.monotonic() - t0:.0f} s)")
            group, group_rows = recovery(fleet, plan, log_stderr)
            cells += group
            rows += group_rows
        if 8 in only:
            log_stderr(f"8) keyspace pages ({time.monotonic() - t0:.0f} s)")
            group, group_rows = keyspace(fleet, servers.bare, plan, log_stderr)
            cells += group
            rows += group_rows
    facts["load_average_at_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    notes = [
        "load generators (wrk -t1, redis-benchmark, python -m bench.client) share the 2 cores "
        "with the server; their CPU is in the table above.",
        "batch/consume ceilings: bare requests/s times the entries a request carries "
        "(100 per batch; 50 for consume+ack: a read and an ack per 100 entries).",
    ]
    notes += workloads.scaling_notes(cells)
    notes += idempotency.key_notes(cells)
    notes += fairness.notes(cells)
    if plan.quick:
        notes.append(
            f"--quick: memory measured with {plan.memory_entries:,} entries, recovery with "
            f"{plan.recovery_entries:,}, keyspace pages over {plan.keyspace_streams:,} streams "
            "(the full run: 1,000,000, 1,000,000 and 100,000)."
        )
    if 7 in only:
        notes.append(
            "recovery rows: seconds, lower is better; the target is on recover() (the load "
            "itself); the restart rows add the interpreter start and imports, as redis-server's "
            "figure (process start until PING answers with loading:0) includes its own start."
        )
    if 8 in only:
        notes.append(
            "keyspace rows: the median page latency of a whole cursor walk (50 calls for KEYS), "
            "one request at a time; the target is judged on each round's p99 (the latency table)."
        )
    return {
        "started": started,
        "seconds_total": round(time.monotonic() - t0, 1),
        "config": {"quick": plan.quick, "rounds": plan.rounds, "seconds": plan.seconds,
                   "memory_entries": plan.memory_entries,
                   "recovery_entries": plan.recovery_entries,
                   "keyspace_streams": plan.keyspace_streams, "clients": workloads.CLIENTS},
        "machine": facts,
        "cells": {c.key: c.summary() for c in cells},
        "rows": [row.__dict__ for row in rows],
        "notes": notes,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds (< 5 min)")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="output folder")
    parser.add_argument("--no-report", action="store_true", help="do not rewrite bench/REPORT.md")
    parser.add_argument(
        "--only",
        type=_steps,
        default=ALL_STEPS,
        help="measure only these workloads, e.g. 2,3 (1 XADD, 2 batch append, 3 XRANGE, "
        "4 consume+ack, 5 memory, 6 Redis backend with 1 and 2 workers, 7 recovery from "
        "journal and snapshot, 8 SCAN/KEYS/REST list pages, 9 Idempotency-Key cost, "
        "10 or fairness: a flooding credential beside a modest one); "
        "implies --no-report",
    )
    args = parser.parse_args()
    if args.only != ALL_STEPS:
        args.no_report = True  # a partial table never replaces the report's
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        figures = run(Plan.make(args.quick), args.out, args.only)
    except KeyboardInterrupt:
        log_stderr("interrupted: servers stopped")
        sys.exit(130)
    stem = "bench-quick" if args.quick else "bench-full"
    if args.only != ALL_STEPS:
        stem += "-" + "".join(str(n) for n in sorted(args.only))
    (args.out / f"{stem}.json").write_text(json.dumps(figures, indent=2) + "\n")
    table = report.markdown(figures)
    (args.out / f"{stem}.md").write_text(table)
    report.chart(figures, args.out / f"{stem}.png")
    if not args.no_report:
        report.update_report(HERE / "REPORT.md", table)
    print(table)
    log_stderr(f"wrote {args.out}/{stem}.json, .md, .png ({figures['seconds_total']} s)")


if __name__ == "__main__":
    main()
