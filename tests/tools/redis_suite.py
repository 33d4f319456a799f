"""Run Redis's own Tcl tests for streams against xstreams through the RESP bridge, and count.

    python -m tests.tools.redis_suite --redis /tmp/redis-7.0.15 --port 7379

``--redis`` is a checkout of the redis repository (tag 7.0.15: tests/unit/type/stream.tcl and
stream-cgroups.tcl) kept outside this repository; ``--port`` the bridge's port
(``python -m tests.tools.resp_bridge``), in front of a running service. Needs tclsh 8.6.

Redis's runner stops a whole file at the first test that raises (an unknown command, say)
instead of failing an assertion; this driver then runs the file again skipping that test
(counted as failed), until the file runs through, and prints every test's outcome and the
totals. Tests tagged ``needs:debug`` (DEBUG RELOAD, AOF) and ``external:skip`` are skipped by
Redis's runner itself against an external server.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

UNITS = ("unit/type/stream", "unit/type/stream-cgroups")
_OUTCOME = re.compile(r"\[(ok|err|exception|skip)\]: (.*?)(?: \(\d+ ms\))?$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_RAISED = re.compile(r'^"test \{(.*?)\}|^"test "(.*?)"', re.M)


Outcomes = list[tuple[str, str]]


def run_unit(redis: str, port: int, unit: str, skip: list[str]) -> tuple[Outcomes, str]:
    cmd = ["./runtest", "--host", "127.0.0.1", "--port", str(port), "--single", unit]
    cmd += ["--clients", "1", "--timeout", "120", "--tags", "-needs:debug"]
    for name in skip:
        cmd += ["--skiptest", name]
    out = subprocess.run(cmd, cwd=redis, capture_output=True, text=True, check=False).stdout
    out = _ANSI.sub("", out)
    results = []
    for line in out.splitlines():
        m = _OUTCOME.match(line.strip())
        if m:
            results.append((m[1], m[2]))
    return results, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis", required=True, help="a checkout of redis at 7.0.15")
    parser.add_argument("--port", type=int, default=7379, help="the RESP bridge's port")
    parser.add_argument("--verbose", action="store_true")
    ns = parser.parse_args()
    totals = {"ok": 0, "err": 0, "exception": 0}
    for unit in UNITS:
        skip: list[str] = []
        while True:
            results, out = run_unit(ns.redis, ns.port, unit, skip)
            raised = [name for kind, name in results if kind == "exception"]
            if not raised and "exception" in out.lower() and "[ok]" not in out:
                print(out, file=sys.stderr)
                return 2
            if not raised:
                break
            m = _RAISED.search(out)
            name = (m[1] or m[2]) if m else None
            if name is None or name in skip:
                print(out, file=sys.stderr)
                return 2
            print(f"{unit}: raised in {name!r}: {raised[0]}")
            skip.append(name)
        for kind, name in results:
            if kind in totals and (kind != "ok" or ns.verbose):
                print(f"{unit}: [{kind}] {name}")
            if kind in totals:
                totals[kind] += 1
        for name in skip:
            print(f"{unit}: [exception] {name}")
            totals["exception"] += 1
    runs = sum(totals.values())
    print(f"passed {totals['ok']} of {runs} (failed {totals['err']}, raised {totals['exception']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
