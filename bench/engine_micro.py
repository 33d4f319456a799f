"""In-process micro-benchmarks of the engine's per-entry work (issue 38), in CPU time.

    python -m bench.engine_micro                       # every benchmark, 7 runs, min shown
    python -m bench.engine_micro --only xadd-store --runs 3 --json
    python -m bench.engine_micro --callgrind           # instructions per op, under valgrind
    python -m bench.engine_micro --compare . /tmp/mypyc-build --rounds 4   # A, B, A, B ...

No server, no HTTP, no journal I/O: each benchmark drives the code a request runs between
parsing its JSON body and writing its response bytes, so a change to the engine (a compiled
build, a bulk path) shows in figures that do not depend on the machine's load:

- ``xadd-store``: a /pipeline of 100 ``XADD s * f1 v1 f2 v2 f3 v3`` as ``EmbeddedBackend``
  runs it, without the event loop: ``bulk.run_at`` then ``Store.append_run``; per XADD.
- ``xadd-backend``: the same through ``EmbeddedBackend.pipeline`` (an event loop, a timer),
  and ``xadd-reply``: plus the reply items and their JSON bytes, as routes.py builds them.
- ``xrange-store``: ``XRANGE s - + COUNT 100`` by ``Store.execute`` and encoded to the command
  endpoint's bytes (``Shaper`` then ``encode_json``); per entry. ``xrange-backend``: through
  ``EmbeddedBackend.command``.
- ``xreadgroup-ack``: ``XREADGROUP GROUP g c COUNT 100 STREAMS s >``, its reply encoded, then
  ``XACK`` of the 100 IDs it delivered; per entry.

Each run builds a fresh store (with a journal sink that drops records, so the effects are
made as under ``serve``), times ``reps`` operations with ``time.process_time`` and the
minimum over ``runs`` is reported. The module prints which engine modules are compiled
(an extension module is imported before a .py of the same name): the same command measures
the pure source and a mypyc or Cython build put first on PYTHONPATH (bench/notes/i38-mypyc.md).

``--compare`` runs the benchmarks in a process per source tree (its own PYTHONPATH and working
folder: a copy of the repository, compiled or not), the trees in turn, ``rounds`` times, and
shows each tree's minimum: interleaved, so the machine's load weighs on every tree alike.

Under callgrind an op's instructions are the difference between two runs with different
``reps`` over the same set-up (``--callgrind``), so start-up and filling cancel out.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.api.commands.resp import Shaper
from app.api.errors import json_response
from app.backends.embedded import EmbeddedBackend
from app.engine.commands.bulk import run_at
from app.engine.effects import Record
from app.engine.errors import CommandError
from app.engine.ids import StreamID
from app.engine.json_codec import encode_json
from app.engine.store import Store

BATCH = 100
XADD = ["XADD", "s", "*", "f1", "v1", "f2", "v2", "f3", "v3"]
XRANGE = ["XRANGE", "s", "-", "+", "COUNT", str(BATCH)]
XREADGROUP = ["XREADGROUP", "GROUP", "g", "c", "COUNT", str(BATCH), "STREAMS", "s", ">"]
ENGINE_MODULES = ("ids", "listpack", "node", "stream", "store", "keyspace", "groups", "pel")

Op = Callable[[], object]


class _Dropped:
    """A journal sink that keeps nothing: the engine makes its effects as under ``serve``."""

    def append(self, record: Record) -> None:
        return None


class _Timer:
    """``CommandTimer`` as ``Metrics`` is called: a dict of sums, no export."""

    def __init__(self) -> None:
        self.sums: dict[str, float] = {}

    def command(self, name: str, seconds: float) -> None:
        self.sums[name] = self.sums.get(name, 0.0) + seconds

    def counted(self, name: str) -> None:
        return None


def _store() -> Store:
    return Store(journal=_Dropped())


def _lines() -> list[list[str]]:
    """A /pipeline body's commands: separate lists, as parsing JSON makes them."""
    return [list(XADD) for _ in range(BATCH)]


def _fill(store: Store, n: int) -> None:
    lines = _lines()
    for _ in range(-(-n // BATCH)):
        store.append_run(run_at(store.keyspace, lines, 0, serve_between=True))


def _pipeline_replies(results: list[object]) -> bytes:
    """``routes._items`` for replies that are all IDs or errors, then the response bytes."""
    shape_id = Shaper().id
    out = []
    for r in results:
        if type(r) is StreamID:
            out.append({"result": shape_id(r)})
        elif isinstance(r, CommandError):
            out.append({"error": r.text})
    return json_response(out).body


# Each set-up takes (reps it must allow, a loop for async calls) and returns the op and the
# number of entries (XADDs) one op handles.
Setup = Callable[[int, asyncio.AbstractEventLoop], tuple[Op, int]]


def _xadd_store(reps: int, loop: asyncio.AbstractEventLoop) -> tuple[Op, int]:
    store = _store()
    ks = store.keyspace
    lines = _lines()

    def op() -> object:
        i = 0
        out: list[object] = []
        while i < BATCH:
            run = run_at(ks, lines, i, serve_between=True)
            got = store.append_run(run)
            out.extend(got)
            i += len(got)
        return out

    return op, BATCH


def _backend(store: Store) -> EmbeddedBackend:
    return EmbeddedBackend(store, timer=_Timer())


def _xadd_backend(reps: int, loop: asyncio.AbstractEventLoop) -> tuple[Op, int]:
    backend = _backend(_store())
    lines = _lines()
    return (lambda: loop.run_until_complete(backend.pipeline(lines))), BATCH


def _xadd_reply(reps: int, loop: asyncio.AbstractEventLoop) -> tuple[Op, int]:
    backend = _backend(_store())
    lines = _lines()

    def op() -> object:
        return _pipeline_replies(loop.run_until_complete(backend.pipeline(lines)))  # type: ignore[arg-type]

    return op, BATCH


def _encoded(reply: object) -> bytes:
    return encode_json({"result": Shaper()(reply)})  # type: ignore[arg-type]


def _xrange_store(reps: int, loop: asyncio.AbstractEventLoop) -> tuple[Op, int]:
    store = _store()
    _fill(store, 10 * BATCH)
    return (lambda: _encoded(store.execute(XRANGE))), BATCH


def _xrange_backend(reps: int, loop: asyncio.AbstractEventLoop) -> tuple[Op, int]:
    store = _store()
    _fill(store, 10 * BATCH)
    backend = _backend(store)
    return (lambda: _encoded(loop.run_until_complete(backend.command(XRANGE)))), BATCH


def _xreadgroup_ack(reps: int, loop: asyncio.AbstractEventLoop) -> tuple[Op, int]:
    """The IDs acknowledged are the ones the reply delivered, formatted as a client sends
    them back (its JSON decoding is not the server's work, so it is left out)."""
    store = _store()
    _fill(store, (reps + 1) * BATCH)  # and the warm-up op
    store.execute(["XGROUP", "CREATE", "s", "g", "0"])

    def op() -> object:
        reply = store.execute(XREADGROUP)
        _encoded(reply)
        entries = reply[0].entries  # type: ignore[index,union-attr]
        return store.execute(["XACK", "s", "g", *("%d-%d" % e.id for e in entries)])  # noqa: UP031

    return op, BATCH


@dataclass(frozen=True)
class Bench:
    about: str
    setup: Setup
    reps: int  # operations per run (an op handles BATCH entries)


BENCHES: dict[str, Bench] = {
    "xadd-store": Bench("us per XADD, pipeline of 100, store level", _xadd_store, 300),
    "xadd-backend": Bench("us per XADD, pipeline of 100, backend level", _xadd_backend, 300),
    "xadd-reply": Bench("us per XADD, backend + reply JSON bytes", _xadd_reply, 300),
    "xrange-store": Bench("us per entry, XRANGE COUNT 100 + JSON bytes", _xrange_store, 400),
    "xrange-backend": Bench("us per entry, same via backend.command", _xrange_backend, 400),
    "xreadgroup-ack": Bench("us per entry, XREADGROUP 100 + JSON + XACK 100", _xreadgroup_ack, 200),
}


def measure(bench: Bench, reps: int, runs: int, fill_reps: int | None = None) -> list[float]:
    """Microseconds of CPU per entry, one figure a run (fresh state each run)."""
    out = []
    loop = asyncio.new_event_loop()
    try:
        for _ in range(runs):
            op, per = bench.setup(max(reps, fill_reps or 0), loop)
            op()  # warm: the first op of a fresh store makes its stream and group
            t0 = time.process_time()
            for _ in range(reps):
                op()
            out.append((time.process_time() - t0) / (reps * per) * 1e6)
    finally:
        loop.close()
    return out


def compiled() -> dict[str, str]:
    """Which engine modules were imported from an extension (mypyc, Cython), not a .py."""
    kinds = {}
    for name in ENGINE_MODULES:
        mod = importlib.import_module(f"app.engine.{name}")
        path = getattr(mod, "__file__", "") or ""
        kinds[name] = "so" if path.endswith(".so") else "py"
    return kinds


def _callgrind_ir(only: str, reps: int, fill_reps: int) -> int:
    """Instructions of a whole process that runs ``reps`` ops of ``only`` once."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        cmd = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-m",
            "bench.engine_micro",
            "--only",
            only,
            "--reps",
            str(reps),
            "--runs",
            "1",
            "--fill-reps",
            str(fill_reps),
            "--json",
        ]
        subprocess.run(cmd, check=True, capture_output=True, env=os.environ.copy())
        m = re.search(r"^summary:\s*(\d+)", out.read_text(), re.M)
        if m is None:
            raise RuntimeError("no summary line in the callgrind output")
        return int(m[1])


def compare(trees: list[str], rounds: int, runs: int, names: list[str]) -> None:
    """Each tree's figures, measured in turn (A, B, A, B ...) in processes of their own."""
    best: dict[str, dict[str, float]] = {t: {} for t in trees}
    kinds: dict[str, dict[str, str]] = {}
    loads = []
    for _ in range(rounds):
        for tree in trees:
            root = str(Path(tree).resolve())
            cmd = [sys.executable, "-m", "bench.engine_micro", "--json", "--runs", str(runs)]
            cmd += ["--only", *names]
            env = {**os.environ, "PYTHONPATH": root}
            got = json.loads(
                subprocess.run(
                    cmd, cwd=root, env=env, check=True, capture_output=True, text=True
                ).stdout
            )
            kinds[tree] = got["compiled"]
            for name, us in got["us"].items():
                best[tree][name] = min(min(us), best[tree].get(name, float("inf")))
            loads.append(os.getloadavg()[0])
    print(f"load average (1 min) during the rounds: {min(loads):.2f} .. {max(loads):.2f}")
    for tree in trees:
        so = [k for k, v in kinds[tree].items() if v == "so"]
        print(f"{tree}: compiled {', '.join(so) or 'none'}")
    print(f"{'us (min)':16}" + "".join(f"{t[-22:]:>24}" for t in trees))
    base = trees[0]
    for name in names:
        row = f"{name:16}"
        for tree in trees:
            us = best[tree][name]
            ratio = "" if tree == base else f" ({us / best[base][name]:.2f}x)"
            row += f"{f'{us:.3f}{ratio}':>24}"
        print(row)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--only", nargs="*", choices=sorted(BENCHES), help="these benchmarks only")
    p.add_argument("--runs", type=int, default=7, help="runs per benchmark (min is shown)")
    p.add_argument("--reps", type=int, default=0, help="ops per run (0: each one's default)")
    p.add_argument("--fill-reps", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="one JSON object: name -> [us per run]")
    p.add_argument("--callgrind", action="store_true", help="instructions per entry, valgrind")
    p.add_argument("--compare", nargs="+", metavar="TREE", help="source trees, interleaved")
    p.add_argument("--rounds", type=int, default=3, help="with --compare: rounds of A, B ...")
    a = p.parse_args(argv)
    names = a.only or list(BENCHES)
    if a.compare:
        compare(a.compare, a.rounds, a.runs, names)
        return
    if a.callgrind:
        for name in names:
            lo, hi = 20, 60
            ir = _callgrind_ir(name, hi, hi) - _callgrind_ir(name, lo, hi)
            print(f"{name:16} {ir / ((hi - lo) * BATCH):10.0f} Ir per entry")
        return
    results = {
        name: measure(BENCHES[name], a.reps or BENCHES[name].reps, a.runs, a.fill_reps)
        for name in names
    }
    if a.json:
        print(json.dumps({"compiled": compiled(), "us": results}))
        return
    kinds = compiled()
    print("compiled:", ", ".join(k for k, v in kinds.items() if v == "so") or "none")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name, us in results.items():
        median = sorted(us)[len(us) // 2]
        print(f"{name:16} {min(us):7.3f} us  (median {median:.3f})  {BENCHES[name].about}")


if __name__ == "__main__":
    main()
