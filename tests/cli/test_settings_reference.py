"""``xstreams settings``: the settings in force (secrets masked), and the reference page
docs/operations/settings.md, generated from the model and checked so it never drifts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from markdown_it import MarkdownIt

from app.cli.serve_options import OPTIONS, PANELS
from app.cli.settings_reference import DOC, markdown

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "app.cli", "settings"]


def test_the_committed_page_is_what_the_model_generates() -> None:
    assert (ROOT / DOC).read_text() == markdown(), "run `xstreams settings --markdown`"


def test_check_fails_on_a_stale_page(tmp_path: Path) -> None:
    out = tmp_path / "settings.md"
    subprocess.run([*CLI, "--markdown", "-o", str(out)], check=True, capture_output=True)
    assert out.read_text() == markdown()
    ok = subprocess.run([*CLI, "--markdown", "--check", "-o", str(out)], capture_output=True)
    assert ok.returncode == 0
    out.write_text(out.read_text().replace("Address to listen on.", "Where to listen."))
    stale = subprocess.run(
        [*CLI, "--markdown", "--check", "-o", str(out)], capture_output=True, text=True
    )
    assert stale.returncode == 1 and "out of date" in stale.stderr


def test_the_page_is_one_valid_table_per_heading() -> None:
    """Every row keeps its four cells (pipes in the text escaped) and no text turns into
    emphasis or HTML (``<data-dir>``, ``max_age_ms``, ``logs-*``)."""
    md = MarkdownIt("commonmark").enable("table")
    tokens = md.parse(markdown())
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings == ["Settings reference", *PANELS]
    rows = []
    cells: list[str] = []
    for i, t in enumerate(tokens):
        if t.type == "tr_open":
            cells = []
        elif t.type in ("td_open", "th_open"):
            cells.append(tokens[i + 1].content)
        elif t.type == "tr_close":
            rows.append(cells)
    body = [r for r in rows if r[0] != "Flag"]
    assert len(body) == len(OPTIONS)
    assert all(len(r) == 4 for r in rows)
    for row, option in zip(body, OPTIONS, strict=True):
        assert option.flag in row[0] and option.envvar in row[1]
    html = md.render(markdown())
    assert "<em>" not in html and "<strong>" not in html and "<data-dir>" not in html
    assert "max_age_ms" in html and "always|everysec|off" not in html


def test_settings_prints_the_values_in_force_with_secrets_masked() -> None:
    named = {o.envvar for o in OPTIONS}
    env = {
        **{k: v for k, v in os.environ.items() if k.upper() not in named},
        "COLUMNS": "100",
        "TERM": "dumb",
        "XSTREAMS_TOKEN": "s3cret-token",
        "XSTREAMS_JWT_SECRET": "s3cret-jwt",
        "XSTREAMS_BACKEND": "redis://user:s3cret-pw@redis.example:6380/2",
        "XSTREAMS_SSE_RETRY_MS": "1234",
    }
    done = subprocess.run(CLI, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert "s3cret" not in done.stdout
    assert "redis://user:***@redis.example:6380/2" in done.stdout
    lines = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines() if line.strip()}
    assert lines["--sse-retry-ms"] == ["1234", "XSTREAMS_SSE_RETRY_MS"]
    assert lines["--token"] == ["***", "XSTREAMS_TOKEN"]
    assert lines["--port"] == ["8000", "default"]
    assert all(o.flag in lines for o in OPTIONS)
