"""Workloads 7 (recovery) and 8 (keyspace pages) of ``python -m bench`` at a tiny size, on real
servers: xstreams serve, redis-server and the bare app, started and stopped by the harness. The
workloads check what they load and walk (lengths, pending counts, every stream seen by a
cursor walk, 100 keys per KEYS call) and raise otherwise; here their rows must also resolve
into the report's table with the anchors and targets beside each figure."""

from __future__ import annotations

import pytest

from bench import harness, report
from bench.keyspace import keyspace
from bench.recovery import recovery
from bench.workloads import Plan


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_recovery_and_keyspace_rows_at_a_tiny_size() -> None:
    plan = Plan(
        True, rounds=1, seconds=1.0, recovery_entries=300, restart_records=300,
        keyspace_streams=300,
    )  # fmt: skip
    logged: list[str] = []
    with harness.fleet() as fleet:
        cells, rows = recovery(fleet, plan, logged.append)
        more_cells, more_rows = keyspace(fleet, fleet.bare(), plan, logged.append)
    cells += more_cells
    rows += more_rows
    figures = {
        "started": "2026-11-25 00:00 UTC",
        "config": {"quick": True, "rounds": 1, "seconds": 1.0},
        "machine": {},
        "cells": {c.key: c.summary() for c in cells},
        "rows": [row.__dict__ for row in rows],
    }
    text = report.markdown(figures)
    for source, anchor in (("journal", "AOF"), ("snapshot", "RDB")):
        got = figures["cells"][f"xs_recover_{source}"]["median"]
        assert 0 < got < 60, (source, got)
        assert figures["cells"][f"redis_restart_{source}"]["median"] > 0
        line = next(
            t for t in text.splitlines() if t.startswith(f"| 7. recovery from the {source}")
        )
        assert "300 entries (--quick" in line and f"(redis: {anchor} load)" in line
        assert line.endswith(f"| ≤ {5.0 if source == 'journal' else 2.0:.2f} |")
    for key in ("xs_scan_page", "xs_keys_page", "xs_rest_page", "redis_scan_page"):
        cell = figures["cells"][key]
        assert cell["p99_ms"] is not None and cell["p99_ms"] >= cell["p50_ms"] > 0
    verdicts = [t for t in text.splitlines() if t.startswith("| 8. ") and "target ≤ 5.00" in t]
    assert len(verdicts) == 3 and all("p99" in t for t in verdicts)
    restart = [t for t in text.splitlines() if t.startswith("| 7. restart")]
    assert len(restart) == 4 and all(t.endswith("| — |") for t in restart)
    # Issue 37: the journal against redis-server's AOF load, and journals of Idempotency-Key
    # XADDs and of XADD IDMP (Redis 8.6 beside it) with their verdicts.
    for tag, kind, target in (
        ("idempotency", "Idempotency-Key XADDs", "≤ 1.00"),
        ("idmp", "XADD IDMP", "≤ 2.5x redis"),
    ):
        assert figures["cells"][f"redis_restart_journal_{tag}"]["median"] > 0
        line = next(t for t in text.splitlines() if t.startswith("| 7. recovery") and kind in t)
        assert line.endswith(f"| {target} |")
    ratio = next(t for t in text.splitlines() if "against redis-server's AOF load" in t)
    assert ratio.endswith("| ≤ 2.5x redis |")
    assert any("x redis-server (target ≤ 2.5x)" in t for t in text.splitlines())
    assert any("snapshot of" in line for line in logged)
