"""Throwaway redis-server processes in states a healthy server never shows, for the fault
tests: a cluster node that serves no slots (every keyed command answers CLUSTERDOWN), a
replica (writes answer READONLY), a server loading its dataset (LOADING), a master with or
without replicas. Each runs on a free loopback port in a temporary folder and is stopped on
exit; ``server_or_skip`` skips (fails under ``XSTREAMS_REQUIRE_SERVICES=1``) without the
binaries.

``redis8_or_skip`` starts a redis-server 8.x the same way, from the folder ``.ci/redis8``
fills (``XSTREAMS_REDIS8_DIR``, default ``~/.cache/xstreams/redis8``): the reference for the
commands Redis added after 7.0 (XDELEX, XACKDEL, reference policies, XREADGROUP CLAIM), and
the server the Redis backend passes them through to.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import REQUIRE_SERVICES
from tests.support.redis_cluster import cluster_port
from tests.support.waiting import until

START_TIMEOUT_S = 30.0


def cli(port: int, *args: str) -> str:
    out = subprocess.run(
        ["redis-cli", "-h", "127.0.0.1", "-p", str(port), *args],
        capture_output=True,
        text=True,
        timeout=10,
    )
    return out.stdout.strip()


def need_binaries() -> None:
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        msg = "redis-server / redis-cli binaries are not installed"
        if REQUIRE_SERVICES:
            pytest.fail(msg + " and XSTREAMS_REQUIRE_SERVICES=1")
        pytest.skip(msg)


REDIS8_DIR = Path(os.environ.get("XSTREAMS_REDIS8_DIR") or Path.home() / ".cache/xstreams/redis8")
REDIS8_SERVER = REDIS8_DIR / "bin" / "redis-server-8"


def need_redis8() -> None:
    if not os.access(REDIS8_SERVER, os.X_OK):
        msg = f"no redis-server 8 at {REDIS8_SERVER} (install it with .ci/redis8)"
        if REQUIRE_SERVICES:
            pytest.fail(msg + " and XSTREAMS_REQUIRE_SERVICES=1")
        pytest.skip(msg)


class RedisProcess:
    """One redis-server on ``port``, with its files in ``folder`` (``binary``: another
    build, such as ``REDIS8_SERVER``)."""

    def __init__(self, folder: Path, port: int, binary: str = "redis-server") -> None:
        self.folder = folder
        self.port = port
        self.binary = binary
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, *args: str, answers: bool = True) -> None:
        """Start it with ``args`` added to the defaults; with ``answers``, wait until it
        answers PING (PONG, or the error of its state: MASTERDOWN, LOADING)."""
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", str(self.folder), *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        if answers:
            until(
                lambda: cli(self.port, "PING") != "",
                START_TIMEOUT_S,
                f"an answer from {self.address}",
            )

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


@contextmanager
def server_or_skip(*args: str) -> Iterator[RedisProcess]:
    """A started redis-server with ``args``; stopped on exit."""
    need_binaries()
    with tempfile.TemporaryDirectory(prefix="xs-redis-") as tmp:
        server = RedisProcess(Path(tmp), cluster_port([]))
        try:
            server.start(*args)
            yield server
        finally:
            server.stop()


@contextmanager
def redis8_or_skip(*args: str) -> Iterator[RedisProcess]:
    """A started redis-server 8.x with ``args``; stopped on exit."""
    need_binaries()  # redis-cli answers the PING that tells it is up
    need_redis8()
    with tempfile.TemporaryDirectory(prefix="xs-redis8-") as tmp:
        server = RedisProcess(Path(tmp), cluster_port([]), str(REDIS8_SERVER))
        try:
            server.start(*args)
            yield server
        finally:
            server.stop()
