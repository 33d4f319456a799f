"""openapi/openapi.json as a TypeScript user meets it: openapi-typescript (default options)
generates the types, and tsc type-checks a plain scenario written against them (scenario.ts:
request bodies that leave out every defaulted field, the event streams' problem documents).

The tools are pinned in tests/contract/ts/package-lock.json and installed by ``npm ci`` from
the npm registry. Without node and npm the test skips, unless XSTREAMS_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REQUIRE_SERVICES

TS = Path(__file__).resolve().parent / "ts"
CONTRACT = TS.parents[2] / "openapi" / "openapi.json"


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        msg = "node and npm are needed to check the TypeScript contract"
        if REQUIRE_SERVICES:
            pytest.fail(msg + " and XSTREAMS_REQUIRE_SERVICES=1")
        pytest.skip(msg)
    return npm


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=TS, capture_output=True, text=True, timeout=300, check=False)


def _installed() -> bool:
    """node_modules holds exactly what the lock file pins (npm writes its own copy)."""
    installed = TS / "node_modules" / ".package-lock.json"
    lock = TS / "package-lock.json"
    return installed.exists() and installed.stat().st_mtime >= lock.stat().st_mtime


@pytest.mark.timeout(600)
def test_generated_typescript_types_check_a_plain_scenario() -> None:
    npm = _npm()
    if not _installed():
        done = _run(npm, "ci", "--no-audit", "--no-fund")
        assert done.returncode == 0, done.stderr[-2000:]
    done = _run(npm, "run", "--silent", "generate")
    assert done.returncode == 0, done.stderr[-2000:]
    assert (TS / "generated" / "xstreams.d.ts").stat().st_mtime >= CONTRACT.stat().st_mtime
    done = _run(npm, "run", "--silent", "check")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
