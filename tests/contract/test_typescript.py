"""openapi/openapi.json as a TypeScript user meets it: openapi-typescript (default options)
generates the types, and tsc type-checks a plain scenario written against them (scenario.ts:
request bodies that leave out every defaulted field, the event streams' problem documents).

The tools are pinned in tests/contract/ts/package-lock.json and installed by ``npm ci`` from
the npm registry. Without node and npm the test skips, unless XSTREAMS_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.npm import npm_ci, npm_or_skip

TS = Path(__file__).resolve().parent / "ts"
CONTRACT = TS.parents[2] / "openapi" / "openapi.json"


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=TS, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.timeout(600)
def test_generated_typescript_types_check_a_plain_scenario() -> None:
    npm = npm_or_skip("to check the TypeScript contract")
    npm_ci(npm, TS)
    done = _run(npm, "run", "--silent", "generate")
    assert done.returncode == 0, done.stderr[-2000:]
    assert (TS / "generated" / "xstreams.d.ts").stat().st_mtime >= CONTRACT.stat().st_mtime
    done = _run(npm, "run", "--silent", "check")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
