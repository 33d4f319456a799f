"""``python -m bench.server_probes``: what ``xstreams serve`` guarantees, checked under uvicorn
and under granian (issue 13, part 6).

A faster server is only worth adopting if it keeps what users rely on. Each probe starts a
fresh server (``xstreams serve``, or bench/granian_app.py with the same ``XSTREAMS_*``
settings, from granian's CLI server or ``--embed``ded), does one thing over a raw socket and
reports what it saw:

- an event stream gets a live entry, and ends (cleanly, or cut) when the server is told to stop;
- a graceful stop (SIGTERM) keeps every acknowledged write (restart, count the entries), with
  and without an event stream open, and how long the stop takes;
- a blocked read (``XREAD BLOCK 0`` on ``POST /``, REST ``block_ms=0``) is released when its
  client goes (``blocked_clients`` in ``INFO``);
- the limits: a body over ``max_body_bytes``, a head or a body that does not arrive in time, an
  idle connection, an idle keep-alive connection, and the connection cap (uvicorn:
  ``max_connections``; granian has no connection cap, its nearest is ``--backpressure``, a cap
  on requests in flight).

Small limits (1 s deadlines, a cap of 4) keep it short: ~4 minutes for the three servers. Not
a test: it prints what happened, for bench/REPORT.md, whatever it is.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from bench.harness import LOOPBACK, ROOT, VENV_BIN, free_port

ENV = {
    "XSTREAMS_LOG_LEVEL": "warning",
    "XSTREAMS_FSYNC": "everysec",
    "XSTREAMS_HEADER_TIMEOUT_MS": "1000",
    "XSTREAMS_BODY_TIMEOUT_MS": "1000",
    "XSTREAMS_KEEPALIVE_TIMEOUT_MS": "1000",
    "XSTREAMS_MAX_CONNECTIONS": "4",
    "XSTREAMS_MAX_BODY_BYTES": "4096",
    "XSTREAMS_SSE_HEARTBEAT_MS": "1000",
}
# granian-embed: granian's embedded server in the launcher's own process, with serve's SIGTERM
# order and on_fatal (what adopting granian in `serve` would look like).
KINDS = {
    "uvicorn": "uvicorn (`xstreams serve`)",
    "granian": "granian (bench/granian_app.py)",
    "granian-embed": "granian embedded (`bench.granian_app --embed`)",
}


class Running:
    def __init__(
        self, kind: str, data: Path, env: dict[str, str] | None = None, wait: bool = True
    ) -> None:
        self.kind, self.data, self.port = kind, data, free_port()
        if kind == "uvicorn":
            argv = [str(VENV_BIN / "xstreams"), "serve", "--port", str(self.port)]
        else:
            argv = [
                str(VENV_BIN / "python"), "-m", "bench.granian_app", "--port", str(self.port),
                "--header-timeout-ms", "1000", "--backpressure", "4", "--kill-timeout", "10",
            ]  # fmt: skip
            if kind == "granian-embed":
                argv.append("--embed")
        env = {**os.environ, **ENV, **(env or {}), "XSTREAMS_DATA_DIR": str(data)}
        self.log = data.parent / f"{data.name}-{kind}.log"
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                argv, cwd=ROOT, env=env, stdout=log, stderr=log, start_new_session=True
            )
        deadline = time.monotonic() + 60
        while wait and time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(self.url("/readyz"), timeout=2) as r,
            ):
                if r.status == 200:
                    return
            time.sleep(0.1)
        if wait:
            raise RuntimeError(f"{kind} never became ready (see {self.log})")

    def url(self, path: str) -> str:
        return f"http://{LOOPBACK}:{self.port}{path}"

    def command(self, *args: Any, path: str = "/") -> Any:
        request = urllib.request.Request(self.url(path), data=orjson.dumps(list(args)))
        with urllib.request.urlopen(request, timeout=10) as reply:
            return orjson.loads(reply.read())

    def blocked_clients(self) -> int:
        info = self.command("INFO")["result"]
        for line in info.splitlines():
            if line.startswith("blocked_clients:"):
                return int(line.split(":")[1])
        raise RuntimeError("no blocked_clients in INFO")

    def stop(self) -> tuple[float, int | None]:
        """SIGTERM; seconds until the process is gone (and its exit status)."""
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            code: int | None = self.proc.wait(40)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            code = None
        return time.monotonic() - t0, code

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@contextlib.contextmanager
def server(kind: str, data: Path, env: dict[str, str] | None = None) -> Iterator[Running]:
    running = Running(kind, data, env)
    try:
        yield running
    finally:
        running.close()


def connect(port: int) -> socket.socket:
    return socket.create_connection((LOOPBACK, port), timeout=15)


def read_until_closed(sock: socket.socket, cap_s: float) -> tuple[float, bytes, str]:
    """Read until the server closes; seconds taken, bytes got, and how it ended."""
    t0 = time.monotonic()
    sock.settimeout(0.2)
    got = b""
    while time.monotonic() - t0 < cap_s:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return time.monotonic() - t0, got, "reset"
        if not chunk:
            return time.monotonic() - t0, got, "closed"
        got += chunk
    return time.monotonic() - t0, got, "still open"


def status(got: bytes) -> str:
    return got.split(b"\r\n", 1)[0].decode(errors="replace") if got else "no reply"


def read_until(sock: socket.socket, marker: bytes, cap_s: float = 10) -> bytes:
    sock.settimeout(cap_s)
    got = b""
    while marker not in got:
        chunk = sock.recv(65536)
        if not chunk:
            break
        got += chunk
    return got


def write_acked(srv: Running, n: int) -> int:
    """``n`` XADDs to ``t`` (not the watched stream: its event stream is not being read),
    acknowledged by 200 replies; how many were."""
    acked = 0
    for i in range(0, n, 100):
        reply = srv.command(*[["XADD", "t", "*", "i", str(j)] for j in range(i, i + 100)],
                            path="/pipeline")  # fmt: skip
        acked += len(reply)
    return acked


def snapshots(data: Path) -> int:
    """Snapshots in the data folder's SQLite database (a clean stop takes one)."""
    with contextlib.closing(sqlite3.connect(data / "xstreams.db")) as db:
        return int(db.execute("SELECT count(*) FROM xstreams_snapshots").fetchone()[0])


def probe_shutdown(kind: str, data: Path, with_sse: bool, fsync: str = "everysec") -> str:
    env = {"XSTREAMS_FSYNC": fsync}
    with server(kind, data, env) as srv:
        sse_note = ""
        sock = None
        if with_sse:
            sock = connect(srv.port)
            sock.sendall(b"GET /v1/streams/s/events HTTP/1.1\r\nHost: x\r\n\r\n")
            head = read_until(sock, b"retry:")
            srv.command("XADD", "s", "*", "live", "1")
            live = b"event: entry" in read_until(sock, b"event: entry")
            sse_note = f"live entry {'received' if live else 'NOT received'} ({status(head)}); "
        acked = write_acked(srv, 2000) + (1 if with_sse else 0)
        if sock is not None:
            t0 = time.monotonic()
            srv.proc.send_signal(signal.SIGTERM)
            took, tail, how = read_until_closed(sock, 40)
            clean = tail.endswith(b"0\r\n\r\n")
            sse_note += (
                f"stream {how} {took:.1f} s after SIGTERM, "
                f"{'clean end of chunked body' if clean else 'no end of body (cut)'}; "
            )
            try:
                code: int | None = srv.proc.wait(40)
            except subprocess.TimeoutExpired:
                code = None
            stop_s = time.monotonic() - t0
            sock.close()
        else:
            stop_s, code = srv.stop()
    taken = snapshots(data)
    with server(kind, data, env) as again:
        kept = again.command("XLEN", "s")["result"] + again.command("XLEN", "t")["result"]
    verdict = "all kept" if kept == acked else f"LOST {acked - kept}"
    return (
        f"{sse_note}exit {code} after {stop_s:.1f} s, {taken} snapshot(s) taken; "
        f"after restart {kept}/{acked} "
        f"acknowledged entries ({verdict})"
    )


def probe_fatal(kind: str, data: Path) -> str:
    """Recovery fails (the database file is garbage): ``serve`` must stop, status 1."""
    data.mkdir(parents=True)
    (data / "xstreams.db").write_bytes(b"not a database" * 100)
    srv = Running(kind, data, wait=False)
    try:
        code = srv.proc.wait(20)
        return f"process exited with status {code}"
    except subprocess.TimeoutExpired:
        try:
            with urllib.request.urlopen(srv.url("/readyz"), timeout=2) as r:
                ready = f"{r.status}"
        except urllib.error.HTTPError as e:
            ready = f"{e.code}"
        except OSError as e:
            ready = f"unreachable ({e})"
        return f"still running 20 s later, /readyz answers {ready}"
    finally:
        srv.close()


def probe_blocked(srv: Running, rest: bool) -> str:
    sock = connect(srv.port)
    if rest:
        sock.sendall(b"GET /v1/streams/b/entries?after=%24&block_ms=0 HTTP/1.1\r\nHost: x\r\n\r\n")
    else:
        body = orjson.dumps(["XREAD", "BLOCK", 0, "STREAMS", "b", "$"])
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                     % (len(body), body))  # fmt: skip
    time.sleep(0.5)
    before = srv.blocked_clients()
    sock.close()
    after = None
    for _ in range(30):
        time.sleep(0.1)
        after = srv.blocked_clients()
        if after == before - 1:
            break
    released = "released" if after == before - 1 else "NOT released"
    return f"blocked_clients {before} while waiting, {after} after the client closed: {released}"


def probe_head_timeout(srv: Running, partial: bool) -> str:
    sock = connect(srv.port)
    if partial:
        sock.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n")
    took, got, how = read_until_closed(sock, 15)
    sock.close()
    return f"{how} after {took:.1f} s, {status(got)}"


def probe_body_timeout(srv: Running) -> str:
    sock = connect(srv.port)
    sock.sendall(b'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n["XA')
    took, got, how = read_until_closed(sock, 15)
    sock.close()
    return f"{how} after {took:.1f} s, {status(got)}"


def probe_body_size(srv: Running) -> str:
    sock = connect(srv.port)
    body = orjson.dumps(["XADD", "big", "*", "f", "x" * 5000])
    sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    got = read_until(sock, b"\r\n\r\n", 10)
    sock.close()
    return status(got)


def probe_keepalive(srv: Running) -> str:
    sock = connect(srv.port)
    sock.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
    read_until(sock, b'"ready"')
    took, _got, how = read_until_closed(sock, 12)
    sock.close()
    return f"idle keep-alive connection {how} after {took:.1f} s"


def probe_cap(srv: Running, busy: bool) -> str:
    """Four connections held (idle after a request, or each with a blocked read in flight),
    then a fifth asks ``GET /readyz``."""
    held = []
    for _ in range(4):
        sock = connect(srv.port)
        if busy:
            body = orjson.dumps(["XREAD", "BLOCK", 0, "STREAMS", "cap", "$"])
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(body), body))  # fmt: skip
        else:
            sock.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
            read_until(sock, b'"ready"')
        held.append(sock)
    time.sleep(0.3)
    t0 = time.monotonic()
    fifth = connect(srv.port)
    fifth.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
    fifth.settimeout(5)
    try:
        got = read_until(fifth, b"\r\n\r\n", 5)
        answer = f"{status(got)} after {time.monotonic() - t0:.2f} s"
    except TimeoutError:
        answer = "no answer within 5 s (queued)"
    fifth.close()
    for sock in held:
        sock.close()
    return answer


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.server_probes", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--kinds", default=",".join(KINDS), help=f"servers to probe, of {', '.join(KINDS)}"
    )
    kinds = parser.parse_args().kinds.split(",")
    if not set(kinds) <= set(KINDS):
        parser.error(f"--kinds: choose among {', '.join(KINDS)}")
    root = Path(tempfile.mkdtemp(prefix="xstreams-probes-"))
    results: dict[str, dict[str, str]] = {}

    def record(name: str, kind: str, fn: Callable[[], str]) -> None:
        try:
            out = fn()
        except Exception as e:  # a probe that breaks is a finding too
            out = f"probe failed: {type(e).__name__}: {e}"
        results.setdefault(name, {})[kind] = out
        print(f"[{kind}] {name}: {out}", flush=True)

    try:
        for kind in kinds:
            record(
                "SIGTERM, no event stream open",
                kind,
                lambda k=kind: probe_shutdown(k, root / f"{k}-plain", with_sse=False),
            )
            record(
                "SIGTERM with an event stream open",
                kind,
                lambda k=kind: probe_shutdown(k, root / f"{k}-sse", with_sse=True),
            )
            record(
                "SIGTERM with an event stream open, fsync off (journal-less: snapshots only)",
                kind,
                lambda k=kind: probe_shutdown(k, root / f"{k}-off", with_sse=True, fsync="off"),
            )
            record(
                "recovery fails (garbage database file)",
                kind,
                lambda k=kind: probe_fatal(k, root / f"{k}-fatal"),
            )
            with server(kind, root / f"{kind}-limits") as srv:
                checks: list[tuple[str, Callable[[], str]]] = [
                    ("XREAD BLOCK 0 (POST /), client closes", lambda: probe_blocked(srv, False)),
                    ("REST block_ms=0, client closes", lambda: probe_blocked(srv, True)),
                    ("body over max_body_bytes (4096)", lambda: probe_body_size(srv)),
                    ("connection opened, nothing sent (header timeout 1 s)",
                     lambda: probe_head_timeout(srv, partial=False)),
                    ("half a head sent (header timeout 1 s)",
                     lambda: probe_head_timeout(srv, partial=True)),
                    ("head sent, 4 of 100 body bytes (body timeout 1 s)",
                     lambda: probe_body_timeout(srv)),
                    ("keep-alive idle (keepalive_timeout_ms 1000)", lambda: probe_keepalive(srv)),
                    ("5th connection, 4 idle held (cap 4 / backpressure 4)",
                     lambda: probe_cap(srv, busy=False)),
                    ("5th connection, 4 blocked reads in flight (cap 4 / backpressure 4)",
                     lambda: probe_cap(srv, busy=True)),
                ]  # fmt: skip
                for name, fn in checks:
                    record(name, kind, fn)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("\n| probe | " + " | ".join(KINDS[k] for k in kinds) + " |")
    print("|---|" + "---|" * len(kinds))
    for name, by_kind in results.items():
        print(f"| {name} | " + " | ".join(by_kind.get(k, "") for k in kinds) + " |")


if __name__ == "__main__":
    main()
