"""``xstreams serve --help`` at 80 columns: every flag whole, each with its default and its
variable, under its heading (issue 39: rows read ``--webhook-allow-…``)."""

from __future__ import annotations

import os
import subprocess
import sys

from app.cli.serve_options import OPTIONS, PANELS


def _help(columns: int) -> str:
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "dumb"}
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--help"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_help_fits_80_columns_and_cuts_nothing() -> None:
    text = _help(80)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in text
    words = set(text.replace("│", " ").split())
    for option in OPTIONS:
        assert option.flag in words, option.flag  # each flag whole, on one line
        if option.kind == "flag":
            assert f"--no-{option.flag[2:]}" in words
        assert option.envvar in text.replace("[env: ", "").replace("]", " "), option.envvar
    for panel in PANELS:
        assert any(f"─ {panel} ─" in line for line in lines), panel
    for sample in (
        "[default: 127.0.0.1]",
        "[default: 8000]",
        "[default: always]",
        "[default: embedded]",
        "[env: XSTREAMS_WEBHOOK_ALLOW_HOSTS]",
        "[env: XSTREAMS_JWT_PUBLIC_KEY_FILE]",
        "--webhook-allow-private",
    ):
        assert sample in text, sample
    assert "--fd" not in words and "--supervisor" not in words  # the workers' flags stay hidden


def test_help_on_a_narrow_terminal_still_cuts_no_flag() -> None:
    text = _help(60)
    assert "…" not in text
    words = set(text.replace("│", " ").split())
    assert all(o.flag in words for o in OPTIONS)
