"""Workload 9: what an Idempotency-Key costs, in throughput and in memory.

Throughput: single XADDs (command endpoint and REST) and 100-entry batches (/pipeline and
the REST batch) on the embedded engine, each measured with no key and with a unique key per
request (wrk's script counts them), in the same interleaved rounds, so the ratio is not
drift. The target (the issue's): the keyed rate within 10% of the same row without it.

Memory: two fresh servers get the same single XADDs, one with a unique key per request and
one without; the difference of their RSS growth, per request, is what a kept response costs
the process. Printed beside the ``xstreams_idempotency_bytes`` gauge (what the engine
accounts per kept response) of the keyed server.
"""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import Callable

import orjson

from bench import harness
from bench.client import FIELDS
from bench.harness import Fleet, Sample, Server
from bench.workloads import BATCH, CLIENTS, Cell, Plan, Row, Servers, _RedisCounts, _wrk_cell

WITHIN = {"kind": "baseline_ratio", "value": 0.90}
SHAPES = [
    ("xadd_cmd", "XADD (command)"),
    ("xadd_rest", "XADD (REST)"),
    ("pipe", "batch 100, /pipeline"),
    ("batch_rest", "batch 100, REST"),
]


def throughput(s: Servers, plan: Plan, counts: _RedisCounts) -> tuple[list[Cell], list[Row]]:
    """9) The four write shapes with and without a unique key, fsync off (the key's CPU
    cost, not the disk's)."""
    sec = plan.seconds
    pairs = dict(zip(FIELDS[::2], FIELDS[1::2], strict=True))
    shapes = [
        ("xadd_cmd", "XADD (command)", "req/s", "/", orjson.dumps(["XADD", "w9", "*", *FIELDS]), 1),
        ("xadd_rest", "XADD (REST)", "req/s", "/v1/streams/w9r/entries",
         orjson.dumps({"fields": pairs}), 1),
        ("pipe", "batch 100, /pipeline", "entries/s", "/pipeline",
         orjson.dumps([["XADD", "w9p", "*", *FIELDS]] * BATCH), BATCH),
        ("batch_rest", "batch 100, REST", "entries/s", "/v1/streams/w9b/entries",
         orjson.dumps({"entries": [{"fields": pairs}] * BATCH}), BATCH),
    ]  # fmt: skip
    single = harness.wrk_script(s.scripts, "idem-bare", "POST", shapes[0][4])
    batch = harness.wrk_script(s.scripts, "idem-bare-batch", "POST", shapes[2][4])
    cells = [
        _wrk_cell("bare_post_idem", "bare POST", "req/s", s.bare, "/", single, CLIENTS, sec),
        _wrk_cell("bare_batch_idem", "bare POST (100-entry body)", "entries/s", s.bare, "/",
                  batch, CLIENTS, sec, BATCH),
        counts.cell("redis_xadd_idem", "redis XADD", "req/s", s.redis,
                    ["XADD", "w9", "*", *FIELDS], CLIENTS, 80_000),
        counts.cell("redis_pipe_idem", "redis XADD pipelined 100", "entries/s", s.redis,
                    ["XADD", "w9p", "*", *FIELDS], CLIENTS, 500_000, BATCH),
    ]  # fmt: skip
    rows = []
    for key, label, unit, path, body, per in shapes:
        plain = harness.wrk_script(s.scripts, f"idem-{key}-plain", "POST", body)
        keyed = harness.wrk_script(s.scripts, f"idem-{key}-keyed", "POST", body, keyed=True)
        cells += [
            _wrk_cell(f"xs_{key}_plain", f"xstreams {label}, no key", unit, s.xs_off, path,
                      plain, CLIENTS, sec, per),
            _wrk_cell(f"xs_{key}_keyed", f"xstreams {label}, Idempotency-Key", unit, s.xs_off,
                      path, keyed, CLIENTS, sec, per),
        ]  # fmt: skip
        redis, bare = (
            ("redis_xadd_idem", "bare_post_idem") if per == 1
            else ("redis_pipe_idem", "bare_batch_idem")
        )  # fmt: skip
        rows += [
            Row(f"9. {label}, fsync off, no key", unit, f"xs_{key}_plain", redis, bare),
            Row(f"9. {label}, fsync off, unique Idempotency-Key", unit, f"xs_{key}_keyed",
                redis, bare, {**WITHIN, "baseline": f"xs_{key}_plain"}),
        ]  # fmt: skip
    return cells, rows


def key_notes(cells: list[Cell]) -> list[str]:
    """The keyed rate beside the plain one, per shape (workload 9)."""
    found = {c.key: c.summary()["median"] for c in cells if c.samples}
    notes = []
    for key, label in SHAPES:
        plain, keyed = found.get(f"xs_{key}_plain"), found.get(f"xs_{key}_keyed")
        if plain and keyed:
            notes.append(
                f"Idempotency-Key, {label}: {keyed / plain:.2f}x the rate without it "
                f"({keyed:,.0f} against {plain:,.0f})."
            )
    return notes


def _metric(server: Server, name: str) -> float:
    """One unlabelled (or first) sample of /metrics."""
    url = f"http://{harness.LOOPBACK}:{server.port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as reply:
        text = reply.read().decode()
    found = re.search(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)$", text, re.M)
    if found is None:
        raise RuntimeError(f"/metrics has no {name}")
    return float(found.group(1))


def replayed(server: Server) -> float:
    """Requests answered from a kept response: 0 when every key was unique, as meant."""
    url = f"http://{harness.LOOPBACK}:{server.port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as reply:
        text = reply.read().decode()
    found = re.search(r'^xstreams_idempotent_requests_total\{outcome="replayed"\} (\S+)$', text,
                      re.M)  # fmt: skip
    return float(found.group(1)) if found else 0.0


def memory(fleet: Fleet, plan: Plan, log: Callable[[str], None]) -> tuple[list[Cell], list[Row]]:
    """9m) Bytes per kept response: RSS growth with keys minus without, per request."""
    n = 20_000 if plan.quick else 50_000
    growth: dict[bool, int] = {}
    gauge = 0.0
    for keyed in (False, True):
        xs = fleet.xstreams(f"xstreams-idem-memory-{int(keyed)}", "off")
        flag = ["--keyed"] if keyed else []
        args = ["singles", "--port", str(xs.port), "--stream"]
        harness.client(xs, [*args, "warm", "--requests", "2000", *flag], 120)
        time.sleep(1)
        rss0 = harness.proc_rss_bytes(xs.pid)
        harness.client(xs, [*args, "m", "--requests", str(n), *flag], 600)
        time.sleep(2)  # let the journal writer drain its queue before reading RSS
        growth[keyed] = harness.proc_rss_bytes(xs.pid) - rss0
        if keyed:
            kept = _metric(xs, "xstreams_idempotency_keys")
            if kept != n + 2000:
                raise RuntimeError(f"idempotency memory: {kept:.0f} kept, wanted {n + 2000}")
            gauge = _metric(xs, "xstreams_idempotency_bytes") / kept
        xs.stop()
    per_rss = (growth[True] - growth[False]) / n
    log(f"  kept response: {per_rss:.0f} B of RSS each, {gauge:.0f} B by the gauge ({n:,})")
    unit = "bytes/kept response"
    cells = [
        Cell("xs_idem_rss", f"xstreams RSS with keys minus without, / request ({n:,})", unit,
             lambda _r: Sample(per_rss, None, None, 0.0, None)),
        Cell("xs_idem_gauge", f"xstreams_idempotency_bytes / kept responses ({n:,})", unit,
             lambda _r: Sample(gauge, None, None, 0.0, None)),
    ]  # fmt: skip
    for cell in cells:
        cell.samples.append(cell.run(0))
    rows = [
        Row(f"9. memory per kept XADD response, RSS ({n:,} requests)", unit, "xs_idem_rss",
            None, None),
        Row(f"9. memory per kept XADD response, engine's gauge ({n:,})", unit, "xs_idem_gauge",
            None, None),
    ]  # fmt: skip
    return cells, rows
