"""The documentation site builds with every mkdocs warning an error.

A link to a missing page or anchor, a page left out of the nav, a snippet whose file is gone:
each fails the build, so the site never ships a dead link.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped]  # (PyYAML ships no types; comes with mkdocs)

ROOT = Path(__file__).resolve().parents[2]

# mkdocs comes with the dev extra (`make setup-test`): no skip, so CI never passes without
# building the site.
import mkdocs  # noqa: E402, F401


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True, text=True, timeout=240, cwd=config.parent,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # Material's banner about its successor
    )  # fmt: skip


@pytest.mark.timeout(300)
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING -" not in done.stderr, done.stderr
    assert (tmp_path / "site" / "quickstart" / "index.html").exists()


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("page", "error"),
    [
        ("See [the start](other.md#no-such-heading).\n", "no-such-heading"),
        ("See [a page](missing.md).\n", "missing.md"),
        ("A page links to a page the nav leaves out: [orphan](orphan.md).\n", "orphan.md"),
    ],
    ids=["broken-anchor", "broken-link", "page-outside-nav"],
)
def test_a_broken_link_fails_the_build(tmp_path: Path, page: str, error: str) -> None:
    """The site's own validation settings, on a tiny site holding one bad link."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n" + page)
    (docs / "other.md").write_text("# Other\n\n## A heading\n")
    if "orphan" in page:
        (docs / "orphan.md").write_text("# Orphan\n")  # a page, but not in the nav
    small = {
        "site_name": "t",
        "strict": True,
        "validation": config["validation"],
        "markdown_extensions": ["toc"],
        "nav": ["index.md", "other.md"],
    }
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(small))
    done = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0, done.stderr
    assert error in done.stderr


def test_the_benchmarks_page_includes_the_whole_main_table() -> None:
    """docs/benchmarks.md includes lines of bench/REPORT.md by number: they must still be the
    run line and the main table of "Latest figures", neither cut short nor run over."""
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    match = re.search(r'--8<-- "bench/REPORT.md:(\d+):(\d+)"', page)
    assert match, "the benchmarks page no longer includes bench/REPORT.md by lines"
    first, last = int(match.group(1)), int(match.group(2))
    report = (ROOT / "bench" / "REPORT.md").read_text().splitlines()
    assert report[first - 2].startswith("<!-- figures:start"), report[first - 2]
    assert report[first - 1].startswith("Run "), report[first - 1]
    table = report[first + 1 : last]
    assert table[0].startswith("| workload |") and all(row.startswith("|") for row in table)
    assert report[last] == "", f"the table goes on past line {last}: {report[last]}"
