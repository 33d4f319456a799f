"""Workload 8 of ``python -m bench``: one page of the keyspace over 100,000 streams — SCAN
COUNT 100 and KEYS through the command endpoint, ``GET /v1/streams?count=100`` — beside
redis-server's SCAN and KEYS over the same 100,000 stream keys (issue 13: one page ≤ 5 ms, no
sort of the whole keyspace per call).

A fresh xstreams (``--fsync off``) and a fresh redis-server each get the same streams,
ks:000000 to ks:099999 with one entry of 3 small fields. Each round, ``bench.client pages``
(its own process, one connection, one request at a time) times every page of a whole cursor
walk from cursor 0 until the cursor comes back to 0, so pages from every part of the keyspace
count, not only the first; KEYS is timed over 50 patterns of 100 keys each (ks:0012* ...)
spread over the keyspace. The walk checks that it saw every stream, and each KEYS call that it
matched 100. The ceiling is the bare app's GET timed the same way: the HTTP round trip no page
can beat. A cell's figure is the median page latency of a round; its p99 is the round's 99th
percentile, and the target is judged on that p99.
"""

from __future__ import annotations

from collections.abc import Callable

from bench import harness
from bench.harness import Fleet, Sample, Server
from bench.workloads import Cell, Plan, Row, measure

KEYS_CALLS = 50


def _pages_cell(key: str, label: str, server: Server, kind: str, streams: int) -> Cell:
    def run(_round: int) -> Sample:
        got, cores, srv = harness.client(
            server,
            ["pages", "--port", str(server.port), "--kind", kind, "--streams", str(streams),
             "--count", "100", "--calls", str(KEYS_CALLS)],
            timeout=900,
        )  # fmt: skip
        return Sample(got["p50_ms"], got["p50_ms"], got["p99_ms"], cores, srv)

    return Cell(key, label, "ms/page", run)


def keyspace(
    fleet: Fleet, bare: Server, plan: Plan, log: Callable[[str], None]
) -> tuple[list[Cell], list[Row]]:
    """8) SCAN, KEYS and REST list pages over ``plan.keyspace_streams`` streams."""
    n = plan.keyspace_streams
    xs = fleet.xstreams("xstreams-keyspace", "off")
    redis = fleet.redis("redis-keyspace")
    for server, kind in ((xs, "http"), (redis, "redis")):
        got, _cores, _srv = harness.client(
            server, ["streams", "--port", str(server.port), "--kind", kind, "--streams", str(n)],
            timeout=900,
        )  # fmt: skip
        log(f"  {server.name}: {got['streams']:,} streams made")
    size = f"{n:,} streams" + (" (--quick; full run: 100,000)" if plan.quick else "")
    cells = [
        _pages_cell("bare_get_page", "bare GET, one at a time", bare, "bare", n),
        _pages_cell("xs_scan_page", "xstreams SCAN COUNT 100 (command)", xs, "scan", n),
        _pages_cell("xs_keys_page", "xstreams KEYS ks:NNNN* (command)", xs, "keys", n),
        _pages_cell("xs_rest_page", "xstreams GET /v1/streams?count=100 (REST)", xs, "rest", n),
        _pages_cell("redis_scan_page", "redis SCAN COUNT 100", redis, "redis-scan", n),
        _pages_cell("redis_keys_page", "redis KEYS ks:NNNN*", redis, "redis-keys", n),
    ]
    measure(cells, plan.rounds, log)
    xs.stop()
    redis.stop()
    target = {"kind": "max", "value": 5.0, "figure": "p99_ms"}
    rows = [
        Row(f"8. SCAN COUNT 100, one page of {size}, command", "ms/page", "xs_scan_page",
            "redis_scan_page", "bare_get_page", target),
        Row(f"8. KEYS matching 100 of {size}, command", "ms/page", "xs_keys_page",
            "redis_keys_page", "bare_get_page", target),
        Row(f"8. GET /v1/streams count=100, one page of {size}, REST (redis: SCAN)", "ms/page",
            "xs_rest_page", "redis_scan_page", "bare_get_page", target),
    ]  # fmt: skip
    return cells, rows
