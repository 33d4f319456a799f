"""Node packages pinned in a folder of the tests (a package.json and its package-lock.json),
installed by ``npm ci`` from the npm registry when node_modules is older than the lock file.
Without node and npm the tests that need them skip, unless XSTREAMS_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REQUIRE_SERVICES

INSTALL_TIMEOUT_S = 300


def npm_or_skip(purpose: str) -> str:
    """The npm executable; skips (fails under XSTREAMS_REQUIRE_SERVICES=1) without node."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        msg = f"node and npm are needed {purpose}"
        if REQUIRE_SERVICES:
            pytest.fail(msg + " and XSTREAMS_REQUIRE_SERVICES=1")
        pytest.skip(msg)
    return npm


def installed(folder: Path) -> bool:
    """node_modules holds exactly what the lock file pins (npm writes its own copy)."""
    copy = folder / "node_modules" / ".package-lock.json"
    lock = folder / "package-lock.json"
    return copy.exists() and copy.stat().st_mtime >= lock.stat().st_mtime


def npm_ci(npm: str, folder: Path) -> None:
    """Installs the lock file's packages into ``folder`` unless they are there already. Two
    test files may share a folder and run in two workers at once: one installs, under a file
    lock, while the other waits and then finds the packages there (two ``npm ci`` in one
    folder remove each other's files)."""
    with (folder / ".npm-install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if installed(folder):
            return
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
