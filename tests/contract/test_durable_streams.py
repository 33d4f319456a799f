"""The public Durable Streams conformance suite (``@durable-streams/server-conformance-tests``,
pinned in tests/contract/ds/package-lock.json with vitest, installed by ``npm ci``) against the
/ds surface of an ``xstreams serve``: on the embedded engine, and in front of Redis.

It prints the pass count per group of the suite and fails when fewer than ``FLOOR`` tests
pass: every test the suite runs by default (the 6 it skips are the reserved subscription APIs,
run only with its ``subscriptions`` option, which xstreams does not serve). Marked slow (about
a minute per backend): ``make test-fast`` leaves it out. Without node and npm it skips, unless
XSTREAMS_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import REQUIRE_SERVICES
from tests.support.npm import npm_ci, npm_or_skip
from tests.support.targets import EMBEDDED, REDIS, Frontend, redis_url, require_redis

DS = Path(__file__).resolve().parent / "ds"
FLOOR = 332  # conformance tests that must pass on each backend (of 338; 6 skipped)
RUN_TIMEOUT_S = 1500
NODE_MAJOR = 20


def _node_or_skip() -> None:
    """vitest 4 needs node 20 or later (Debian bookworm's nodejs is 18)."""
    done = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
    major = int(done.stdout.strip().lstrip("v").split(".")[0] or 0)
    if major < NODE_MAJOR:
        msg = f"node {NODE_MAJOR} or later is needed by vitest 4 (found {done.stdout.strip()})"
        if REQUIRE_SERVICES:
            pytest.fail(msg + " and XSTREAMS_REQUIRE_SERVICES=1")
        pytest.skip(msg)


def _tally(report: dict[str, object]) -> tuple[int, int, dict[str, Counter[str]]]:
    """Passed, total, and per top-level group of the suite a count of each status."""
    groups: dict[str, Counter[str]] = {}
    passed = total = 0
    for file in report.get("testResults", []):  # type: ignore[attr-defined]
        for case in file.get("assertionResults", []):
            group = (case.get("ancestorTitles") or ["(top)"])[0]
            groups.setdefault(group, Counter())[case["status"]] += 1
            total += 1
            passed += case["status"] == "passed"
    return passed, total, groups


@pytest.mark.server
@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S + 400)
@pytest.mark.parametrize("name", [EMBEDDED, pytest.param(REDIS, marks=pytest.mark.redis)])
def test_conformance_suite(name: str, tmp_path: Path) -> None:
    npm = npm_or_skip("to run the Durable Streams conformance suite")
    _node_or_skip()
    backend: tuple[str, ...] = ()
    if name == REDIS:
        require_redis()
        backend = ("--backend", redis_url())
    npm_ci(npm, DS)
    # CORS as a browser page on another origin meets it (the suite sends a preflight).
    server = Frontend(tmp_path / "data", "--cors-origin", "*", *backend)
    try:
        done = subprocess.run(
            [npm, "run", "--silent", "conformance"],
            cwd=DS,
            env={**os.environ, "DS_BASE_URL": server.url + "/ds"},
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
    finally:
        server.stop()
    results = DS / "results.json"
    assert results.exists(), (done.stdout + done.stderr)[-4000:]
    passed, total, groups = _tally(json.loads(results.read_text()))
    lines = [f"{name}: {passed}/{total} Durable Streams conformance tests pass"]
    lines += [f"  {group}: {dict(counts)}" for group, counts in groups.items()]
    print("\n".join(lines))
    assert passed >= FLOOR, "\n".join(lines)
