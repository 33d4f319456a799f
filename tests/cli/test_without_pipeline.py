"""Without the optional pipeline extra, the pipeline commands say what to install, and the
tests that need no Spark still collect."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli import cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "args",
    [["archive", "--stream", "s", "--before", "1d", "--out", "x"], ["report", "archive"]],
)
def test_a_missing_extra_is_one_line_and_status_2(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else real(name, *a)
    )
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 2
    assert done.stderr == (
        "error: pyspark not installed: pip install 'xstreams[pipeline]' (or make setup-pipeline)\n"
    )


# Run pytest as if pyarrow and PySpark were not installed (an import of either fails).
_WITHOUT_PIPELINE = (
    "import sys; sys.modules.update(pyarrow=None, pyspark=None); import pytest; "
    "sys.exit(pytest.main(sys.argv[1:]))"
)


@pytest.mark.slow  # two pytest runs in subprocesses
@pytest.mark.parametrize("require", [False, True], ids=["skip", "required"])
def test_the_pipeline_tests_collect_without_the_extra(require: bool) -> None:
    """``pytest -m "not spark"`` collects without pyarrow or PySpark; under
    ``XSTREAMS_REQUIRE_SERVICES=1`` their absence fails the run instead (CI never skips)."""
    env = {k: v for k, v in os.environ.items() if k != "XSTREAMS_REQUIRE_SERVICES"}
    if require:
        env["XSTREAMS_REQUIRE_SERVICES"] = "1"
    args = ["--collect-only", "-q", "-p", "no:cacheprovider", "-m", "not spark", "tests/pipeline"]
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_PIPELINE, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if require:
        assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout
        assert "pyarrow is not installed" in done.stdout
        assert "XSTREAMS_REQUIRE_SERVICES=1" in done.stdout
    else:
        assert done.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, done.stdout
        assert "error" not in done.stdout.lower(), done.stdout
        assert "skipped" in done.stdout.lower()  # the modules that need the extra, said so
