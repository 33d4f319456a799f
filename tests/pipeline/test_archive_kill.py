"""kill -9 of a real ``xstreams archive`` process, then a rerun: nothing lost, nothing twice.

The in-process crash tests stop the job at chosen steps; this one kills the whole process group
(the Python driver and Spark's JVM) while it works, at points named by the job's own log lines,
as an operator's Ctrl-C or an OOM killer would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline.conftest import need

# app.pipeline imports pyarrow: without it, skip the module (or fail: see conftest).
need("pyarrow")

from app.pipeline.archive import archive  # noqa: E402
from app.pipeline.report import read_archive  # noqa: E402
from tests.conftest import Commands, Server  # noqa: E402
from tests.support.targets import every_target_with  # noqa: E402

DAY0 = 1_793_491_200_000  # 2026-11-01 00:00 UTC
N, CUT = 3000, 2000


@pytest.mark.timeout(300)
@every_target_with("kill_at", ["read ", "committed run"], on_redis=[])
def test_a_killed_run_is_repaired_by_the_next(
    spark: Any, server: Server, xs: Commands, tmp_path: Path, kill_at: str
) -> None:
    step = 3 * 86_400_000 // N  # three UTC days
    ids = [f"{DAY0 + i * step}-0" for i in range(N)]
    for chunk in range(0, N, 500):
        batch = [["XADD", "k", i, "n", str(n)] for n, i in enumerate(ids[chunk : chunk + 500])]
        assert xs.client.post("/pipeline", json=batch).status_code == 200
    out = tmp_path / "archive"
    argv = [sys.executable, "-m", "app.cli", "archive", "--stream", "k", "--before", ids[CUT],
            "--out", str(out), "--url", server.url, "--trim", "--master", "local[2]",
            "--conf", "spark.ui.showConsoleProgress=false",
            "--conf", "spark.ui.enabled=false"]  # fmt: skip
    seen = []
    with subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, start_new_session=True) as proc:
        assert proc.stderr is not None
        for line in proc.stderr:
            seen.append(line)
            if kill_at in line:
                os.killpg(proc.pid, signal.SIGKILL)
                break
        proc.wait(60)
    assert proc.returncode == -signal.SIGKILL, "".join(seen[-20:])

    result = archive(spark, server.url, "k", ids[CUT], str(out), trim=True)
    assert result.archived_through is not None
    rows = read_archive(spark, str(out)).collect() if any(out.rglob("*.parquet")) else []
    kept = sorted(int(r.id.split("-")[0]) for r in rows)
    assert len(kept) == len(set(kept)) == CUT  # every archived entry exactly once
    assert [f"{ms}-0" for ms in kept] == ids[:CUT]
    assert [e[0] for e in xs("XRANGE", "k", "-", "+")] == ids[CUT:]  # trimmed exactly that
    if kill_at == "committed run":
        assert result.rows == 0 and len(result.recovered) == 1  # rolled forward, not redone
