"""Workload 10 of ``python -m bench`` (``--only fairness``): one credential floods, another
appends one entry at a time; is the second still served (issue 42, "fairness under load")?

Two API keys (``xstreams keys create``, as an operator makes them, in the data folder before
the server starts). ``flood`` sends /pipeline requests of 100 XADDs back to back on 64
connections; ``victim`` sends one XADD on the command endpoint 50 times a second, open loop
(bench/fair_client.py, each its own process). Per fsync mode (``off``: the event loop is the
bottleneck; ``always``: the group commit is shared too) three servers: the admission gate off
(``fair_slots=0``, first come first served), at its default (16) and at its fairest (1)
(app/api/fairness.py). Each round measures, interleaved: the victim alone, and under the
flood on each server. A cell's figure is the victim's p99 in ms (p50 beside it); the flood's
entries/s with the gate off and on show what the gate costs the one heavy client.

The target: under the flood, with the gate on, the victim's p99 within 2x of its p99 alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import harness
from bench.harness import Fleet, Sample, Server
from bench.workloads import Cell, Plan, Row, measure

FLOOD_CONNECTIONS = 64
# The gate off, at its default (fair_slots 16), and at its fairest (1).
GATES: tuple[tuple[str, dict[str, str]], ...] = (
    ("off", {"XSTREAMS_FAIR_SLOTS": "0"}),
    ("on", {}),
    ("at-1", {"XSTREAMS_FAIR_SLOTS": "1"}),
)
VICTIM_RATE = 50.0
GATE_NAMES = {"off": "gate off", "on": "gate on", "at-1": "fair_slots 1"}


def _key(folder: Path, name: str) -> str:
    made = subprocess.run(
        [str(harness.VENV_BIN / "xstreams"), "keys", "create", "--name", name, "--read", "*",
         "--write", "*", "--data-dir", str(folder)],
        capture_output=True, text=True, timeout=60, check=True, cwd=harness.ROOT,
    )  # fmt: skip
    return made.stdout.strip()


def _fair_client(*args: str) -> list[str]:
    return [sys.executable, "-m", "bench.fair_client", *args]


class Pair:
    """The servers of one fsync mode, the gate off and on, with the same two keys each."""

    def __init__(self, fleet: Fleet, fsync: str) -> None:
        self.fsync = fsync
        self.tokens: dict[str, tuple[str, str]] = {}
        self.servers: dict[str, Server] = {}
        for gate, env in GATES:
            name = f"xstreams-fair-{gate}-{fsync}"
            folder = fleet.tmpdir(name)
            self.tokens[gate] = (_key(folder, "flood"), _key(folder, "victim"))
            self.servers[gate] = fleet.xstreams(name, fsync, data_dir=folder, env=env)


def _victim_cell(
    key: str, label: str, pair: Pair, gate: str, flooded: bool, plan: Plan,
    flood_rates: dict[str, list[float]],
) -> Cell:  # fmt: skip
    server = pair.servers[gate]
    flood_token, victim_token = pair.tokens[gate]
    port = str(server.port)
    seconds = str(plan.seconds)

    def run(_round: int) -> Sample:
        flood = None
        if flooded:
            flood = subprocess.Popen(
                _fair_client("flood", "--port", port, "--token", flood_token,
                             "--connections", str(FLOOD_CONNECTIONS),
                             "--seconds", str(plan.seconds + 1.0)),
                stdout=subprocess.PIPE, text=True, cwd=harness.ROOT,
            )  # fmt: skip
            time.sleep(0.5)  # the flood under way before the first measured request
        try:
            got, cores, srv = _victim(server, port, victim_token, seconds)
        finally:
            if flood is not None:
                out, _ = flood.communicate(timeout=120)
                flood_rates.setdefault(key, []).append(json.loads(out)["rate"])
        return Sample(got["p99_ms"], got["p50_ms"], got["p99_ms"], cores, srv)

    return Cell(key, label, "ms", run)


def _victim(server: Server, port: str, token: str, seconds: str) -> tuple[Any, float, Any]:
    argv = _fair_client("victim", "--port", port, "--token", token, "--seconds", seconds,
                        "--rate", str(VICTIM_RATE))  # fmt: skip
    out, _wall, cores, srv = harness._measured(server, argv, timeout=120)
    return json.loads(out.strip().splitlines()[-1]), cores, srv


def fairness(fleet: Fleet, plan: Plan, log: Callable[[str], None]) -> tuple[list[Cell], list[Row]]:
    """10) A flooding credential beside one appending one entry at a time."""
    cells: list[Cell] = []
    rows: list[Row] = []
    for fsync in ("off", "always"):
        pair = Pair(fleet, fsync)
        rates: dict[str, list[float]] = {}
        group = [
            _victim_cell(f"fair_alone_{fsync}", f"victim XADD alone (fsync {fsync})", pair,
                         "on", False, plan, rates),
            _victim_cell(f"fair_flood_off_{fsync}",
                         f"victim XADD under the flood, gate off (fsync {fsync})", pair, "off",
                         True, plan, rates),
            _victim_cell(f"fair_flood_on_{fsync}",
                         f"victim XADD under the flood, gate on (fsync {fsync})", pair, "on",
                         True, plan, rates),
            _victim_cell(f"fair_flood_at-1_{fsync}",
                         f"victim XADD under the flood, fair_slots 1 (fsync {fsync})", pair,
                         "at-1", True, plan, rates),
        ]  # fmt: skip
        measure(group, plan.rounds, log)
        for server in pair.servers.values():
            server.stop()
        for gate, _env in GATES:
            flood = Cell(f"fair_flood_rate_{gate}_{fsync}",
                         f"the flood itself, {GATE_NAMES[gate]} (fsync {fsync})", "entries/s",
                         lambda _r: Sample(0, None, None, 0, None))  # fmt: skip
            flood.samples = [
                Sample(rate, None, None, 0.0, None) for rate in rates[f"fair_flood_{gate}_{fsync}"]
            ]
            group.append(flood)
        cells += group
        rows += [
            Row(f"10. fairness, fsync {fsync}: victim XADD p99 alone", "ms p99",
                f"fair_alone_{fsync}", None, None),
            Row(f"10. fairness, fsync {fsync}: victim p99 under flood, gate off", "ms p99",
                f"fair_flood_off_{fsync}", None, None),
            Row(f"10. fairness, fsync {fsync}: victim p99 under flood, gate on", "ms p99",
                f"fair_flood_on_{fsync}", None, None),
            Row(f"10. fairness, fsync {fsync}: victim p99 under flood, fair_slots 1", "ms p99",
                f"fair_flood_at-1_{fsync}", None, None),
            Row(f"10. fairness, fsync {fsync}: flood entries/s, gate off", "entries/s",
                f"fair_flood_rate_off_{fsync}", None, None),
            Row(f"10. fairness, fsync {fsync}: flood entries/s, gate on", "entries/s",
                f"fair_flood_rate_on_{fsync}", None, None),
            Row(f"10. fairness, fsync {fsync}: flood entries/s, fair_slots 1", "entries/s",
                f"fair_flood_rate_at-1_{fsync}", None, None),
        ]  # fmt: skip
    return cells, rows


def notes(cells: list[Cell]) -> list[str]:
    """The target, judged: the victim's p99 under the flood with the gate on, against alone."""
    by_key = {c.key: c.summary() for c in cells}
    out = []
    for fsync in ("off", "always"):
        alone = by_key.get(f"fair_alone_{fsync}")
        got = [by_key.get(f"fair_flood_{gate}_{fsync}") for gate, _env in GATES]
        if alone is None or None in got:
            continue
        off, on, one = (cell["median"] / alone["median"] for cell in got if cell is not None)
        verdict = "met" if min(on, one) <= 2 else "**missed**"
        out.append(
            f"fairness, fsync {fsync}: the victim's p99 under the flood is {off:.1f}x its p99"
            f" alone with the gate off, {on:.1f}x at the default fair_slots 16, {one:.1f}x at"
            f" fair_slots 1 (target ≤ 2x: {verdict})."
        )
    return out
