"""The report builder: a figures JSON becomes the table and the targets verdict, and a row whose
anchor was never measured is refused rather than shown as an empty column. No server, no timing.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from bench import report


def _cell(label: str, unit: str, rates: list[float]) -> dict[str, Any]:
    return {
        "label": label,
        "unit": unit,
        "samples": [{"rate": r} for r in rates],
        "median": sorted(rates)[len(rates) // 2],
        "min": min(rates),
        "max": max(rates),
        "p50_ms": 1.0,
        "p99_ms": 9.0,
        "client_cpu_max": 0.2,
        "server_cpu_median": 0.9,
    }


FIGURES: dict[str, Any] = {
    "started": "2026-11-22 01:00 UTC",
    "config": {"quick": True, "rounds": 3, "seconds": 2.0},
    "machine": {"cpus": 2},
    "cells": {
        "xs": _cell("xstreams XADD", "req/s", [2000, 2500, 2400]),
        "redis": _cell("redis XADD", "req/s", [40000, 42000, 41000]),
        "bare": _cell("bare POST", "req/s", [5000, 6000, 5500]),
        "xs_mem": _cell("xstreams memory", "bytes/entry", [400]),
        "redis_mem": _cell("redis memory", "bytes/entry", [20]),
    },
    "rows": [
        {"label": "XADD", "unit": "req/s", "xstreams": "xs", "redis": "redis", "bare": "bare",
         "target": {"kind": "ceiling_ratio", "value": 0.7}},
        {"label": "memory", "unit": "bytes/entry", "xstreams": "xs_mem", "redis": "redis_mem",
         "bare": None, "target": {"kind": "max", "value": 150}},
    ],
}  # fmt: skip


def test_table_has_ratios_and_verdicts() -> None:
    text = report.markdown(FIGURES)
    assert "| XADD | req/s | 2,400 [2,000–2,500] | 41,000 [40,000–42,000] |" in text
    assert "| 44% | 6% |" in text  # 2400/5500, 2400/41000
    assert "**missed**: 44% of ceiling (target ≥ 70%), 1.6x short" in text
    assert "**missed**: 400 (target ≤ 150), 2.7x over" in text
    assert "| memory | bytes/entry | 400 | 20.0 | — | — | 2000% |" in text


def test_tail_latency_against_three_times_the_ceilings_p99() -> None:
    figures = copy.deepcopy(FIGURES)
    text = report.markdown(figures)  # 9 ms beside 9 ms
    assert "| XADD | 9.00 | 9.00 | 1.0x | met |" in text
    figures["cells"]["xs"]["p99_ms"] = 40.0
    text = report.markdown(figures)
    assert "| XADD | 40.00 | 9.00 | 4.4x | **missed**, 1.5x over |" in text
    assert "| memory | " not in text.split("Tail latency")[1].split("Latency")[0]  # no ceiling


def test_missing_anchor_is_an_error() -> None:
    figures = copy.deepcopy(FIGURES)
    del figures["cells"]["redis"]
    with pytest.raises(report.MissingFigure, match="redis"):
        report.markdown(figures)


def test_report_keeps_hand_written_text(tmp_path: Path) -> None:
    path = tmp_path / "REPORT.md"
    path.write_text(f"intro\n{report.FIGURES_START}\nold\n{report.FIGURES_END}\nfindings\n")
    report.update_report(path, "new table\n")
    text = path.read_text()
    assert text.startswith("intro\n") and text.endswith("findings\n")
    assert "new table" in text and "old" not in text
    path.write_text("no markers\n")
    with pytest.raises(ValueError, match="markers"):
        report.update_report(path, "t\n")


@pytest.mark.parametrize(
    ("text", "steps"),
    [
        ("2,3", {2, 3}),
        ("5", {5}),
        ("6", {6}),
        ("7,8", {7, 8}),
        ("1,2,3,4,5", {1, 2, 3, 4, 5}),
        ("3,3", {3}),
        ("fairness", {10}),
        ("1,fairness", {1, 10}),
    ],
)
def test_only_names_the_workloads_to_measure(text: str, steps: set[int]) -> None:
    from bench.__main__ import _steps

    assert _steps(text) == steps


@pytest.mark.parametrize("text", ["", "0", "11", "2,x", "1;2", "fair"])
def test_only_refuses_what_names_no_workload(text: str) -> None:
    import argparse

    from bench.__main__ import _steps

    with pytest.raises(argparse.ArgumentTypeError):
        _steps(text)


def test_latency_target_is_judged_on_the_p99_and_shown_beside_the_figure() -> None:
    figures = copy.deepcopy(FIGURES)
    figures["cells"]["xs_page"] = {**_cell("xstreams SCAN page", "ms/page", [0.5]), "p99_ms": 7.5}
    figures["cells"]["redis_page"] = _cell("redis SCAN page", "ms/page", [0.1])
    figures["rows"].append(
        {"label": "SCAN", "unit": "ms/page", "xstreams": "xs_page", "redis": "redis_page",
         "bare": None, "target": {"kind": "max", "value": 5.0, "figure": "p99_ms"}}
    )  # fmt: skip
    text = report.markdown(figures)
    assert "| SCAN | ms/page | 0.50 | 0.10 | — | — | 500% | p99 ≤ 5.00 |" in text
    assert "| SCAN | **missed**: p99 7.50 (target ≤ 5.00), 1.5x over |" in text
    assert "| ≥ 70% of ceiling |" in text and "| ≤ 150 |" in text  # the other rows' targets


def test_a_baseline_target_compares_with_the_row_without_the_feature() -> None:
    """Workload 9: the keyed rate against the same request without the key, same run."""
    figures = copy.deepcopy(FIGURES)
    figures["cells"]["xs_keyed"] = _cell("xstreams XADD, key", "req/s", [2100, 2200, 2300])
    target = {"kind": "baseline_ratio", "value": 0.9, "baseline": "xs"}
    row = {"label": "XADD keyed", "unit": "req/s", "xstreams": "xs_keyed", "redis": "redis",
           "bare": "bare", "target": target}  # fmt: skip
    figures["rows"] = [row]
    text = report.markdown(figures)
    assert "met: 92% of the rate without it (target ≥ 90%)" in text  # 2200/2400
    assert "≥ 90% of the row without it" in text
    figures["rows"] = [{**row, "target": {**row["target"], "value": 0.95}}]
    assert "**missed**: 92% of the rate without it (target ≥ 95%), 1.04x short" in (
        report.markdown(figures)
    )
    figures["rows"] = [{**row, "target": {**row["target"], "baseline": "nowhere"}}]
    with pytest.raises(report.MissingFigure):
        report.markdown(figures)


def test_the_fairness_note_judges_the_victims_p99_against_alone() -> None:
    from bench.fairness import notes
    from bench.harness import Sample
    from bench.workloads import Cell

    def cell(key: str, p99: float) -> Cell:
        c = Cell(key, key, "ms", lambda _r: Sample(p99, None, p99, 0.0, None))
        c.samples = [Sample(p99, None, p99, 0.0, None)]
        return c

    cells = [cell("fair_alone_off", 4.0), cell("fair_flood_off_off", 200.0),
             cell("fair_flood_on_off", 40.0), cell("fair_flood_at-1_off", 8.0)]  # fmt: skip
    assert notes(cells) == [
        "fairness, fsync off: the victim's p99 under the flood is 50.0x its p99 alone with the"
        " gate off, 10.0x at the default fair_slots 16, 2.0x at fair_slots 1 (target ≤ 2x: met)."
    ]
