"""Finds the runnable examples of a Markdown page and runs them against a live service.

The rules (docs/contributing-docs.md says them for writers):

- Blocks fenced as ``sh`` or ``bash`` run with bash ``set -euo pipefail``; ``curl`` is a
  function adding ``--fail-with-body -sS``, so an HTTP error status fails the block.
  Blocks fenced as ``python`` run with this interpreter. Other fences are shown, not run.
- Pages use the address a new user has, ``http://127.0.0.1:8000``; it is rewritten to the
  live service's address (``localhost:8000`` too) before a block runs.
- An HTML comment on the line before the fence changes that block:
  ``<!-- example: not-run (reason) -->`` shows it without running it (the reason is
  required), ``<!-- example: fails -->`` requires it to fail (an error answer shown on
  purpose), ``<!-- example: needs spark -->`` (or ``redis``, ``postgres``) runs it only where
  that service is (``XSTREAMS_REQUIRE_SERVICES=1``: it must be). ``<!-- example: server --flag
  value -->`` on a page's first line gives the flags its service starts with
  (``$XSTREAMS_DOCS_REDIS_URL``: the test run's Redis database, see test_examples.py).
- A page's blocks run in document order in one working directory, which holds the service's
  data folder as ``data`` (so ``xstreams keys ...`` acts on the live service's keys).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

SHELL_LANGS = {"sh", "bash"}
PYTHON_LANGS = {"python"}
MARKER = re.compile(r"^\s*<!--\s*example:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
# The address a page uses, in the forms a page may write it (longest first).
PAGE_ADDRESSES = (
    "http://127.0.0.1:8000",
    "http://localhost:8000",
    "127.0.0.1:8000",
    "localhost:8000",
)
BLOCK_TIMEOUT_S = 60
NEEDS_TIMEOUT_S = {"spark": 300}  # a Spark session alone takes tens of seconds to start
SHELL_PRELUDE = """set -euo pipefail
curl() { command curl --fail-with-body -sS "$@"; }
"""


class PageError(ValueError):
    """A page whose markers break the rules (a not-run without reason, an unknown marker)."""


class ExampleFailed(AssertionError):
    """A block that did not do what its page says: its text, exit status and output."""


@dataclass
class Block:
    """One fenced block: where it is, its language, its text and what its marker says."""

    path: Path
    line: int
    lang: str
    text: str
    mode: str = "run"  # run, fails, not-run
    reason: str = ""
    needs: str = ""  # a service the block needs: redis, postgres, spark

    @property
    def runnable(self) -> bool:
        return self.lang in SHELL_LANGS | PYTHON_LANGS and self.mode != "not-run"


@dataclass
class Page:
    """A page's blocks in document order and the flags its service needs."""

    path: Path
    blocks: list[Block] = field(default_factory=list)
    server_flags: list[str] = field(default_factory=list)

    @property
    def runnable(self) -> list[Block]:
        return [b for b in self.blocks if b.runnable]


def parse_page(path: Path) -> Page:
    """Reads a page's fenced blocks and markers; a marker that breaks the rules raises."""
    page = Page(path)
    lines = path.read_text().splitlines()
    previous = ""  # the last non-blank line outside a fence
    i = 0
    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line)
        if m and m.group(1).startswith("server"):
            if i != 0:
                raise PageError(f"{path}:{i + 1}: the server marker goes on the page's first line")
            page.server_flags = shlex.split(m.group(1))[1:]
        fence = FENCE.match(line)
        if not fence:
            if line.strip():
                previous = line
            i += 1
            continue
        indent, ticks, lang = fence.groups()
        start = i + 1
        i += 1
        body: list[str] = []
        while i < len(lines) and not lines[i].strip().startswith(ticks):
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        block = Block(path, start, lang.lower(), "\n".join(body) + "\n")
        marker = MARKER.match(previous)
        if marker and marker.group(1).startswith("needs"):
            block.needs = _needs(path, start, marker.group(1))
        elif marker and not marker.group(1).startswith("server"):
            block.mode, block.reason = _marker(path, start, marker.group(1))
        page.blocks.append(block)
        previous = ""
    return page


def _marker(path: Path, line: int, text: str) -> tuple[str, str]:
    """The mode and reason a block marker gives, or PageError naming the rule it breaks."""
    if text == "fails":
        return "fails", ""
    m = re.fullmatch(r"not-run(?:\s*\((.*)\))?", text)
    if m:
        reason = (m.group(1) or "").strip()
        if not reason:
            raise PageError(
                f"{path}:{line}: `not-run` needs a reason: <!-- example: not-run (why) -->"
            )
        return "not-run", reason
    raise PageError(f"{path}:{line}: unknown example marker {text!r}")


def _needs(path: Path, line: int, text: str) -> str:
    """The service a ``needs`` marker names, or PageError."""
    name = text.removeprefix("needs").strip()
    if name not in SERVICES:
        raise PageError(f"{path}:{line}: `needs` takes one of {sorted(SERVICES)}, not {name!r}")
    return name


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


SERVICES: dict[str, Callable[[], bool]] = {
    "redis": lambda: _listening(6379),
    "postgres": lambda: _listening(5432),
    "spark": lambda: importlib.util.find_spec("pyspark") is not None and bool(shutil.which("java")),
}


def rewrite(text: str, url: str) -> str:
    """The block's text with the page's address replaced by the live service's."""
    host = url.split("://", 1)[1]
    for address in PAGE_ADDRESSES:
        text = text.replace(address, url if address.startswith("http") else host)
    return text


def run_block(block: Block, url: str, workdir: Path, env: dict[str, str]) -> None:
    """Runs one block in workdir; raises ExampleFailed unless it did what its mode says."""
    text = rewrite(block.text, url)
    if block.needs and not SERVICES[block.needs]():
        if os.environ.get("XSTREAMS_REQUIRE_SERVICES") == "1":
            raise ExampleFailed(f"{block.path}:{block.line}: needs {block.needs}, which is absent")
        return
    timeout_s = NEEDS_TIMEOUT_S.get(block.needs, BLOCK_TIMEOUT_S)
    if block.lang in SHELL_LANGS:
        cmd = ["bash", "-c", SHELL_PRELUDE + text]
    else:
        script = workdir / f"example_{block.line}.py"
        script.write_text(text)
        cmd = [sys.executable, str(script)]
    # A session of its own, so a block that overruns is killed with everything it started.
    proc = subprocess.Popen(
        cmd, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=timeout_s)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        status, err = -1, err + f"\n(timed out after {timeout_s} s)"
    if (status == 0) == (block.mode == "run"):
        return
    expected = "succeed" if block.mode == "run" else "fail"
    raise ExampleFailed(
        f"{block.path}:{block.line}: this {block.lang} block should {expected}, "
        f"exit status {status}\n"
        f"--- block ---\n{text}--- stdout ---\n{out}\n--- stderr ---\n{err}"
    )


def run_page(
    page: Page,
    start_server: Callable[[Path, list[str]], tuple[str, Callable[[], None]]],
    workdir: Path,
) -> int:
    """Starts a service for the page, runs its blocks in order; the count of blocks run.

    start_server(data_dir, flags) gives the service's URL and a function that stops it.
    """
    blocks = page.runnable
    if not blocks:
        return 0
    url, stop = start_server(workdir / "data", page.server_flags)
    # The working folder stands for a checkout where `make serve` ran: its .venv is the one
    # running the tests, so `.venv/bin/xstreams` and `. .venv/bin/activate` work as pasted.
    venv = workdir / ".venv"
    if not venv.exists():
        venv.symlink_to(Path(sys.prefix), target_is_directory=True)
    env = {
        **os.environ,
        "XSTREAMS_URL": url,
        "XSTREAMS_DATA_DIR": str(workdir / "data"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    try:
        for block in blocks:
            run_block(block, url, workdir, env)
    finally:
        stop()
    return len(blocks)


def pages(root: Path) -> Iterator[Path]:
    """README.md, then every page under docs/, in a stable order."""
    yield root / "README.md"
    yield from sorted((root / "docs").rglob("*.md"))
