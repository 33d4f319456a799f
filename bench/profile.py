"""Where a request's time goes: py-spy over the server while one workload runs.

    python -m bench.profile                  # every workload, 6 s each
    python -m bench.profile rest-xadd cmd-xadd --seconds 10 --svg

Each workload starts its own ``xstreams serve`` (as ``python -m bench`` starts it: loopback,
a temporary data folder, log level warning), loads it as ``python -m bench`` does (wrk, one
thread, 50 connections; consume+ack through ``bench.client``), and samples the server with
py-spy (``--nonblocking`` off: samples are exact, the server runs a little slower). It writes
``bench/profiles/<workload>.txt``: the commit, the rate wrk saw, the frames holding the most
time (inclusive, then self), the event loop's own frames folded away. ``--svg`` also writes
a flame graph (``<workload>.svg``, from a second recording). The profiles committed there are
the ones the commit that changed them measured: compare a file across commits with git.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from bench import harness
from bench.client import FIELDS

HERE = Path(__file__).resolve().parent
OUT = HERE / "profiles"
PY_SPY = harness.VENV_BIN / "py-spy"
CONNECTIONS = 50
XADD = ["XADD", "w", "*", *FIELDS]
PAIRS = dict(zip(FIELDS[::2], FIELDS[1::2], strict=True))


@dataclass(frozen=True)
class Workload:
    about: str
    fsync: str
    path: str
    body: bytes | None  # None: GET
    fill: int = 0  # entries appended to stream "w" first
    backend: bool = False  # in front of a redis-server of its own
    consume: str | None = None  # bench.client consume --kind (instead of wrk)


WORKLOADS: dict[str, Workload] = {
    "cmd-xadd": Workload("XADD, one entry, command endpoint", "off", "/", orjson.dumps(XADD)),
    "rest-xadd": Workload(
        "XADD, one entry, REST", "off", "/v1/streams/w/entries", orjson.dumps({"fields": PAIRS})
    ),
    "cmd-xrange100": Workload(
        "XRANGE COUNT 100, command endpoint",
        "off",
        "/",
        orjson.dumps(["XRANGE", "w", "-", "+", "COUNT", "100"]),
        fill=1000,
    ),
    "rest-xrange100": Workload(
        "GET entries count=100, REST", "off", "/v1/streams/w/entries?count=100", None, fill=1000
    ),
    "pipeline-always": Workload(
        "/pipeline of 100 XADD, fsync always", "always", "/pipeline", orjson.dumps([XADD] * 100)
    ),
    "pipeline-off": Workload(
        "/pipeline of 100 XADD, fsync off", "off", "/pipeline", orjson.dumps([XADD] * 100)
    ),
    "rest-batch-always": Workload(
        "REST batch of 100 entries, fsync always",
        "always",
        "/v1/streams/w/entries",
        orjson.dumps({"entries": [{"fields": PAIRS}] * 100}),
    ),
    "consume-cmd": Workload(
        "consume+ack COUNT 100, 10 consumers, command endpoint",
        "off",
        "",
        None,
        400_000,
        False,
        "cmd",
    ),
    "consume-rest": Workload(
        "consume+ack COUNT 100, 10 consumers, REST", "off", "", None, 400_000, False, "rest"
    ),
    "redis-rest-xadd": Workload(
        "XADD, one entry, REST, Redis backend (1 worker)",
        "off",
        "/v1/streams/w/entries",
        orjson.dumps({"fields": PAIRS}),
        backend=True,
    ),
}

# Frames of the event loop, the CLI and uvicorn's start that every sample holds: folded away.
_ROOTS = re.compile(
    r"<module> \(xstreams|main \(app/cli|Typer|Command\.|TyperGroup|_main \(typer|"
    r"Context\.invoke|get_callback|serve \(app/cli|Server\.run|asyncio_run|Runner\.run"
)
# A pool thread waiting for work (py-spy counts it as busy): not the server's time.
_IDLE = re.compile(r"_worker \(\S*concurrent/futures/thread\.py:81\)$")
# py-spy names most files from their sys.path entry already; an absolute path is cut the same way.
_SITE = re.compile(r" \(/(?:[^()]*/)?(?:site-packages|python3\.\d+|work/[^/]+)/")


def summary(raw: str, top: int = 45) -> tuple[int, list[str]]:
    """Inclusive and self shares of the frames in py-spy's raw (collapsed) output."""
    incl: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        count = int(n)
        if _IDLE.search(stack):
            continue
        total += count
        named = (_SITE.sub(" (", f) for f in stack.split(";"))
        frames = [f for f in named if not _ROOTS.search(f)]
        for f in set(frames):
            incl[f] += count
        if frames:
            own[frames[-1]] += count
    lines = ["inclusive %  frame"]
    lines += [f"{100 * n / total:10.1f}  {f}" for f, n in incl.most_common(top)]
    lines += ["", "self %       frame"]
    lines += [f"{100 * n / total:10.1f}  {f}" for f, n in own.most_common(top // 2)]
    return total, lines


def _load(
    fleet: harness.Fleet, w: Workload, server: harness.Server, seconds: float
) -> Callable[[], str]:
    """Start the load in the background; the returned call waits and gives its figure."""
    if w.consume is not None:
        argv = [sys.executable, "-m", "bench.client", "consume", "--port", str(server.port),
                "--kind", w.consume, "--stream", "w", "--group", "g", "--consumers", "10",
                "--count", "100", "--seconds", f"{seconds + 2:g}"]  # fmt: skip
    else:
        script = harness.wrk_script(
            fleet.tmpdir("lua"), "load", "GET" if w.body is None else "POST", w.body
        )
        argv = ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds + 2:g}s", "-s", str(script),
                f"http://{harness.LOOPBACK}:{server.port}{w.path}"]  # fmt: skip
    proc = subprocess.Popen(
        argv, cwd=harness.ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )

    def result() -> str:
        out, _ = proc.communicate(timeout=seconds + 60)
        text = out.decode(errors="replace")
        if w.consume is not None:
            return f"{orjson.loads(text.strip().splitlines()[-1])['rate']:,.0f} entries/s"
        found = re.search(r"Requests/sec:\s*([\d.]+)", text)
        return f"{float(found[1]):,.0f} req/s" if found else text.strip()[-200:]

    return result


def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=harness.ROOT,
                         capture_output=True, text=True, check=False)  # fmt: skip
    dirty = subprocess.run(["git", "status", "--porcelain", "app"], cwd=harness.ROOT,
                           capture_output=True, text=True, check=False).stdout.strip()  # fmt: skip
    return out.stdout.strip() + (" (with uncommitted changes under app/)" if dirty else "")


def profile(name: str, seconds: float, svg: bool) -> None:
    w = WORKLOADS[name]
    with harness.fleet() as fleet:
        backend = None
        if w.backend:
            redis = fleet.redis("redis-backend")
            backend = f"redis://{harness.LOOPBACK}:{redis.port}/0"
        server = fleet.xstreams(name, w.fsync, backend=backend)
        if w.fill:
            harness.client(server, ["fill", "--port", str(server.port), "--stream", "w",
                                    "--entries", str(w.fill)], 300)  # fmt: skip
        if w.consume is not None:
            create = orjson.dumps(["XGROUP", "CREATE", "w", "g", "0"])
            urllib.request.urlopen(f"http://{harness.LOOPBACK}:{server.port}/", create).read()
        result = _load(fleet, w, server, seconds)
        time.sleep(1)  # past the load's start
        with tempfile.TemporaryDirectory() as tmp:
            raw = Path(tmp) / "raw.txt"
            subprocess.run([str(PY_SPY), "record", "-p", str(server.pid), "-d", f"{seconds:g}",
                            "-r", "250", "-f", "raw", "-o", str(raw)],
                           check=True, capture_output=True)  # fmt: skip
            rate = result()
            total, lines = summary(raw.read_text())
        if svg:
            again = _load(fleet, w, server, seconds)
            time.sleep(1)
            subprocess.run([str(PY_SPY), "record", "-p", str(server.pid), "-d", f"{seconds:g}",
                            "-r", "250", "-o", str(OUT / f"{name}.svg")],
                           check=True, capture_output=True)  # fmt: skip
            again()
    head = [
        f"# {name}: {w.about}",
        f"commit {_commit()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"fsync {w.fsync}; load: {rate} while sampled ({total} samples over {seconds:g} s)",
        "",
    ]
    OUT.mkdir(exist_ok=True)
    (OUT / f"{name}.txt").write_text("\n".join(head + lines) + "\n")
    print(f"{name}: {rate}; wrote {OUT / (name + '.txt')}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*", help=f"any of {', '.join(WORKLOADS)}")
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--svg", action="store_true", help="also write a flame graph")
    args = parser.parse_args()
    unknown = set(args.workloads) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workloads: {', '.join(sorted(unknown))}")
    for name in args.workloads or list(WORKLOADS):
        profile(name, args.seconds, args.svg)


if __name__ == "__main__":
    main()
