"""``python -m bench.servers [--quick]``: the same requests under uvicorn and under granian.

Issue 13, part 6: is the HTTP server what holds xstreams back? Four servers run side by side:
the bare ceiling app (bench/bare_app.py) and xstreams (``--fsync off``), each once under
uvicorn as ``xstreams serve`` runs it (its ``Server`` subclass and httptools protocol with the
read deadlines and the connection cap) and once under granian (bench/granian_app.py: ASGI,
one worker, uvloop, HTTP/1). The same wrk load (one thread, 50 keep-alive connections, the
bodies of bench/workloads.py) goes to each.

The machine is shared and noisy, so the two servers of a pair are measured back to back,
alternating which goes first each round (ABBA...), and the table shows each cell's best round
beside its median: compare within a row, not across runs. Server cores are the server's
process and its children (granian serves from a worker process), so a server that gets its
rate by using the second core shows it.

    .venv/bin/python -m bench.servers --quick       # ~2 minutes; needs wrk and granian
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from bench import harness
from bench.client import FIELDS
from bench.harness import LOOPBACK, Fleet, Sample, Server
from bench.machine import facts
from bench.workloads import CLIENTS, log_stderr

HERE = Path(__file__).resolve().parent
RANGE_ENTRIES = 10_000


def _thread_cpu_seconds(pid: int) -> dict[int, float]:
    """CPU seconds of every thread of ``pid`` and its live descendants (granian's worker is
    a child), by thread id."""
    found: dict[int, float] = {}
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
                found[int(task.name)] = (int(fields[11]) + int(fields[12])) / harness.TICKS
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found


def _pin_tree(pid: int, cpu: int) -> None:
    """Every thread of ``pid`` and its descendants onto ``cpu`` (affinity is per thread)."""
    todo = [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").iterdir():
            os.sched_setaffinity(int(task.name), {cpu})
            todo += [int(c) for c in (task / "children").read_text().split()]


class TreeServer(Server):
    """A ``Server`` whose CPU is its whole process tree's, and which remembers each thread's
    between the last two readings (the harness reads it before and after a load run)."""

    previous: dict[int, float]
    latest: dict[int, float]

    def cpu_seconds(self) -> float:
        self.previous, self.latest = self.latest, _thread_cpu_seconds(self.pid)
        return sum(self.latest.values())

    def busiest_thread_seconds(self) -> float:
        """The CPU seconds of the busiest thread during the last run: the Python thread that
        runs the app, in both servers (granian's tokio thread does the HTTP I/O beside it)."""
        return max(t - self.previous.get(tid, 0.0) for tid, t in self.latest.items())


def _tree(server: Server) -> TreeServer:
    tree = TreeServer(server.name, server.port, server.proc)
    tree.previous = tree.latest = {}
    return tree


def _ready(server: Server) -> Server:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(f"{server.name} exited with {server.proc.returncode}")
        try:
            url = f"http://{LOOPBACK}:{server.port}/readyz"
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return server
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{server.name} never became ready")


def granian(fleet: Fleet, name: str, bare: bool, embed: bool = False) -> Server:
    """bench/granian_app.py on a free port: the bare app, or xstreams with ``--fsync off``
    (in granian's embedded server with ``embed``)."""
    port = harness.free_port()
    argv = [str(harness.VENV_BIN / "python"), "-m", "bench.granian_app", "--port", str(port)]
    if embed:
        argv.append("--embed")
    env = {"XSTREAMS_LOG_LEVEL": "warning"}
    if bare:
        argv.append("--bare")
    else:
        env |= {
            "XSTREAMS_DATA_DIR": str(fleet.tmpdir(name)),
            "XSTREAMS_FSYNC": "off",
            "XSTREAMS_SNAPSHOT_ON_SHUTDOWN": "false",
        }
    server = fleet._spawn(name, port, argv, env)
    harness._wait_port(port, server.proc, 60)
    return server if bare else _ready(server)


@dataclass
class Pair:
    """One request shape, measured under both servers."""

    label: str
    path: str
    script: Path
    servers: dict[str, TreeServer]  # "uvicorn", "granian"
    samples: dict[str, list[Sample]] = field(default_factory=lambda: {"uvicorn": [], "granian": []})
    # CPU µs per request of the busiest thread (the app's Python thread), one per round
    app_thread_us: dict[str, list[float]] = field(
        default_factory=lambda: {"uvicorn": [], "granian": []}
    )


def _pairs(servers: dict[str, TreeServer], scripts: Path) -> list[Pair]:
    pairs_of_fields = dict(zip(FIELDS[::2], FIELDS[1::2], strict=True))
    get = harness.wrk_script(scripts, "get", "GET", None)
    xadd = harness.wrk_script(scripts, "xadd", "POST", orjson.dumps(["XADD", "w1", "*", *FIELDS]))
    rest = harness.wrk_script(scripts, "rest", "POST", orjson.dumps({"fields": pairs_of_fields}))
    rng = "/v1/streams/r/entries?start=-&end=%2B&count=100"
    shapes = [
        ("bare GET /", "bare", "/", get),
        ("bare POST / (XADD body)", "bare", "/", xadd),
        ("xstreams XADD, command POST /", "xs", "/", xadd),
        ("xstreams XADD, REST POST /v1/streams/s/entries", "xs", "/v1/streams/s/entries", rest),
        ("xstreams XRANGE COUNT 100, REST GET", "xs", rng, get),
    ]
    return [
        Pair(label, path, s, {n: servers[f"{kind}-{n}"] for n in ("uvicorn", "granian")})
        for label, kind, path, s in shapes
    ]


def measure(pairs: list[Pair], rounds: int, seconds: float) -> None:
    """Round r runs every pair, uvicorn first on even rounds and granian first on odd ones."""
    for r in range(rounds):
        for pair in pairs:
            order = ["uvicorn", "granian"]
            for name in order if r % 2 == 0 else order[::-1]:
                server = pair.servers[name]
                sample = harness.wrk(server, pair.path, pair.script, CLIENTS, seconds, 1)
                pair.samples[name].append(sample)
                app_us = server.busiest_thread_seconds() * 1e6 / max(sample.rate * seconds, 1)
                pair.app_thread_us[name].append(app_us)
                log_stderr(
                    f"  round {r + 1}/{rounds} {pair.label} [{name}]: {sample.rate:,.0f} req/s"
                    f" p99 {sample.p99_ms:.1f} ms, server {sample.server_cpu:.2f} cores"
                    f", app thread {app_us:.0f} µs/req, errors {sample.errors}"
                )


def _summary(samples: list[Sample], app_thread_us: list[float]) -> dict[str, Any]:
    best = max(samples, key=lambda s: s.rate)
    return {
        # What a spare core cannot help with: the app's own thread, per request.
        "app_thread_us_median": statistics.median(app_thread_us),
        "app_thread_us": app_thread_us,
        "best": best.rate,
        "median": statistics.median(s.rate for s in samples),
        "p50_ms_best_round": best.p50_ms,
        "p99_ms_best_round": best.p99_ms,
        "p99_ms_median": statistics.median(s.p99_ms or 0.0 for s in samples),
        "server_cores_median": statistics.median(s.server_cpu or 0.0 for s in samples),
        # Requests per CPU-second of the server: on a machine busy with other work, a server
        # with more threads gets a bigger share of the cores; this is the rate per core used.
        "per_core_median": statistics.median(s.rate / (s.server_cpu or 1e-9) for s in samples),
        "client_cores_max": max(s.client_cpu for s in samples),
        "errors": sum(s.errors for s in samples),
        "samples": [asdict(s) for s in samples],
    }


def markdown(figures: dict[str, Any]) -> str:
    cfg = figures["config"]
    lines = [
        f"Run {figures['started']}: {cfg['rounds']} rounds of {cfg['seconds']:g} s per cell, "
        f"wrk -t1 -c{cfg['clients']}, uvicorn and granian back to back in alternating order"
        + (f", every server pinned to CPU {cfg['pin']}" if cfg.get("pin") is not None else "")
        + (", xstreams in granian's embedded server" if cfg.get("embed") else "")
        + "; best round [median].",
        "",
        "| request | uvicorn req/s | granian req/s | granian/uvicorn (best, median) "
        "| p50 / p99 ms uvicorn | p50 / p99 ms granian | server cores u / g "
        "| req per server CPU-s u / g (ratio) | app thread µs/req u / g (ratio) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in figures["rows"]:
        u, g = row["uvicorn"], row["granian"]
        lines.append(
            f"| {row['label']} | {u['best']:,.0f} [{u['median']:,.0f}] "
            f"| {g['best']:,.0f} [{g['median']:,.0f}] "
            f"| {g['best'] / u['best']:.2f}, {g['median'] / u['median']:.2f} "
            f"| {u['p50_ms_best_round']:.1f} / {u['p99_ms_best_round']:.1f} "
            f"| {g['p50_ms_best_round']:.1f} / {g['p99_ms_best_round']:.1f} "
            f"| {u['server_cores_median']:.2f} / {g['server_cores_median']:.2f} "
            f"| {u['per_core_median']:,.0f} / {g['per_core_median']:,.0f} "
            f"({g['per_core_median'] / u['per_core_median']:.2f}) "
            f"| {u['app_thread_us_median']:,.0f} / {g['app_thread_us_median']:,.0f} "
            f"({u['app_thread_us_median'] / g['app_thread_us_median']:.2f}) |"
        )
    m = figures["machine"]
    lines += [
        "",
        f"Machine: {m['cpus']} cpus ({m['cpu']}), load average {m['load_average_at_start']} "
        f"at start, {m['load_average_at_end']} at end; uvicorn {m['uvicorn']}, granian "
        f"{m['granian']}, uvloop {m['uvloop']}, httptools {m['httptools']}, {m['wrk']}.",
        "Server cores and req per server CPU-s are medians over rounds; cores count the "
        "server's process and its children (granian's worker, its Rust threads included). "
        "App thread: CPU per request of the server's busiest thread, the Python one that runs "
        "the app (median over rounds); its ratio (uvicorn / granian) bounds what granian gains "
        "when a spare core can take its Rust thread.",
    ]
    return "\n".join(lines) + "\n"


def run(rounds: int, seconds: float, pin: int | None = None, embed: bool = False) -> dict[str, Any]:
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = facts(
        ("xstreams", "fastapi", "uvicorn", "granian", "uvloop", "httptools"),
        {"wrk": ["wrk", "-v"]},
    )
    machine["wrk"] = machine["wrk"].split(" [")[0]
    with harness.fleet() as fleet:
        log_stderr("starting the bare app and xstreams (fsync off), under uvicorn and granian")
        servers = {
            "bare-uvicorn": _tree(fleet.bare()),
            "bare-granian": _tree(granian(fleet, "bare-granian", bare=True)),
            "xs-uvicorn": _tree(fleet.xstreams("xs-uvicorn", "off")),
            "xs-granian": _tree(granian(fleet, "xs-granian", bare=False, embed=embed)),
        }
        if pin is not None:  # after start: granian's worker and threads exist by now
            for s in servers.values():
                _pin_tree(s.pid, pin)
        for name in ("xs-uvicorn", "xs-granian"):
            s = servers[name]
            harness.client(
                s,
                ["fill", "--port", str(s.port), "--stream", "r", "--entries", str(RANGE_ENTRIES)],
                timeout=300,
            )
        pairs = _pairs(servers, fleet.tmpdir("lua"))
        measure(pairs, rounds, seconds)
    machine["load_average_at_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return {
        "started": started,
        "config": {
            "rounds": rounds,
            "seconds": seconds,
            "clients": CLIENTS,
            "pin": pin,
            "embed": embed,
        },
        "machine": machine,
        "rows": [
            {"label": p.label}
            | {n: _summary(p.samples[n], p.app_thread_us[n]) for n in ("uvicorn", "granian")}
            for p in pairs
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.servers", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="4 rounds of 2 s (else 6 of 4 s)")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument(
        "--pin",
        type=int,
        default=None,
        metavar="CPU",
        help="run every server on this one CPU (the same core budget for both)",
    )
    parser.add_argument(
        "--embed", action="store_true",
        help="xstreams in granian's embedded server (bench.granian_app --embed)",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=HERE / "results", help="output folder")
    args = parser.parse_args()
    rounds = args.rounds or (4 if args.quick else 6)
    seconds = 2.0 if args.quick else 4.0
    try:
        figures = run(rounds, seconds, args.pin, args.embed)
    except KeyboardInterrupt:
        log_stderr("interrupted: servers stopped")
        raise SystemExit(130) from None
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "servers" + ("" if args.pin is None else f"-pin{args.pin}")
    stem += "-embed" if args.embed else ""
    (args.out / f"{stem}.json").write_text(json.dumps(figures, indent=2) + "\n")
    table = markdown(figures)
    (args.out / f"{stem}.md").write_text(table)
    print(table)
    log_stderr(f"wrote {args.out}/{stem}.json and {stem}.md")


if __name__ == "__main__":
    main()
