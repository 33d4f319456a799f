"""Without the optional pipeline extra, the pipeline commands say what to install."""

from __future__ import annotations

import importlib.util

import pytest
from typer.testing import CliRunner

from app.cli import cli


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
