"""Run Redis's own Tcl tests for streams against xstreams through the RESP bridge, and list
every test's outcome.

    python -m tests.tools.redis_suite --port 7379 [--tests ~/.cache/xstreams/redis8-tests]

``--tests`` is the folder ``.ci/redis8-tests`` fills (``runtest`` and ``tests/`` of the Redis
8.x that ``.ci/redis8`` installed; a checkout of the redis repository works too), kept outside
this repository; ``--port`` the bridge's port (``python -m tests.tools.resp_bridge``), in front
of a running service. Needs tclsh 8.6.

Both files run in one invocation of Redis's runner, with ``--durable``: a test that raises (an
unknown command, say) is counted as failed with its error and the file goes on, where without
it the runner would stop the whole file at that test. One client, since every test file
flushes the one keyspace. Tests tagged ``needs:debug`` (DEBUG RELOAD, AOF) are left out, and
the runner itself leaves out those tagged ``external:skip`` against an external server; both
are listed as ignored.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

UNITS = ("unit/type/stream", "unit/type/stream-cgroups")
DEFAULT_TESTS = Path(
    os.environ.get("XSTREAMS_REDIS8_TESTS_DIR", Path.home() / ".cache/xstreams/redis8-tests")
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LINE = re.compile(r"^\[(ok|err|ignore|skip)\]: (.*)$")
_OK_TIME = re.compile(r" \(\d+ ms\)$")
_IN_FILE = re.compile(r" in tests/(unit/\S+)\.tcl$")
# "[ignore]: <name>: Tag: needs:debug denied", or ": Not supported on external server".
_IGNORED = re.compile(r"^(.*?): (Tag: .*|Not supported .*|[^:]*)$")
_SUMMARY_HEAD = re.compile(r"^\*\*\* \[err\]: (.*) in tests/(unit/\S+)\.tcl$")
# What the runner prints last when it ran every file to the end.
_FINISHED = ("All tests passed without errors", "The following tests failed")


@dataclass(frozen=True)
class Outcome:
    """One test's result: ``ok``, ``err`` (an assertion failed or the test raised), ``skip``
    (left out by ``--skiptest``) or ``ignore`` (left out by its tags); ``detail`` is the
    error text of a failure, the reason of an ``ignore``."""

    unit: str
    name: str
    status: str
    detail: str = ""


class SuiteError(RuntimeError):
    """The runner did not get to the end of the files (it stopped, or timed out)."""


def run_suite(
    tests: Path,
    port: int,
    units: Iterable[str] = UNITS,
    skip: Iterable[str] = (),
    timeout: int = 900,
) -> tuple[list[Outcome], str]:
    """Runs ``units`` with Redis's runner against the bridge on ``port``; returns each test's
    outcome in the order run, and the runner's output (colours removed)."""
    cmd = ["./runtest", "--host", "127.0.0.1", "--port", str(port), "--clients", "1"]
    cmd += ["--durable", "--timeout", str(timeout), "--tags", "-needs:debug"]
    for unit in units:
        cmd += ["--single", unit]
    for name in skip:
        cmd += ["--skiptest", name]
    try:
        done = subprocess.run(
            cmd, cwd=tests, capture_output=True, check=False, timeout=timeout + 60
        )
    except subprocess.TimeoutExpired as exc:
        out = _ANSI.sub("", (exc.stdout or b"").decode("utf-8", "replace"))
        raise SuiteError(f"the runner did not finish within {timeout + 60} s:\n{out}") from exc
    out = _ANSI.sub("", done.stdout.decode("utf-8", "replace"))
    if not any(marker in out for marker in _FINISHED):
        err = done.stderr.decode("utf-8", "replace")
        raise SuiteError(f"the runner stopped early (exit {done.returncode}):\n{out}\n{err}")
    return parse(out), out


def parse(out: str) -> list[Outcome]:
    """The outcomes in the runner's output: its progress lines, with each failure's error
    text taken from the summary the runner prints at the end."""
    head, _, summary = out.partition("The following tests failed:")
    details: dict[tuple[str, str], str] = {}
    key: tuple[str, str] | None = None
    for line in summary.splitlines():
        m = _SUMMARY_HEAD.match(line)
        if m:
            key = (m[2], m[1])
            details.setdefault(key, "")
        elif key is not None and not line.startswith("Cleanup: "):
            details[key] += line + "\n"
    outcomes = []
    unit = ""
    for line in head.splitlines():
        if line.startswith("Testing unit/"):
            unit = line.removeprefix("Testing ").strip()
            continue
        m = _LINE.match(line)
        if not m:
            continue
        status, rest = m[1], m[2]
        if status == "ok":
            outcomes.append(Outcome(unit, _OK_TIME.sub("", rest), "ok"))
        elif status == "err":
            f = _IN_FILE.search(rest)
            name, where = (rest[: f.start()], f[1]) if f else (rest, unit)
            outcomes.append(Outcome(where, name, "err", details.get((where, name), "").strip()))
        elif status == "skip":
            outcomes.append(Outcome(unit, rest, "skip"))
        else:
            m = _IGNORED.match(rest)
            name, reason = (m[1], m[2]) if m else (rest, "")
            outcomes.append(Outcome(unit, name, "ignore", reason))
    return outcomes


def first_line(detail: str) -> str:
    """The line of an error text that says what went wrong: Redis's error for a test that
    raised (the Tcl client prints it whole on its second line), else the assertion."""
    lines = [line for line in detail.splitlines() if line.strip()]
    if len(lines) > 1 and not lines[0].startswith("Expected") and "while executing" in detail:
        return lines[1]
    return lines[0] if lines else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=Path, default=DEFAULT_TESTS, help="runtest's folder")
    parser.add_argument("--port", type=int, default=7379, help="the RESP bridge's port")
    parser.add_argument("--skiptest", action="append", default=[], help="a test to leave out")
    parser.add_argument("--verbose", action="store_true", help="list the passed tests too")
    ns = parser.parse_args()
    started = time.monotonic()
    try:
        outcomes, _ = run_suite(ns.tests, ns.port, skip=ns.skiptest)
    except SuiteError as exc:
        print(exc, file=sys.stderr)
        return 2
    totals = {"ok": 0, "err": 0, "ignore": 0, "skip": 0}
    for o in outcomes:
        totals[o.status] += 1
        if o.status == "err":
            print(f"{o.unit}: [err] {o.name}: {first_line(o.detail)}")
        elif o.status != "ok" or ns.verbose:
            print(f"{o.unit}: [{o.status}] {o.name}")
    runs = totals["ok"] + totals["err"]
    took = time.monotonic() - started
    print(
        f"passed {totals['ok']} of {runs} (failed {totals['err']}, "
        f"{totals['ignore']} left out by tag, {totals['skip']} skipped) in {took:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
