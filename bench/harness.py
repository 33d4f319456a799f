"""Processes the benchmark starts, and the load generators it runs against them.

Every server is a subprocess of ``python -m bench`` on a free loopback port with a temporary
data folder; ``Fleet`` owns them all and stops them in ``finally`` (and on SIGTERM, which is
turned into ``KeyboardInterrupt``), so neither an error nor Ctrl-C leaves one behind. Load runs
in separate processes too (wrk, redis-benchmark, ``bench.client``), each with a time limit;
their CPU time is read from ``RUSAGE_CHILDREN`` so the report can show whether the client, not
the server, was the limit on this 2-core machine.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
# Redis 8.6, put there by .ci/redis8: the anchor for XADD IDMP, which 7.0 does not know.
REDIS8_SERVER = (
    Path(os.environ.get("XSTREAMS_REDIS8_DIR") or Path.home() / ".cache/xstreams/redis8")
    / "bin"
    / "redis-server-8"
)
LOOPBACK = "127.0.0.1"
TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    """A loopback port nobody listens on now (the kernel picks it)."""
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def proc_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process, from /proc (no psutil needed)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def proc_rss_bytes(pid: int) -> int:
    """VmRSS of a live process: what the memory workload compares with Redis's used_memory."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def children_cpu_seconds() -> float:
    """CPU seconds of every waited-for child so far; a delta around one load run is its cost."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _wait_port(port: int, proc: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited with {proc.returncode}")
        try:
            with socket.create_connection((LOOPBACK, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{proc.args!r} did not listen on {port} within {seconds} s")


@dataclass
class Server:
    """One started server: its name, port and process."""

    name: str
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return self.proc.pid

    def cpu_seconds(self) -> float:
        return proc_cpu_seconds(self.pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@dataclass
class Fleet:
    """Owns the servers and temporary folders of one run; ``close`` ends them all."""

    servers: list[Server] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)

    def tmpdir(self, prefix: str) -> Path:
        path = Path(tempfile.mkdtemp(prefix=f"xstreams-bench-{prefix}-"))
        self.folders.append(path)
        return path

    def _spawn(self, name: str, port: int, argv: Sequence[str], env: dict[str, str]) -> Server:
        proc = subprocess.Popen(
            list(argv),
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C reaches us only; we stop them in order
        )
        server = Server(name, port, proc)
        self.servers.append(server)
        return server

    def xstreams(
        self, name: str, fsync: str, backend: str | None = None, workers: int = 1,
        data_dir: Path | None = None, env: dict[str, str] | None = None,
    ) -> Server:  # fmt: skip
        """xstreams through its real CLI (SQLite journal in a temporary data folder, or the
        one in ``data_dir`` to recover from it; or in front of Redis with ``backend`` and as
        many front-end ``workers``); returned once /readyz answers 200."""
        port = free_port()
        folder = data_dir if data_dir is not None else self.tmpdir(name)
        argv = [
            str(VENV_BIN / "xstreams"), "serve", "--host", LOOPBACK, "--port", str(port),
            "--data-dir", str(folder), "--fsync", fsync, "--log-level", "warning",
        ]  # fmt: skip
        if backend is not None:
            argv += ["--backend", backend, "--workers", str(workers)]
        # A snapshot at shutdown of a million entries would only slow the cleanup down.
        server = self._spawn(
            name, port, argv, {"XSTREAMS_SNAPSHOT_ON_SHUTDOWN": "false", **(env or {})}
        )
        _wait_port(port, server.proc, 60)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # listening precedes recovery: wait for /readyz
            if server.proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {server.proc.returncode}")
            try:
                with urllib.request.urlopen(f"http://{LOOPBACK}:{port}/readyz", timeout=2) as r:
                    if r.status == 200:
                        return server
            except OSError:
                pass
            time.sleep(0.02)  # fine enough for the restart rows of workload 7
        raise RuntimeError(f"{name} never became ready")

    def redis(self, name: str, aof_always: bool = False) -> Server:
        """A redis-server of our own (never the one on 6379): no RDB, AOF only if asked."""
        port = free_port()
        argv = [
            "redis-server", "--port", str(port), "--bind", LOOPBACK, "--save", "",
            "--daemonize", "no", "--loglevel", "warning",
        ]  # fmt: skip
        if aof_always:
            argv += ["--appendonly", "yes", "--appendfsync", "always"]
            argv += ["--auto-aof-rewrite-percentage", "0", "--dir", str(self.tmpdir(name))]
        else:
            argv += ["--appendonly", "no"]
        server = self._spawn(name, port, argv, {})
        _wait_port(port, server.proc, 20)
        return server

    def redis_in(
        self, name: str, folder: Path, appendonly: bool, binary: str = "redis-server"
    ) -> Server:
        """A redis-server of our own on the data in ``folder``: its AOF (``appendonly``) or
        its dump.rdb, loaded at start; returned once it listens, which precedes loading.
        ``binary``: another build (``REDIS8_SERVER`` for Redis 8's commands)."""
        port = free_port()
        argv = [
            binary, "--port", str(port), "--bind", LOOPBACK, "--save", "",
            "--daemonize", "no", "--loglevel", "warning", "--dir", str(folder),
            "--dbfilename", "dump.rdb", "--appendonly", "yes" if appendonly else "no",
            "--appendfsync", "everysec", "--auto-aof-rewrite-percentage", "0",
        ]  # fmt: skip
        server = self._spawn(name, port, argv, {})
        _wait_port(port, server.proc, 20)
        return server

    def bare(self) -> Server:
        """The ceiling: one trivial FastAPI endpoint on xstreams's uvicorn setup."""
        port = free_port()
        argv = [sys.executable, "-m", "bench.bare_app", "--port", str(port)]
        server = self._spawn("bare", port, argv, {})
        _wait_port(port, server.proc, 30)
        return server

    def webhook_receiver(self) -> Server:
        """A bare webhook receiver (bench/webhook_receiver.py): answers 200, times arrivals."""
        port = free_port()
        argv = [sys.executable, "-m", "bench.webhook_receiver", "--port", str(port)]
        server = self._spawn("receiver", port, argv, {})
        _wait_port(port, server.proc, 30)
        return server

    def close(self) -> None:
        for server in reversed(self.servers):
            try:
                server.stop()
            except Exception as exc:  # keep stopping the others
                print(f"warning: stopping {server.name}: {exc}", file=sys.stderr)
        for folder in self.folders:
            shutil.rmtree(folder, ignore_errors=True)


def _sigterm(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


@contextmanager
def fleet() -> Iterator[Fleet]:
    """A ``Fleet`` that is closed however the block ends (error, Ctrl-C, SIGTERM)."""
    previous = signal.signal(signal.SIGTERM, _sigterm)
    owned = Fleet()
    try:
        yield owned
    finally:
        owned.close()
        signal.signal(signal.SIGTERM, previous)


# -- load generators ---------------------------------------------------------------------------


@dataclass
class Sample:
    """One measured cell: a rate and, where the tool gives them, latency percentiles."""

    rate: float  # requests/s or entries/s, as the workload says
    p50_ms: float | None
    p99_ms: float | None
    client_cpu: float  # cores the load generator used (1.0 = one whole core)
    server_cpu: float | None  # cores the server used
    errors: int = 0
    p999_ms: float | None = None  # where the tool gives it (wrk; not redis-benchmark's CSV)


def _measured(
    server: Server | None, argv: Sequence[str], timeout: float
) -> tuple[str, float, float, float | None]:
    """Run one load process; its stdout, wall time, client cores and server cores."""
    cpu0 = children_cpu_seconds()
    srv0 = server.cpu_seconds() if server else 0.0
    t0 = time.perf_counter()
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    wall = time.perf_counter() - t0
    srv = (server.cpu_seconds() - srv0) / wall if server else None
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout, wall, (children_cpu_seconds() - cpu0) / wall, srv


_WRK_DONE = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"errors":%d,"p50_us":%d,"p99_us":%d,"p999_us":%d}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9)))
end
"""


# Each request under an Idempotency-Key of its own: a counter after a prefix unique to the
# script and the run (wrk starts afresh each run, seconds apart), so no key is ever replayed.
_WRK_KEYED = """
local counter = 0
math.randomseed(os.time())
local prefix = "%s-" .. os.time() .. "-" .. math.random(1000000000) .. "-"
request = function()
  counter = counter + 1
  wrk.headers["Idempotency-Key"] = prefix .. counter
  return wrk.format()
end
"""


def wrk_script(
    folder: Path, name: str, method: str, body: bytes | None, keyed: bool = False
) -> Path:
    """A wrk Lua script sending ``method`` with a JSON ``body`` and printing figures as JSON;
    with ``keyed``, each request carries a unique Idempotency-Key."""
    lines = [f'wrk.method = "{method}"']
    if body is not None:
        text = body.decode()
        if "]==]" in text:
            raise ValueError("body cannot be quoted as a Lua long string")
        lines += [f"wrk.body = [==[{text}]==]", 'wrk.headers["Content-Type"] = "application/json"']
    if keyed:
        lines.append(_WRK_KEYED % name)
    path = folder / f"{name}.lua"
    path.write_text("\n".join(lines) + "\n" + _WRK_DONE)
    return path


def wrk(
    server: Server, path: str, script: Path, connections: int, seconds: float, per_request: int
) -> Sample:
    """wrk with one thread (a C event loop outruns any Python server on one core)."""
    argv = [
        "wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "--timeout", "10s",
        "-s", str(script), f"http://{LOOPBACK}:{server.port}{path}",
    ]  # fmt: skip
    out, _wall, client, srv = _measured(server, argv, seconds + 30)
    figures = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
    ok = figures["requests"] - figures["errors"]
    return Sample(
        rate=ok * per_request / (figures["duration_us"] / 1e6),
        p50_ms=figures["p50_us"] / 1000,
        p99_ms=figures["p99_us"] / 1000,
        client_cpu=client,
        server_cpu=srv,
        errors=figures["errors"],
        p999_ms=figures["p999_us"] / 1000,
    )


def redis_benchmark(
    server: Server, command: Sequence[str], clients: int, requests: int, pipeline: int = 1
) -> Sample:
    """redis-benchmark running one command ``requests`` times; rate is commands/s."""
    argv = [
        "redis-benchmark", "-h", LOOPBACK, "-p", str(server.port), "-c", str(clients),
        "-n", str(requests), "-P", str(pipeline), "--csv", *command,
    ]  # fmt: skip
    out, _wall, client, srv = _measured(server, argv, 120)
    row = [line for line in out.splitlines() if line.startswith('"') and "rps" not in line][-1]
    cells = [c.strip('"') for c in row.split('","')]
    return Sample(
        rate=float(cells[1]),
        p50_ms=float(cells[4]),
        p99_ms=float(cells[6]),
        client_cpu=client,
        server_cpu=srv,
    )


def client(
    server: Server | None, args: Sequence[str], timeout: float
) -> tuple[dict[str, Any], float, float | None]:
    """``python -m bench.client ARGS`` in its own process: its JSON reply, its cores and the
    server's cores meanwhile."""
    argv = [sys.executable, "-m", "bench.client", *args]
    out, _wall, cores, srv = _measured(server, argv, timeout)
    return json.loads(out.strip().splitlines()[-1]), cores, srv


def redis_info(server: Server, key: str) -> int:
    """One integer field of INFO (e.g. used_memory), through redis-cli."""
    out = subprocess.run(
        ["redis-cli", "-h", LOOPBACK, "-p", str(server.port), "INFO", "memory"],
        capture_output=True, text=True, timeout=10, check=True,
    ).stdout  # fmt: skip
    for line in out.splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split(":", 1)[1])
    raise RuntimeError(f"INFO has no {key}")


def redis_cli(server: Server, *args: str) -> str:
    return subprocess.run(
        ["redis-cli", "-h", LOOPBACK, "-p", str(server.port), *args],
        capture_output=True, text=True, timeout=30, check=True,
    ).stdout.strip()  # fmt: skip
