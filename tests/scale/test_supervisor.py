"""The ``--workers`` supervisor (app/server/workers.py), with stand-in workers: each inherits the
one listening socket, a worker that dies is replaced, one that fails to start stops all. And
the real one on redis-server: a supervisor killed outright takes its workers with it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from app.server.workers import Supervisor
from tests.api.sse.support import open_events
from tests.support.targets import REDIS, Target, redis_url, require_redis
from tests.support.waiting import until

WORKER = """
import os, signal, socket, sys
sock = socket.socket(fileno=int(sys.argv[1]))
with open(os.path.join(sys.argv[2], str(os.getpid())), "w") as f:
    f.write(str(sock.getsockname()[1]))
signal.pause()  # serve on until the supervisor's SIGTERM or the test's SIGKILL
"""


def _listening() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


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
        until(lambda: len(list(tmp_path.iterdir())) == 2, 20, what="two workers up")
        assert {p.read_text() for p in tmp_path.iterdir()} == {str(port)}
        first = {int(p.name) for p in tmp_path.iterdir()}
        time.sleep(0.2)  # time is the subject: past startup_s, a death sooner is a failed start
        os.kill(min(first), signal.SIGKILL)
        until(lambda: len(list(tmp_path.iterdir())) == 3, 20, what="a new worker in its place")
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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_worker_whose_supervisor_died_before_it_asked_stops_at_once() -> None:
    """The parent-death signal only covers a parent alive when it is asked for: a worker whose
    parent is not the supervisor it was started by (it died first; the worker was adopted)
    sends itself the SIGTERM it missed."""
    code = "import signal, sys; from app.server.workers import die_with_parent as d; "
    run = [sys.executable, "-c", code + "d(int(sys.argv[1])); signal.pause()"]
    orphan = subprocess.run([*run, "1"], timeout=20)  # its parent is this test, not pid 1
    assert orphan.returncode == -signal.SIGTERM
    kept = subprocess.Popen([*run, str(os.getpid())])
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            kept.wait(1)  # its parent is the one it names: it serves on
    finally:
        kept.kill()
        kept.wait()


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has exited (a zombie nobody reaped yet counts: it serves no
    more, and its sockets are closed)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rpartition(")")[2].split()[0] == "Z"


def _worker_pids(url: str) -> set[int]:
    """Both workers' process IDs, from /readyz on new connections (they take turns). The
    front-end is ready when one worker is; the other may still be starting (503,
    "recovering"), which is waited out, while any other answer fails."""
    pids: set[int] = set()

    def both() -> bool:
        r = httpx.get(url + "/readyz", headers={"Connection": "close"}, timeout=5)
        if not (r.status_code == 503 and r.json().get("status") == "recovering"):
            assert r.status_code == 200, r.text
            pids.add(r.json()["pid"])
        return len(pids) == 2

    until(both, 20, what="both workers answering /readyz", poll_s=0.05)
    return pids


@pytest.mark.redis
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
async def test_workers_die_with_a_killed_supervisor(tmp_path: Path) -> None:
    """SIGKILL leaves the supervisor no moment to stop its workers: the kernel's parent-death
    signal does, a SIGTERM each, so they shut down as on any SIGTERM (their event streams end
    cleanly, not cut) and the port is free again within a few seconds."""
    require_redis()
    front = Target(REDIS, redis_url()).serve(tmp_path, "--workers", "2")
    pids: set[int] = set()
    try:
        pids = _worker_pids(front.url)
        assert front.proc.pid not in pids
        async with (
            httpx.AsyncClient(base_url=front.url, timeout=10) as client,
            open_events(client, "/v1/streams/{pdeath}a/events") as a,
            open_events(client, "/v1/streams/{pdeath}b/events") as b,
            open_events(client, "/v1/streams/{pdeath}c/events") as c,
        ):
            front.kill()  # SIGKILL: no signal handler, nothing forwarded
            started = time.monotonic()
            for events in (a, b, c):
                assert await events.until_end(timeout=8) == []  # a clean end of body
        until(lambda: all(_gone(pid) for pid in pids), 10, what="every worker gone")
        assert time.monotonic() - started < 8
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", front.port), timeout=2).close()
    finally:
        for pid in pids:
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)
        front.stop()
