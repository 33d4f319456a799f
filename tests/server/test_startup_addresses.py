"""The start-up log says where each surface answers (app/server/addresses.py): the API, its
docs, the dashboard and the command endpoint, https under TLS, and for an every-address host
which address to use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from app.server.addresses import surface_lines
from tests.conftest import free_port, stop_process
from tests.support.waiting import until


def test_a_served_address_is_logged_with_every_surface(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "stderr.log"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1",
             "--port", str(port), "--data-dir", str(tmp_path), "--log-level", "info"],
            stderr=err,
        )  # fmt: skip
    try:
        until(lambda: "command endpoint:" in log.read_text(), 30, "the addresses logged")
    finally:
        stop_process(proc)
    text = log.read_text()
    base = f"http://127.0.0.1:{port}"
    for name, path in (
        ("API:", "/v1"),
        ("API docs:", "/docs"),
        ("dashboard:", "/ui/"),
        ("command endpoint:", "/"),
    ):
        (line,) = [ln for ln in text.splitlines() if f"xstreams: {name}" in ln]
        assert line.endswith(f" {base}{path}"), line
    assert "listening on every" not in text  # a loopback host needs no hint


def test_tls_and_every_address_hosts() -> None:
    lines = surface_lines("0.0.0.0", 8443, tls=True)
    assert lines[0].endswith(" https://127.0.0.1:8443/v1")
    assert "every IPv4 address (0.0.0.0)" in lines[-1] and "in place of 127.0.0.1" in lines[-1]
    v6 = surface_lines("::", 8000, tls=False)
    assert v6[2].endswith(" http://[::1]:8000/ui/") and "every IPv6 address" in v6[-1]
    literal = surface_lines("fd00::5", 8000, tls=False)
    assert literal[1].endswith(" http://[fd00::5]:8000/docs") and len(literal) == 4
    named = surface_lines("xs.example.com", 443, tls=True)
    assert named[3].endswith(" https://xs.example.com:443/")
