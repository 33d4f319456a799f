"""End-to-end latency of SSE delivery, beside redis-server's XREAD / XREADGROUP BLOCK.

    python -m bench.sse            # 10 s per scenario
    python -m bench.sse --quick    # 3 s per scenario, under two minutes in all

Latency is measured from the moment the producer has an append's HTTP reply (RESP reply for
redis-server) to the event's arrival at each subscriber, on loopback, with the producer, the
subscribers and the server on this machine. Scenarios (issue 4's targets in brackets):

- live tail: 10 subscribers at 1,000 entries/s [p99 <= 3 ms], 100 at 1,000/s [all keep up,
  p99 <= 25 ms], 1,000 at 100/s [p99 <= 50 ms];
- group delivery: 10 consumers of one group at 1,000 entries/s (each entry to one of them);
- the same against redis-server (``XREAD BLOCK`` loops, ``XREADGROUP BLOCK`` loops), on
  database 9 of 127.0.0.1:6379 by default, under a key of the benchmark's own (deleted after;
  nothing else is touched);
- the highest rate 100 live-tail subscribers sustain: every entry delivered, p99 <= 100 ms;
- fan-out (issue 29: p99 <= 100 ms, <= 12 KB per subscriber, 20,000 held): 20,000 live tails
  of one stream (10,000 with ``--quick``; ``--fanout-subscribers``), opened from 2 client
  processes of raw sockets on uvloop, the producer at 2 entries/s for ``--fanout-seconds``,
  on a server of its own whose caps admit them (``XSTREAMS_SSE_MAX_CONNECTIONS``,
  ``XSTREAMS_MAX_CONNECTIONS``, as an operator sets them). Beside latency: the server's RSS
  per subscriber (once all are live, and at the end, against before they connected) and its
  CPU per event delivered. The open-file limit is raised to fit; where the hard limit cannot
  be raised (no CAP_SYS_RESOURCE) the count is lowered to what fits, and the output says so.
  After each count, the send floor (issue 38's anchor): the time to send one event-sized
  chunk to each of N loopback sockets with plain ``send`` calls, read by a uvloop process,
  in the same run; the output gives p99 / floor. ``XSTREAMS_BENCH_SERVER_PATH`` runs the
  server from another checkout (a baseline beside this one).
  ``--fanout-redis-port`` adds the anchor, the same subscribers as ``XREAD BLOCK`` loops on a
  redis-server of your own (its ``maxclients`` above the count; not the shared one).

xstreams runs as ``xstreams serve`` with ``--fsync off`` unless ``--fsync`` says otherwise
(redis-server in CI runs without persistence too). Events arriving before the producer has
read its own reply count as 0 ms.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import redis
import uvloop

from bench import sse_clients as clients

VALUE = "x" * 64  # each entry: n=<index>, v=<64 bytes>
TAIL, GROUP = "tail", "group"


@dataclass
class Result:
    label: str
    target: str
    p50_ms: float
    p99_ms: float
    p999_ms: float
    delivered: float  # fraction of the events due that arrived
    rate: float  # entries/s the producer achieved

    def row(self) -> str:
        return (
            f"{self.label:<44} {self.target:>14} {self.p50_ms:>8.2f} {self.p99_ms:>8.2f} "
            f"{self.p999_ms:>8.2f} {self.delivered * 100:>9.2f}% {self.rate:>8.0f}"
        )


HEADER = (
    f"{'scenario':<44} {'target':>14} {'p50 ms':>8} {'p99 ms':>8} {'p99.9 ms':>8} "
    f"{'delivered':>10} {'entries/s':>8}"
)


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return math.nan
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def _id_key(sid: str) -> tuple[int, int]:
    ms, _, seq = sid.partition("-")
    return int(ms), int(seq)


class XstreamsServer:
    """``xstreams serve`` in a subprocess on a free loopback port."""

    def __init__(self, fsync: str, env: dict[str, str] | None = None) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.dir = tempfile.TemporaryDirectory(prefix="xstreams-bench-")
        env = {**os.environ, "XSTREAMS_SSE_MAX_CONNECTIONS": "5000", **(env or {})}
        cmd = [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1",
               "--port", str(self.port), "--data-dir", self.dir.name, "--fsync", fsync,
               "--log-level", "warning"]  # fmt: skip
        # The code under test may be another checkout's (a baseline run beside this one):
        # ``-m`` puts the working directory first on the path.
        where = os.environ.get("XSTREAMS_BENCH_SERVER_PATH")
        self.proc = subprocess.Popen(cmd, env=env, cwd=where)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("xstreams did not start")
            time.sleep(0.1)

    def rss_kb(self) -> int:
        """The server's resident memory (VmRSS), in KB."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def cpu_s(self) -> float:
        """CPU time the server has used (user + system), in seconds."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def command(self, *args: str) -> Any:
        r = httpx.post(self.url + "/", json=list(args), timeout=10)
        return r.json()["result"]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # a shutdown closing thousands of streams may take its time
            self.proc.wait(15)
        self.dir.cleanup()


@dataclass
class Scenario:
    kind: str  # TAIL or GROUP
    subscribers: int
    rate: float
    seconds: float
    target: str = ""


def run_xstreams(server: XstreamsServer, sc: Scenario) -> Result:
    key = f"bench-{uuid.uuid4().hex[:8]}"
    if sc.kind == GROUP:
        server.command("XGROUP", "CREATE", key, "g", "$", "MKSTREAM")
        paths = []
        for i in range(sc.subscribers):
            server.command("XGROUP", "CREATECONSUMER", key, "g", f"c{i}")
            paths.append(f"/v1/streams/{key}/groups/g/consumers/c{i}/events")
    else:
        paths = [f"/v1/streams/{key}/events"] * sc.subscribers
    chunks = _split(paths, 1 if sc.subscribers <= 10 else 2)
    return _run_paths(server, sc, key, chunks, sc.kind == GROUP)


def _run_paths(server: XstreamsServer, sc: Scenario, key: str, chunks: list[list[Any]],
               with_ids: bool, on_ready: Callable[[], None] | None = None) -> Result:  # fmt: skip
    total = int(sc.rate * sc.seconds)

    def start(ready: Any, finish: Any, out: Any, part: list[Any], expected: int) -> Any:
        return (clients.subscribe, ("127.0.0.1", server.port, part, expected, ready, finish,
                                    out, with_ids))  # fmt: skip

    make = clients.http_xadd(key, VALUE)
    result = _measure(sc, chunks, start, server.port, make, None, total, on_ready)
    server.command("DEL", key)
    return result


@dataclass
class FanOut:
    result: Result
    rss_before_kb: int
    rss_open_kb: int  # every subscriber connected and live, before the producer starts
    rss_after_kb: int  # at the end of the run, subscribers still open
    cpu_s: float  # the server's CPU time from the producer's start to the run's end

    def cpu_us_per_event(self, n: int) -> float:
        """Server CPU per event delivered to one subscriber: the per-subscriber work of a
        fan-out, which a loaded machine changes far less than it changes latency."""
        return self.cpu_s * 1e6 / max(self.result.delivered * n * self.entries, 1)

    entries: int = 0  # appended by the producer

    def kb_per_subscriber(self, n: int) -> float:
        return (max(self.rss_open_kb, self.rss_after_kb) - self.rss_before_kb) / n


def fanout_env(subscribers: int) -> dict[str, str]:
    """Caps that admit the run's subscribers (an operator's settings, by environment): the
    event-stream cap and the connection cap, each at least ``subscribers`` plus room for the
    producer. The per-credential cap (``sse_max_connections_per_key``) does not apply: the
    benchmark's server has no credentials configured, and an open service is not counted per
    key (app/api/holds.py)."""
    return {
        "XSTREAMS_SSE_MAX_CONNECTIONS": str(max(subscribers, 5000)),
        "XSTREAMS_MAX_CONNECTIONS": str(subscribers + 2000),
    }


def run_fanout(server: XstreamsServer, sc: Scenario, processes: int) -> FanOut:
    """``sc.subscribers`` live tails of one stream, opened from ``processes`` client processes
    (raw sockets, uvloop), the producer at ``sc.rate``; the server's RSS before they connect,
    once they are all live, and at the end."""
    key = f"bench-{uuid.uuid4().hex[:8]}"
    server.command("XADD", key, "*", "n", "-1", "v", VALUE)  # the stream exists, warm
    paths = [f"/v1/streams/{key}/events"] * sc.subscribers
    chunks = _split(paths, processes)
    before = server.rss_kb()
    seen: dict[str, int] = {}

    cpu: dict[str, float] = {}

    def on_ready() -> None:
        time.sleep(1.0)  # the last joins settle (each subscriber reads once, then goes live)
        seen["open"] = server.rss_kb()
        cpu["start"] = server.cpu_s()

    res = _run_paths(server, sc, key, chunks, False, on_ready)
    cpu_s = server.cpu_s() - cpu["start"]
    after = server.rss_kb()
    return FanOut(res, before, seen["open"], after, cpu_s, sc_total(sc))


# Files the server holds beside its subscribers' sockets (app.server.connections.RESERVED_FILES
# and some room for the producer's connections).
FILES_BESIDE = 512


def fanout_redis(counts: list[int], port: int, seconds: float, processes: int) -> None:
    """The anchor: the same subscribers as ``XREAD BLOCK`` loops on redis-server."""
    for wanted in counts:
        n = min(wanted, raise_open_files(wanted + FILES_BESIDE) - FILES_BESIDE)
        n -= n % 100
        sc = Scenario(TAIL, n, 2, seconds, "anchor")
        key = f"xstreams-bench:{uuid.uuid4().hex[:8]}"
        r = redis.Redis(port=port)
        try:
            chunks = _split([None] * n, processes)

            def start(ready: Any, finish: Any, out: Any, part: list[Any], expected: int,
                      key: str = key) -> Any:  # fmt: skip
                return (clients.redis_read, ("127.0.0.1", port, 0, key, part, expected, ready,
                                             finish, out))  # fmt: skip

            res = _measure(sc, chunks, start, port, clients.resp_xadd(key, VALUE), 0, sc_total(sc))
        finally:
            r.delete(key)
            r.close()
        res.label = "redis XREAD BLOCK fan-out " + res.label
        print(res.row(), flush=True)


def sc_total(sc: Scenario) -> int:
    return int(sc.rate * sc.seconds)


def raise_open_files(wanted: int) -> int:
    """Room for ``wanted`` sockets in this process and the ones it starts (they inherit it):
    the soft limit up to the hard one, and the hard one too when this process may
    (CAP_SYS_RESOURCE). Returns the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        return wanted
    if hard < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, wanted))
            return wanted
        except (ValueError, OSError):
            pass
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def run_redis(port: int, db: int, sc: Scenario) -> Result:
    key = f"xstreams-bench:{uuid.uuid4().hex[:8]}"
    r = redis.Redis(port=port, db=db)
    r.delete(key)
    consumers: list[str | None]
    if sc.kind == GROUP:
        r.xgroup_create(key, "g", "$", mkstream=True)
        consumers = [f"c{i}" for i in range(sc.subscribers)]
    else:
        consumers = [None] * sc.subscribers
    total = int(sc.rate * sc.seconds)
    chunks = _split(consumers, 1 if sc.subscribers <= 10 else 2)

    def start(ready: Any, finish: Any, out: Any, part: list[Any], expected: int) -> Any:
        return (clients.redis_read, ("127.0.0.1", port, db, key, part, expected, ready,
                                     finish, out))  # fmt: skip

    try:
        return _measure(sc, chunks, start, port, clients.resp_xadd(key, VALUE), db, total)
    finally:
        r.delete(key)
        r.close()


def _split(items: list[Any], n: int) -> list[list[Any]]:
    return [items[i::n] for i in range(n) if items[i::n]]


def _measure(sc: Scenario, chunks: list[list[Any]], start: Any, port: int, make: Any,
             redis_db: int | None, total: int,
             on_ready: Callable[[], None] | None = None) -> Result:  # fmt: skip
    ctx = mp.get_context("spawn")
    ready, out, finish = ctx.Queue(), ctx.Queue(), ctx.Event()
    expected = total
    procs = []
    for part in chunks:
        target, args = start(ready, finish, out, part, expected)
        p = ctx.Process(target=target, args=args, daemon=True)
        p.start()
        procs.append(p)
    for _ in procs:
        opened = ready.get(timeout=max(60, sc.subscribers / 50))
        if isinstance(opened, str):
            for p in procs:
                p.kill()
            raise RuntimeError(f"a client process failed: {opened}")
    if on_ready is not None:
        on_ready()
    # Open loop: enough connections that a slow reply delays no later append.
    connections = max(4, math.ceil(sc.rate / 125))
    replies, achieved = uvloop.run(
        clients.produce("127.0.0.1", port, make, redis_db, total, sc.rate, connections)
    )
    finish.set()
    arrivals: list[clients.Arrivals] = []
    for _ in procs:
        arrivals += out.get(timeout=120)
    for p in procs:
        p.join(30)
    replies.sort(key=lambda r: _id_key(r[0]))
    latencies: list[float] = []
    if sc.kind == TAIL:
        reply_times = [t for _, t in replies]
        due = total * sc.subscribers
        got = 0
        for a in arrivals:
            n = min(len(a.times), total)
            got += n
            latencies += [max(a.times[i] - reply_times[i], 0.0) for i in range(n)]
    else:
        reply_of = dict(replies)
        seen: set[str] = set()
        for a in arrivals:
            for sid, t in a.ids:
                if sid in seen:
                    raise AssertionError(f"entry {sid} delivered twice in one group")
                seen.add(sid)
                latencies.append(max(t - reply_of[sid], 0.0))
        due, got = total, len(seen)
    latencies.sort()
    ms = [x * 1000 for x in (percentile(latencies, q) for q in (0.5, 0.99, 0.999))]
    label = (
        f"{sc.subscribers} {'subscribers' if sc.kind == TAIL else 'group consumers'} "
        f"@ {sc.rate:.0f}/s"
    )
    return Result(label, sc.target, ms[0], ms[1], ms[2], got / due, achieved)


def _redis_up(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="3 s per scenario")
    parser.add_argument("--fsync", default="off", choices=["always", "everysec", "off"])
    parser.add_argument("--redis-port", type=int, default=6379)
    parser.add_argument("--redis-db", type=int, default=9)
    names = ["tail10", "tail100", "tail1000", "group10", "max", "fanout"]
    parser.add_argument("--only", nargs="+", choices=names, default=names)
    parser.add_argument(
        "--fanout-subscribers",
        type=int,
        nargs="+",
        default=None,
        help="subscribers of the fan-out scenario (default 20000; 10000 with --quick)",
    )
    parser.add_argument("--fanout-seconds", type=float, default=10.0, help="fan-out run length")
    parser.add_argument(
        "--fanout-processes", type=int, default=2, help="client processes of the fan-out"
    )
    parser.add_argument(
        "--fanout-redis-port",
        type=int,
        default=None,
        help="anchor: the same fan-out as XREAD BLOCK loops on a redis-server of its own here "
        "(maxclients above the subscribers; not the shared one)",
    )
    opts = parser.parse_args()
    seconds = 3.0 if opts.quick else 10.0
    every = {
        "tail10": Scenario(TAIL, 10, 1000, seconds, "p99 <= 3 ms"),
        "tail100": Scenario(TAIL, 100, 1000, seconds, "p99 <= 25 ms"),
        "tail1000": Scenario(TAIL, 1000, 100, seconds, "p99 <= 50 ms"),
        "group10": Scenario(GROUP, 10, 1000, seconds, "-"),
    }
    scenarios = [sc for name, sc in every.items() if name in opts.only]
    if scenarios or "max" in opts.only:
        general(opts, scenarios, seconds)
    if "fanout" in opts.only:
        counts = opts.fanout_subscribers or [10_000 if opts.quick else 20_000]
        fanout(counts, opts.fsync, opts.fanout_seconds, opts.fanout_processes)
        if opts.fanout_redis_port is not None:
            fanout_redis(counts, opts.fanout_redis_port, opts.fanout_seconds, opts.fanout_processes)


def general(opts: argparse.Namespace, scenarios: list[Scenario], seconds: float) -> None:
    """Issue 4's scenarios, each beside redis-server, and the highest rate sustained."""
    print(f"xstreams SSE (--fsync {opts.fsync}) vs redis-server "
          f"127.0.0.1:{opts.redis_port} db {opts.redis_db}; {seconds:.0f} s per scenario; "
          f"{os.cpu_count()} CPUs", flush=True)  # fmt: skip
    print(HEADER, flush=True)
    server = XstreamsServer(opts.fsync)
    try:
        for sc in scenarios:
            res = run_xstreams(server, sc)
            res.label = "xstreams SSE  " + res.label
            print(res.row(), flush=True)
        if _redis_up(opts.redis_port):
            for sc in scenarios:
                res = run_redis(opts.redis_port, opts.redis_db, Scenario(
                    sc.kind, sc.subscribers, sc.rate, sc.seconds, "anchor"))  # fmt: skip
                kind = "XREAD BLOCK  " if sc.kind == TAIL else "XREADGROUP   "
                res.label = "redis " + kind + res.label
                print(res.row(), flush=True)
        else:
            print(f"(redis-server not reachable on 127.0.0.1:{opts.redis_port}: no anchor)")
        if "max" in opts.only:
            best = _max_rate(server, 2.0 if opts.quick else 5.0)
            print(f"\nhighest rate 100 live-tail subscribers sustain (all delivered, p99 <= "
                  f"100 ms): {best:.0f} entries/s ({best * 100:.0f} events/s out)")  # fmt: skip
    finally:
        server.stop()


def fanout(counts: list[int], fsync: str, seconds: float, processes: int) -> None:
    """Issue 29: one stream, many subscribers, 2 entries/s; a fresh server for each count."""
    print(f"\nfan-out: N live tails of one stream at 2 entries/s, {seconds:.0f} s, clients in "
          f"{processes} processes (raw sockets, uvloop); target p99 <= 100 ms, "
          f"<= 12 KB/subscriber, 20,000 held", flush=True)  # fmt: skip
    print(f"{HEADER} {'KB/sub':>7} {'RSS MB':>10} {'CPU us/event':>12} {'floor ms':>8} "
          f"{'p99/floor':>10}", flush=True)  # fmt: skip
    for wanted in counts:
        n = min(wanted, raise_open_files(wanted + FILES_BESIDE) - FILES_BESIDE)
        n -= n % 100
        if n < wanted:
            print(f"({wanted} subscribers do not fit the hard open-file limit of "
                  f"{resource.getrlimit(resource.RLIMIT_NOFILE)[1]}, which this process cannot "
                  f"raise: {n} instead)", flush=True)  # fmt: skip
        server = XstreamsServer(fsync, fanout_env(n))
        try:
            sc = Scenario(TAIL, n, 2, seconds, "p99 <= 100 ms")
            got = run_fanout(server, sc, processes)
        finally:
            server.stop()
        res = got.result
        res.label = "xstreams SSE fan-out " + res.label
        rss = f"{got.rss_before_kb / 1024:.0f}->{max(got.rss_open_kb, got.rss_after_kb) / 1024:.0f}"
        floor_ms, lowest_ms = send_floor(n)
        print(f"{res.row()} {got.kb_per_subscriber(n):>7.1f} {rss:>10} "
              f"{got.cpu_us_per_event(n):>12.1f} {floor_ms:>8.1f} "
              f"{res.p99_ms / floor_ms:>10.2f}  (floor lowest {lowest_ms:.1f} ms, "
              f"{floor_ms * 1000 / n:.1f} us/socket; load {os.getloadavg()[0]:.1f})",
              flush=True)  # fmt: skip


def event_chunk() -> bytes:
    """An event of the fan-out as the server writes it: one HTTP chunk."""
    data = orjson.dumps({"id": "1764000000000-0", "fields": {"n": "1234", "v": VALUE}})
    event = b"id: 1764000000000-0\nevent: entry\ndata: %s\n\n" % data
    return b"%x\r\n%s\r\n" % (len(event), event)


def send_floor(n: int, rounds: int = 10) -> tuple[float, float]:
    """The anchor of issue 38: the time to send one event-sized chunk to each of ``n``
    loopback sockets with plain ``send`` calls (no Python beyond the loop), read by a uvloop
    process as the subscribers are. Median and lowest of ``rounds`` rounds, in ms."""
    chunk = event_chunk()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4096)
    port = listener.getsockname()[1]
    ctx = mp.get_context("spawn")
    ready, finish = ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=clients.sink, args=("127.0.0.1", port, n, ready, finish), daemon=True)
    proc.start()
    socks: list[socket.socket] = []
    try:
        listener.settimeout(60)
        while len(socks) < n:
            conn, _ = listener.accept()
            socks.append(conn)
        opened = ready.get(timeout=60)
        if isinstance(opened, str):
            raise RuntimeError(f"the send floor's reader failed: {opened}")
        times = []
        for _ in range(rounds):
            time.sleep(0.5)  # the events' pace (2/s): the reader has drained the last round
            start = time.perf_counter()
            for sock in socks:
                sock.send(chunk)
            times.append((time.perf_counter() - start) * 1000)
        times.sort()
        return times[len(times) // 2], times[0]
    finally:
        finish.set()
        proc.join(30)
        for sock in socks:
            sock.close()
        listener.close()


def _max_rate(server: XstreamsServer, seconds: float) -> float:
    best = 0.0
    for rate in (1000, 1500, 2000, 3000, 4000, 6000, 8000):
        res = run_xstreams(server, Scenario(TAIL, 100, rate, seconds))
        ok = res.delivered >= 1.0 and res.p99_ms <= 100 and res.rate >= 0.95 * rate
        print(f"  100 subscribers @ {rate}/s: {res.rate:.0f}/s appended, p99 "
              f"{res.p99_ms:.1f} ms, delivered {res.delivered * 100:.2f}% "
              f"{'ok' if ok else 'falls behind'}", flush=True)  # fmt: skip
        if not ok:
            break
        best = res.rate
    return best


if __name__ == "__main__":
    main()
