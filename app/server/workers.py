"""``xstreams serve --workers N``: N worker processes on one listening socket.

The parent binds the socket (uvicorn's ``Config.bind_socket``: host names, IPv6, reuse) and
starts N workers, each a plain ``xstreams serve --fd FD`` that inherits it and accepts from it,
as gunicorn's and uvicorn's workers do. Each worker is the single-process server in full (the
connection deadlines and cap of app/server/connections.py, the shutdown that ends event streams
first, TLS), built from the same settings: the parent hands its command-line flags down as the
``XSTREAMS_*`` variables every worker's ``Settings()`` reads, so all of them build the same app.

uvicorn's own supervisor is not used: its workers run uvicorn's plain server, which knows
neither our protocol class (built per run, not importable) nor our shutdown.

The parent forwards SIGTERM / SIGINT to the workers and waits for them. A worker that dies is
replaced; one that dies while starting (a refusal, a bad TLS file: every start would fail the
same way) stops the whole service with its exit status.

A parent that dies without forwarding anything (SIGKILL, the OOM killer) must not leave its
workers serving on, unsupervised, holding the port: on Linux each worker asks the kernel for
SIGTERM when its parent goes (``die_with_parent``: PR_SET_PDEATHSIG), and shuts down as on any
SIGTERM. Elsewhere nothing is done.
"""

from __future__ import annotations

import enum
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import FrameType
from typing import Any

log = logging.getLogger("xstreams")

# A worker that exits sooner than this after it started failed to start: not restarted.
STARTUP_S = 5.0
# How long the workers get to finish (uvicorn's graceful shutdown is 5 s) before SIGKILL.
STOP_S = 10.0


def settings_env(overrides: Mapping[str, Any]) -> dict[str, str]:
    """The ``XSTREAMS_*`` variables that make ``Settings()`` read ``overrides``."""
    env = {}
    for name, value in overrides.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, enum.Enum):
            text = str(value.value)
        elif isinstance(value, list | tuple):
            text = json.dumps([str(v) for v in value])
        elif isinstance(value, dict):
            text = json.dumps(value)  # --retention: the variable takes the same JSON
        elif isinstance(value, Path):
            text = str(value)
        else:
            text = str(value)
        env[f"XSTREAMS_{name.upper()}"] = text
    return env


def worker_command(fd: int) -> list[str]:
    """One worker: ``xstreams serve`` accepting from the inherited socket ``fd``, told this
    process is its supervisor (it dies with it)."""
    return [
        sys.executable, "-m", "app.cli", "serve",
        "--fd", str(fd), "--supervisor", str(os.getpid()),
    ]  # fmt: skip


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(supervisor: int) -> None:
    """Have the kernel send this worker SIGTERM when its parent dies (Linux's
    PR_SET_PDEATHSIG), so a supervisor killed without a word takes its workers with it; the
    worker then shuts down gracefully, as on any SIGTERM (uvicorn's handler, ``Server``).

    The request only covers a parent alive when it is made: one that died since the worker
    was forked has already made the worker an orphan (its parent is now init or a subreaper),
    so the parent is checked after, against the ``supervisor`` it was started by, and an
    orphan sends itself the SIGTERM it missed. The signal follows the thread that forked the
    worker: the supervisor forks from its one loop (``Supervisor.run``), which lives as long
    as it does. On other systems, or without a C library to call, nothing is done."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        failed = libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0
    except (OSError, AttributeError):
        return
    if failed:
        log.warning("prctl(PR_SET_PDEATHSIG): %s", os.strerror(ctypes.get_errno()))
        return
    if os.getppid() != supervisor:
        os.kill(os.getpid(), signal.SIGTERM)


class Supervisor:
    def __init__(
        self,
        sock: socket.socket,
        workers: int,
        env: dict[str, str],
        command: Callable[[int], list[str]] = worker_command,
    ) -> None:
        self.sock = sock
        self.count = workers
        self.env = env
        self.command = command
        self.startup_s = STARTUP_S
        self.stopping = False
        self.workers: list[tuple[subprocess.Popen[bytes], float]] = []

    def _spawn(self) -> tuple[subprocess.Popen[bytes], float]:
        fd = self.sock.fileno()
        proc = subprocess.Popen(self.command(fd), env=self.env, pass_fds=(fd,))
        log.info("started worker %d", proc.pid)
        return proc, time.monotonic()

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True

    def run(self) -> int:
        """Serve until SIGTERM / SIGINT (0) or a worker fails to start (its status)."""
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, self._stop)
        self.workers = [self._spawn() for _ in range(self.count)]
        status = 0
        while not self.stopping:
            time.sleep(0.1)
            for i, (proc, started) in enumerate(self.workers):
                code = proc.poll()
                if code is None or self.stopping:
                    continue
                if time.monotonic() - started < self.startup_s:
                    log.error("worker %d failed to start (exit %d): stopping", proc.pid, code)
                    self.stopping = True
                    status = code or 1
                    break
                log.warning("worker %d died (exit %d): starting another", proc.pid, code)
                self.workers[i] = self._spawn()
        self._terminate()
        return status

    def _terminate(self) -> None:
        for proc, _ in self.workers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_S
        for proc, _ in self.workers:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def supervise(
    host: str, port: int, workers: int, overrides: Mapping[str, Any], tls: bool = False
) -> int:
    """Bind ``host:port`` once and serve it with ``workers`` processes; the exit status."""
    import uvicorn

    from app.server.addresses import announce

    # log_config=None: logging stays as ``serve`` configured it (--log-level, --log-format).
    config = uvicorn.Config("app.main:create_app", host=host, port=port, log_config=None)
    sock = config.bind_socket()
    announce(host, sock.getsockname()[1], tls)
    env = {**os.environ, **settings_env(overrides), "XSTREAMS_WORKERS": "1"}
    try:
        return Supervisor(sock, workers, env).run()
    finally:
        sock.close()
