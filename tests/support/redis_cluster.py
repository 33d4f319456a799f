"""A throwaway 3-master Redis Cluster started from the redis-server binary, for tests.

``redis_cluster()`` starts three ``redis-server --cluster-enabled yes`` processes on free
loopback ports in a temporary folder (no persistence), joins them with ``redis-cli --cluster
create``, waits until every node reports ``cluster_state:ok``, yields the ``host:port``
addresses, and stops the processes afterwards. ``cluster_or_skip()`` is the same, but skips
(or fails, with ``XSTREAMS_REQUIRE_SERVICES=1``) when the binaries are missing.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import REQUIRE_SERVICES
from tests.support.waiting import until

MASTERS = 3
START_TIMEOUT_S = 30.0


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def cluster_port(taken: list[int]) -> int:
    """A free port whose cluster bus port (port + 10000) is free too: an ephemeral port
    from the OS may be above 55535, and then the node cannot open its bus."""
    while True:
        port = random.randint(20000, 45000)
        if port not in taken and _bindable(port) and _bindable(port + 10000):
            return port


def _cli(port: int, *args: str) -> str:
    out = subprocess.run(
        ["redis-cli", "-h", "127.0.0.1", "-p", str(port), *args],
        capture_output=True,
        text=True,
        timeout=10,
    )
    return out.stdout


def _wait(what: str, ready: Callable[[], object], deadline: float) -> None:
    """``until`` with a deadline several waits share."""
    until(ready, max(deadline - time.monotonic(), 0), f"Redis Cluster: {what}", poll_s=0.05)


@contextmanager
def redis_cluster(masters: int = MASTERS) -> Iterator[list[str]]:
    """Start a cluster of ``masters`` masters (no replicas); yields their addresses."""
    server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    if server is None or cli is None:
        raise FileNotFoundError("redis-server and redis-cli are needed for a Redis Cluster")
    ports: list[int] = []
    for _ in range(masters):
        ports.append(cluster_port(ports))
    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="xs-cluster-") as tmp:
        try:
            for port in ports:
                folder = Path(tmp) / str(port)
                folder.mkdir()
                procs.append(
                    subprocess.Popen(
                        [
                            server,
                            "--port",
                            str(port),
                            "--bind",
                            "127.0.0.1",
                            "--cluster-enabled",
                            "yes",
                            "--cluster-config-file",
                            "nodes.conf",
                            "--save",
                            "",
                            "--appendonly",
                            "no",
                            "--daemonize",
                            "no",
                            "--dir",
                            str(folder),
                        ],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                )
            deadline = time.monotonic() + START_TIMEOUT_S
            for port in ports:
                _wait("PONG", lambda p=port: _cli(p, "PING").strip() == "PONG", deadline)
            created = subprocess.run(
                [cli, "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports),
                 "--cluster-replicas", "0", "--cluster-yes"],
                capture_output=True,
                text=True,
                timeout=START_TIMEOUT_S,
            )  # fmt: skip
            if created.returncode != 0:
                raise RuntimeError(f"redis-cli --cluster create failed: {created.stdout}")
            for port in ports:
                _wait(
                    "cluster_state:ok",
                    lambda p=port: "cluster_state:ok" in _cli(p, "CLUSTER", "INFO"),
                    deadline,
                )
            yield [f"127.0.0.1:{p}" for p in ports]
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


@contextmanager
def cluster_or_skip() -> Iterator[list[str]]:
    """``redis_cluster()``, or a skip with the reason when the binaries are missing."""
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        msg = "redis-server / redis-cli binaries are not installed: no Redis Cluster"
        if REQUIRE_SERVICES:
            pytest.fail(msg + " and XSTREAMS_REQUIRE_SERVICES=1")
        pytest.skip(msg)
    with redis_cluster() as nodes:
        yield nodes
