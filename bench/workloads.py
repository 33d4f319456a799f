"""Issue 7's workloads 1 to 6, as cells measured interleaved and rows the report shows.

A *cell* is one (server, request shape) measurement; a *group* of cells is measured round by
round, every cell once a round in a fixed order (A/B/C/A/B/C...), so drift on this shared
machine spreads over all columns instead of landing on one. A *row* of the report names its
xstreams cell and the redis-server and bare-ceiling cells it stands beside.

Bare ceilings are the same wrk run against the trivial app (bench/bare_app.py) with the same
connections and a body of the same size; for rates in entries/s they are multiplied by the
entries a request would carry (100 for a batch; 50 for consume+ack, one read and one ack per
100 entries).
"""

from __future__ import annotations

import statistics
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench import harness
from bench.client import FIELDS
from bench.harness import Fleet, Sample, Server

CLIENTS = 50
BATCH = 100
CONSUMERS = 10


@dataclass(frozen=True)
class Plan:
    """How much to measure: ``--quick`` shrinks rounds, seconds and entry counts."""

    quick: bool
    rounds: int
    seconds: float
    range_entries: int = 100_000
    consume_entries: int = 100_000
    redis_consume_entries: int = 500_000
    memory_entries: int = 1_000_000
    recovery_entries: int = 1_000_000  # workload 7 (bench/recovery.py)
    restart_records: int = 100_000  # workload 7's Idempotency-Key and IDMP journals
    keyspace_streams: int = 100_000  # workload 8 (bench/keyspace.py)

    @classmethod
    def make(cls, quick: bool) -> Plan:
        if quick:
            return cls(
                True, rounds=3, seconds=2.0, memory_entries=200_000, recovery_entries=100_000,
                keyspace_streams=10_000,
            )  # fmt: skip
        return cls(
            False, rounds=5, seconds=5.0, consume_entries=300_000,
            redis_consume_entries=2_000_000,
        )  # fmt: skip


@dataclass
class Cell:
    """One measured thing; ``run(round)`` gives one sample."""

    key: str
    label: str
    unit: str
    run: Callable[[int], Sample]
    samples: list[Sample] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        rates = [s.rate for s in self.samples]
        out: dict[str, Any] = {
            "label": self.label,
            "unit": self.unit,
            "samples": [asdict(s) for s in self.samples],
            "median": statistics.median(rates),
            "min": min(rates),
            "max": max(rates),
            "client_cpu_max": max(s.client_cpu for s in self.samples),
        }
        for name in ("p50_ms", "p99_ms", "p999_ms"):
            values = [getattr(s, name) for s in self.samples if getattr(s, name) is not None]
            out[name] = statistics.median(values) if values else None
        server = [s.server_cpu for s in self.samples if s.server_cpu is not None]
        out["server_cpu_median"] = statistics.median(server) if server else None
        return out


@dataclass(frozen=True)
class Row:
    """One line of the table: an xstreams cell beside its anchors, and the issue's target."""

    label: str
    unit: str
    xstreams: str
    redis: str | None
    bare: str | None
    # {"kind": "ceiling_ratio"|"baseline_ratio"|"redis_ratio"|"min"|"max", "value": x}
    target: dict[str, Any] | None = None


def measure(cells: list[Cell], rounds: int, log: Callable[[str], None]) -> None:
    """Every cell once a round, in order, ``rounds`` times (interleaved A/B/A/B)."""
    for r in range(rounds):
        for cell in cells:
            sample = cell.run(r)
            cell.samples.append(sample)
            extra = f" p99 {sample.p99_ms:.1f} ms" if sample.p99_ms is not None else ""
            if sample.p999_ms is not None:
                extra += f" p99.9 {sample.p999_ms:.1f} ms"
            rate = f"{sample.rate:,.0f}" if sample.rate >= 100 else f"{sample.rate:.3g}"
            log(
                f"  round {r + 1}/{rounds} {cell.label}: {rate} {cell.unit}{extra}"
                f" (client {sample.client_cpu:.2f} cores)"
            )


def _post(server: Server, command: list[Any]) -> Any:
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}/",
        data=orjson.dumps(command),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        return orjson.loads(reply.read())["result"]


def _fill_xstreams(server: Server, stream: str, entries: int) -> None:
    harness.client(
        server,
        ["fill", "--port", str(server.port), "--stream", stream, "--entries", str(entries)],
        timeout=600,
    )


def _fill_redis(server: Server, stream: str, entries: int) -> None:
    harness.redis_benchmark(server, ["XADD", stream, "*", *FIELDS], 10, entries, pipeline=100)


class _RedisCounts:
    """redis-benchmark runs a count, not a time: size each run from the previous rate."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.rate: dict[str, float] = {}

    def cell(
        self, key: str, label: str, unit: str, server: Server, command: list[str],
        clients: int, guess: float, pipeline: int = 1,
    ) -> Cell:  # fmt: skip
        def run(_round: int) -> Sample:
            n = max(2000, int(self.rate.get(key, guess) * self.seconds))
            sample = harness.redis_benchmark(server, command, clients, n, pipeline)
            self.rate[key] = sample.rate
            return sample

        return Cell(key, label, unit, run)


def _wrk_cell(
    key: str, label: str, unit: str, server: Server, path: str, script: Path,
    connections: int, seconds: float, per_request: int = 1,
) -> Cell:  # fmt: skip
    return Cell(
        key, label, unit,
        lambda _r: harness.wrk(server, path, script, connections, seconds, per_request),
    )  # fmt: skip


@dataclass
class Servers:
    """The servers the throughput workloads share (started once, up for the whole run)."""

    xs_off: Server
    xs_always: Server
    redis: Server
    redis_aof: Server
    bare: Server
    scripts: Path


def start(fleet: Fleet) -> Servers:
    return Servers(
        xs_off=fleet.xstreams("xstreams-off", "off"),
        xs_always=fleet.xstreams("xstreams-always", "always"),
        redis=fleet.redis("redis"),
        redis_aof=fleet.redis("redis-aof-always", aof_always=True),
        bare=fleet.bare(),
        scripts=fleet.tmpdir("lua"),
    )


def xadd(s: Servers, plan: Plan, counts: _RedisCounts) -> tuple[list[Cell], list[Row]]:
    """1) One XADD per request, 50 connections: requests/s and latency."""
    sec = plan.seconds
    cmd = harness.wrk_script(s.scripts, "xadd", "POST", orjson.dumps(["XADD", "w1", "*", *FIELDS]))
    pairs = dict(zip(FIELDS[::2], FIELDS[1::2], strict=True))
    rest = harness.wrk_script(s.scripts, "xadd-rest", "POST", orjson.dumps({"fields": pairs}))
    cells = [
        _wrk_cell("bare_post", "bare POST", "req/s", s.bare, "/", cmd, CLIENTS, sec),
        _wrk_cell("xs_xadd_cmd", "xstreams XADD (command)", "req/s", s.xs_off, "/", cmd,
                  CLIENTS, sec),
        _wrk_cell("xs_xadd_rest", "xstreams XADD (REST)", "req/s", s.xs_off,
                  "/v1/streams/w1r/entries", rest, CLIENTS, sec),
        counts.cell("redis_xadd", "redis XADD", "req/s", s.redis, ["XADD", "w1", "*", *FIELDS],
                    CLIENTS, 80_000),
    ]  # fmt: skip
    target = {"kind": "ceiling_ratio", "value": 0.70}
    rows = [
        Row("1. XADD, 1 entry/request, command", "req/s", "xs_xadd_cmd", "redis_xadd",
            "bare_post", target),
        Row("1. XADD, 1 entry/request, REST", "req/s", "xs_xadd_rest", "redis_xadd",
            "bare_post", target),
    ]  # fmt: skip
    return cells, rows


def scale(
    fleet: Fleet, s: Servers, plan: Plan, counts: _RedisCounts
) -> tuple[list[Cell], list[Row]]:
    """6) The Redis backend (issue 14): one XADD per request with 1 and 2 front-end workers
    in front of one redis-server, beside that redis-server's own XADD rate."""
    sec = plan.seconds
    store = fleet.redis("redis-backend")
    url = f"redis://{harness.LOOPBACK}:{store.port}/0"
    one = fleet.xstreams("xstreams-redis-1w", "off", backend=url, workers=1)
    two = fleet.xstreams("xstreams-redis-2w", "off", backend=url, workers=2)
    cmd = harness.wrk_script(
        s.scripts, "xadd-scale", "POST", orjson.dumps(["XADD", "w6", "*", *FIELDS])
    )
    pairs = dict(zip(FIELDS[::2], FIELDS[1::2], strict=True))
    rest = harness.wrk_script(s.scripts, "xadd-rest-scale", "POST", orjson.dumps({"fields": pairs}))
    path = "/v1/streams/w6r/entries"
    cells = [
        _wrk_cell("bare_post_scale", "bare POST", "req/s", s.bare, "/", cmd, CLIENTS, sec),
        _wrk_cell("xs_redis_1w_cmd", "xstreams on Redis, 1 worker, XADD (command)", "req/s",
                  one, "/", cmd, CLIENTS, sec),
        _wrk_cell("xs_redis_2w_cmd", "xstreams on Redis, 2 workers, XADD (command)", "req/s",
                  two, "/", cmd, CLIENTS, sec),
        _wrk_cell("xs_redis_1w_rest", "xstreams on Redis, 1 worker, XADD (REST)", "req/s",
                  one, path, rest, CLIENTS, sec),
        _wrk_cell("xs_redis_2w_rest", "xstreams on Redis, 2 workers, XADD (REST)", "req/s",
                  two, path, rest, CLIENTS, sec),
        counts.cell("redis_backend_xadd", "redis XADD (the backend's server)", "req/s", store,
                    ["XADD", "w6", "*", *FIELDS], CLIENTS, 80_000),
    ]  # fmt: skip
    # Issue 29: REST on one worker at half the ceiling.
    half = {"kind": "ceiling_ratio", "value": 0.50}
    rows = [
        Row(f"6. XADD on the Redis backend, {n}, {surface}", "req/s", f"xs_redis_{w}_{k}",
            "redis_backend_xadd", "bare_post_scale", half if (k, w) == ("rest", "1w") else None)
        for surface, k in (("command", "cmd"), ("REST", "rest"))
        for n, w in (("1 worker", "1w"), ("2 workers", "2w"))
    ]  # fmt: skip
    return cells, rows


def scaling_notes(cells: list[Cell]) -> list[str]:
    """How much a second front-end worker adds on the Redis backend (the figure issue 14
    asks for), when workload 6 ran."""
    found = {c.key: c.summary()["median"] for c in cells if c.samples}
    notes = []
    for surface, k in (("command", "cmd"), ("REST", "rest")):
        one, two = found.get(f"xs_redis_1w_{k}"), found.get(f"xs_redis_2w_{k}")
        if one and two:
            notes.append(
                f"Redis backend, XADD ({surface}): 2 workers serve {two / one:.2f}x what 1 "
                f"worker serves ({two:,.0f} against {one:,.0f} req/s; 2 cores shared with "
                "wrk and redis-server)."
            )
    return notes


def batch(s: Servers, plan: Plan, counts: _RedisCounts) -> tuple[list[Cell], list[Row]]:
    """2) 100 entries per request: /pipeline and the REST batch, fsync off and always."""
    sec = plan.seconds
    pipe = orjson.dumps([["XADD", "w2", "*", *FIELDS]] * BATCH)
    pairs = dict(zip(FIELDS[::2], FIELDS[1::2], strict=True))
    body = orjson.dumps({"entries": [{"fields": pairs}] * BATCH})
    pipe_s = harness.wrk_script(s.scripts, "pipeline", "POST", pipe)
    rest_s = harness.wrk_script(s.scripts, "batch-rest", "POST", body)
    path = "/v1/streams/w2r/entries"
    e = "entries/s"
    cells = [
        _wrk_cell("bare_batch", "bare POST (100-entry body)", e, s.bare, "/", pipe_s, CLIENTS,
                  sec, BATCH),
        _wrk_cell("xs_pipe_off", "xstreams /pipeline, fsync off", e, s.xs_off, "/pipeline",
                  pipe_s, CLIENTS, sec, BATCH),
        _wrk_cell("xs_pipe_always", "xstreams /pipeline, fsync always", e, s.xs_always,
                  "/pipeline", pipe_s, CLIENTS, sec, BATCH),
        _wrk_cell("xs_batch_off", "xstreams REST batch, fsync off", e, s.xs_off, path, rest_s,
                  CLIENTS, sec, BATCH),
        _wrk_cell("xs_batch_always", "xstreams REST batch, fsync always", e, s.xs_always, path,
                  rest_s, CLIENTS, sec, BATCH),
        counts.cell("redis_pipe", "redis XADD pipelined 100", e, s.redis,
                    ["XADD", "w2", "*", *FIELDS], CLIENTS, 500_000, BATCH),
        counts.cell("redis_pipe_aof", "redis XADD pipelined 100, AOF always", e, s.redis_aof,
                    ["XADD", "w2", "*", *FIELDS], CLIENTS, 300_000, BATCH),
    ]  # fmt: skip
    target = {"kind": "min", "value": 300_000}
    rows = [
        Row("2. batch 100, /pipeline, fsync off", e, "xs_pipe_off", "redis_pipe", "bare_batch"),
        Row("2. batch 100, /pipeline, fsync always (redis: AOF always)", e, "xs_pipe_always",
            "redis_pipe_aof", "bare_batch", target),
        Row("2. batch 100, REST, fsync off", e, "xs_batch_off", "redis_pipe", "bare_batch"),
        Row("2. batch 100, REST, fsync always (redis: AOF always)", e, "xs_batch_always",
            "redis_pipe_aof", "bare_batch", target),
    ]  # fmt: skip
    return cells, rows


def xrange(s: Servers, plan: Plan, counts: _RedisCounts) -> tuple[list[Cell], list[Row]]:
    """3) XRANGE COUNT 10 and 100 from the start of a 100,000-entry stream."""
    _fill_xstreams(s.xs_off, "w3", plan.range_entries)
    _fill_redis(s.redis, "w3", plan.range_entries)
    sec = plan.seconds
    small = harness.wrk_script(s.scripts, "xrange-bare", "POST", orjson.dumps(["XRANGE", "w3"]))
    cells = [
        _wrk_cell("bare_get", "bare GET", "req/s", s.bare, "/",
                  harness.wrk_script(s.scripts, "get", "GET", None), CLIENTS, sec),
        _wrk_cell("bare_post_range", "bare POST (XRANGE group)", "req/s", s.bare, "/", small,
                  CLIENTS, sec),
    ]  # fmt: skip
    rows = []
    for n in (10, 100):
        cmd = harness.wrk_script(
            s.scripts, f"xrange{n}", "POST", orjson.dumps(["XRANGE", "w3", "-", "+", "COUNT", n])
        )
        get = harness.wrk_script(s.scripts, f"get{n}", "GET", None)
        path = f"/v1/streams/w3/entries?start=-&end=%2B&count={n}"
        cells += [
            _wrk_cell(f"xs_xrange{n}_cmd", f"xstreams XRANGE COUNT {n} (command)", "req/s",
                      s.xs_off, "/", cmd, CLIENTS, sec),
            _wrk_cell(f"xs_xrange{n}_rest", f"xstreams GET entries count={n} (REST)", "req/s",
                      s.xs_off, path, get, CLIENTS, sec),
            counts.cell(f"redis_xrange{n}", f"redis XRANGE COUNT {n}", "req/s", s.redis,
                        ["XRANGE", "w3", "-", "+", "COUNT", str(n)], CLIENTS,
                        60_000 if n == 10 else 20_000),
        ]  # fmt: skip
        # Issue 29: COUNT 100 at 60 % of the ceiling on the command endpoint, 50 % on REST.
        cmd_target = {"kind": "ceiling_ratio", "value": 0.60} if n == 100 else None
        rest_target = {"kind": "ceiling_ratio", "value": 0.50} if n == 100 else None
        rows += [
            Row(f"3. XRANGE COUNT {n}, command", "req/s", f"xs_xrange{n}_cmd",
                f"redis_xrange{n}", "bare_post_range", cmd_target),
            Row(f"3. XRANGE COUNT {n}, REST", "req/s", f"xs_xrange{n}_rest",
                f"redis_xrange{n}", "bare_get", rest_target),
        ]  # fmt: skip
    return cells, rows


def consume(s: Servers, plan: Plan) -> tuple[list[Cell], list[Row]]:
    """4) 10 consumers, each looping XREADGROUP COUNT 100 > then XACK of what it got.

    Each round reads through a new group from the start of a pre-filled stream, so rounds
    do not eat each other's entries.
    """
    _fill_xstreams(s.xs_off, "w4", plan.consume_entries)
    _fill_redis(s.redis, "w4", plan.redis_consume_entries)
    sec = plan.seconds
    e = "entries/s"

    def consumer_cell(key: str, label: str, server: Server, kind: str) -> Cell:
        def run(r: int) -> Sample:
            group = f"{kind}-{r}"
            if kind == "redis":
                harness.redis_cli(server, "XGROUP", "CREATE", "w4", group, "0")
            else:
                _post(server, ["XGROUP", "CREATE", "w4", group, "0"])
            got, cores, srv = harness.client(
                server,
                ["consume", "--port", str(server.port), "--kind", kind, "--stream", "w4",
                 "--group", group, "--consumers", str(CONSUMERS), "--seconds", str(sec)],
                timeout=sec + 120,
            )  # fmt: skip
            return Sample(got["rate"], None, None, cores, srv)

        return Cell(key, label, e, run)

    small = harness.wrk_script(s.scripts, "ack", "POST", orjson.dumps(["XACK", "w4", "g", "1-1"]))
    cells = [
        _wrk_cell("bare_consume", "bare POST, 10 connections (x50 entries)", e, s.bare, "/",
                  small, CONSUMERS, sec, BATCH // 2),
        consumer_cell("xs_consume_cmd", "xstreams XREADGROUP+XACK (command)", s.xs_off, "cmd"),
        consumer_cell("xs_consume_rest", "xstreams reads+acks (REST)", s.xs_off, "rest"),
        consumer_cell("redis_consume", "redis XREADGROUP+XACK", s.redis, "redis"),
    ]  # fmt: skip
    rows = [
        Row("4. consume+ack COUNT 100, 10 consumers, command", e, "xs_consume_cmd",
            "redis_consume", "bare_consume", {"kind": "min", "value": 150_000}),
        Row("4. consume+ack COUNT 100, 10 consumers, REST", e, "xs_consume_rest",
            "redis_consume", "bare_consume", {"kind": "min", "value": 120_000}),  # issue 29
    ]  # fmt: skip
    return cells, rows


def memory(fleet: Fleet, plan: Plan, log: Callable[[str], None]) -> tuple[list[Cell], list[Row]]:
    """5) Resident bytes per entry: a fresh xstreams's VmRSS delta beside a fresh
    redis-server's used_memory delta, for the same entries (3 small fields each)."""
    n = plan.memory_entries
    xs = fleet.xstreams("xstreams-memory", "off")
    redis = fleet.redis("redis-memory")
    _post(xs, ["XADD", "warm", "*", *FIELDS])  # import and allocate the per-process basics
    time.sleep(1)
    rss0 = harness.proc_rss_bytes(xs.pid)
    t0 = time.perf_counter()
    _fill_xstreams(xs, "mem", n)
    log(f"  xstreams: {n:,} entries appended in {time.perf_counter() - t0:.1f} s")
    time.sleep(2)  # let the journal writer drain its queue before reading RSS
    length = _post(xs, ["XLEN", "mem"])
    rss1 = harness.proc_rss_bytes(xs.pid)
    used0 = harness.redis_info(redis, "used_memory")
    _fill_redis(redis, "mem", n)
    used1 = harness.redis_info(redis, "used_memory")
    rlen = int(harness.redis_cli(redis, "XLEN", "mem"))
    if length != n or rlen != n:
        raise RuntimeError(f"memory fill: xstreams has {length}, redis {rlen}, wanted {n}")
    xs_bpe = (rss1 - rss0) / n
    redis_bpe = (used1 - used0) / n
    unit = "bytes/entry"
    cells = [
        Cell("xs_memory", f"xstreams RSS delta / entry ({n:,} entries)", unit,
             lambda _r: Sample(xs_bpe, None, None, 0.0, None)),
        Cell("redis_memory", f"redis used_memory delta / entry ({n:,} entries)", unit,
             lambda _r: Sample(redis_bpe, None, None, 0.0, None)),
    ]  # fmt: skip
    for cell in cells:
        cell.samples.append(cell.run(0))
    xs.stop()
    redis.stop()
    log(f"  xstreams {xs_bpe:.0f} B/entry, redis {redis_bpe:.0f} B/entry")
    row = Row(f"5. memory, {n:,} entries of 3 small fields", unit, "xs_memory", "redis_memory",
              None, {"kind": "max", "value": 64})  # fmt: skip
    return cells, [row]


def log_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
