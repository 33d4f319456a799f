"""The ``--workers`` supervisor (app/cli/workers.py), with stand-in workers: each inherits the
one listening socket, a worker that dies is replaced, one that fails to start stops all."""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from app.cli.workers import Supervisor

WORKER = """
import os, socket, sys, time
sock = socket.socket(fileno=int(sys.argv[1]))
with open(os.path.join(sys.argv[2], str(os.getpid())), "w") as f:
    f.write(str(sock.getsockname()[1]))
time.sleep(60)
"""


def _listening() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


def _until(check: object, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not (callable(check) and check()):
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.05)


def test_workers_share_the_socket_and_a_dead_one_is_replaced(tmp_path: Path) -> None:
    sock = _listening()
    port = sock.getsockname()[1]
    sup = Supervisor(sock, 2, dict(os.environ),
                     lambda fd: [sys.executable, "-c", WORKER, str(fd), str(tmp_path)])  # fmt: skip
    sup.startup_s = 0.1
    status: list[int] = []
    thread = threading.Thread(target=lambda: status.append(sup.run()))
    thread.start()
    try:
        _until(lambda: len(list(tmp_path.iterdir())) == 2)
        assert {p.read_text() for p in tmp_path.iterdir()} == {str(port)}
        first = {int(p.name) for p in tmp_path.iterdir()}
        time.sleep(0.2)
        os.kill(min(first), signal.SIGKILL)
        _until(lambda: len(list(tmp_path.iterdir())) == 3)  # a new worker took its place
        alive = [proc for proc, _ in sup.workers if proc.poll() is None]
        assert len(alive) == 2
    finally:
        sup.stopping = True
        thread.join(30)
        sock.close()
    assert status == [0]
    assert all(proc.poll() is not None for proc, _ in sup.workers)


def test_a_worker_that_fails_to_start_stops_the_service() -> None:
    sock = _listening()
    sup = Supervisor(sock, 2, dict(os.environ),
                     lambda fd: [sys.executable, "-c", "raise SystemExit(3)"])  # fmt: skip
    started = time.monotonic()
    try:
        assert sup.run() == 3
    finally:
        sock.close()
    assert time.monotonic() - started < 15
    assert all(proc.poll() is not None for proc, _ in sup.workers)
