"""What the tests of access on a running service share: keys made with the ``xstreams keys``
command line, as an operator makes them, and an event stream read on a thread of its own, so
a test can revoke a key while the stream is open and see it end."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import httpx

FAST_KEYS = {"XSTREAMS_KEYS_REFRESH_MS": "200"}


def keys(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "keys", *args, "--data-dir", str(data)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def create_key(data: Path, name: str, *grant: str) -> str:
    done = keys(data, "create", "--name", name, *grant)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


class EventTail:
    """``GET url`` as an event stream, read line by line on a daemon thread. ``status`` is the
    response's status once it came (an assertion inside the thread would be lost), ``lines``
    what arrived so far, ``ended`` set when the server closed the stream."""

    def __init__(self, url: str, timeout_s: float = 30) -> None:
        self.lines: list[str] = []
        self.status: int | None = None
        self.ended = threading.Event()
        self._url, self._timeout_s = url, timeout_s
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            with httpx.stream("GET", self._url, timeout=self._timeout_s) as r:
                self.status = r.status_code
                self.lines.extend(r.iter_lines())
        finally:
            self.ended.set()
