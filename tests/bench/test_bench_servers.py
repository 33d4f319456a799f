"""bench/servers.py's table: each row puts uvicorn and granian side by side with the ratios the
decision in bench/REPORT.md rests on (rate, rate per server CPU-second, the app thread's cost
per request). No server, no timing."""

from __future__ import annotations

from typing import Any

from bench import servers


def _side(best: float, median: float, cores: float, app_us: float) -> dict[str, Any]:
    return {
        "best": best,
        "median": median,
        "p50_ms_best_round": 10.0,
        "p99_ms_best_round": 90.0,
        "server_cores_median": cores,
        "per_core_median": median / cores,
        "app_thread_us_median": app_us,
    }


FIGURES: dict[str, Any] = {
    "started": "2026-11-23 18:05 UTC",
    "config": {"rounds": 6, "seconds": 4.0, "clients": 50, "pin": None},
    "machine": {
        "cpus": 2, "cpu": "AMD EPYC", "load_average_at_start": "4.0 4.0 4.0",
        "load_average_at_end": "6.0 6.0 6.0", "uvicorn": "0.54.0", "granian": "2.8.7",
        "uvloop": "0.23.0", "httptools": "0.9.0", "wrk": "wrk 4.1.0",
    },
    "rows": [
        {"label": "xstreams XADD, REST", "uvicorn": _side(600, 400, 0.4, 1000),
         "granian": _side(1200, 900, 0.75, 700)},
    ],
}  # fmt: skip


def test_row_shows_both_servers_and_the_ratios() -> None:
    text = servers.markdown(FIGURES)
    row = next(line for line in text.splitlines() if line.startswith("| xstreams XADD, REST"))
    assert "| 600 [400] | 1,200 [900] | 2.00, 2.25 |" in row  # rates, then best and median ratio
    assert "| 1,000 / 1,200 (1.20) |" in row  # per server CPU-second: 400/0.4 and 900/0.75
    assert "| 1,000 / 700 (1.43) |" in row  # the app thread's µs per request, uvicorn / granian
    assert "pinned" not in text


def test_pinned_run_says_so() -> None:
    pinned = {**FIGURES, "config": {**FIGURES["config"], "pin": 1}}
    assert "every server pinned to CPU 1" in servers.markdown(pinned)
