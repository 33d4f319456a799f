"""Running the ``xstreams`` client in process, as a user would type it."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner, Result

from app.cli import cli

runner = CliRunner()


def run(url: str, *args: str, stdin: str | None = None, token: str | None = None) -> Result:
    """``xstreams <args> --url <url>``; stdout and stderr apart (``result.stderr``)."""
    extra = ["--url", url] + (["--token", token] if token else [])
    return runner.invoke(cli, [*args, *extra], input=stdin, env={"NO_COLOR": "1"})


def ok(url: str, *args: str, stdin: str | None = None, token: str | None = None) -> str:
    result = run(url, *args, stdin=stdin, token=token)
    assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr)
    return result.stdout


def json_lines(text: str) -> list[Any]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]
