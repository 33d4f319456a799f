"""A throwaway redis-server of a test's own, for reference runs that change server config.

The shared redis-server (``REDIS_PORT``) serves every test worker at once, so no test may
CONFIG SET it: ``test_walks`` sets node limits per run, and does it on a server started here
(no persistence, loopback, a free port), stopped when the fixture ends.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.conftest import REQUIRE_SERVICES

START_TIMEOUT_S = 10.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def private_redis() -> Iterator[int]:
    """Start a redis-server on a free loopback port; yields the port. Skips (or fails, with
    ``XSTREAMS_REQUIRE_SERVICES=1``) when the binary is missing."""
    server = shutil.which("redis-server")
    if server is None:
        msg = "the redis-server binary is not installed"
        if REQUIRE_SERVICES:
            pytest.fail(msg + " and XSTREAMS_REQUIRE_SERVICES=1")
        pytest.skip(msg)
    with tempfile.TemporaryDirectory(prefix="xs-redis-") as folder:
        port = _free_port()
        argv = [server, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        argv += ["--appendonly", "no", "--daemonize", "no", "--dir", folder]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while not _answers(port):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start on port {port}")
                time.sleep(0.02)
            yield port
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
