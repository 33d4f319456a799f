"""The benchmark's data: the streams' names, the entries' explicit IDs and fields, and loading
the same entries into xstreams and redis-server; also the progress log every part writes."""

from __future__ import annotations

import sys
import time
from typing import Any

from app.pipeline.client import Client

BASE_MS = 1_767_225_600_000  # 2026-01-01 00:00 UTC: the entries' IDs start here
SPAN_DAYS = 4  # IDs spread over this many UTC days, so the archive has several date folders
KINDS = ("view", "click", "cart", "buy", "refund")
STREAM = "bench-pipeline"
TRIM_STREAM = "bench-pipeline-trim"
REDIS_DB = 11  # the benchmark's own database on the shared redis-server; only it is flushed


def log_stderr(message: str) -> None:
    """Progress goes to stderr so stdout holds only the table."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def step_ms(n: int) -> int:
    """Milliseconds between consecutive entries: N entries cover ``SPAN_DAYS`` days."""
    return max(1, SPAN_DAYS * 86_400_000 // max(1, n))


def entry_id(i: int, n: int) -> str:
    """Explicit, increasing IDs, so xstreams and redis-server hold byte-identical streams and
    the cutoff above the last entry is known without asking either."""
    return f"{BASE_MS + i * step_ms(n)}-0"


def entry_fields(i: int) -> list[str]:
    return ["user", f"u{i % 9973}", "kind", KINDS[i % len(KINDS)], "n", str(i)]


def cutoff_above(n: int) -> str:
    """An ``--before`` that archives every entry (the millisecond after the last one)."""
    return str(BASE_MS + (n - 1) * step_ms(n) + 1)


def load_xstreams(url: str, stream: str, n: int, batch: int = 1000) -> dict[str, float]:
    """XADD the N entries through ``POST /pipeline``, ``batch`` commands per request.

    One sequential loader: explicit IDs must arrive in increasing order within one stream, so
    concurrent loaders would only race each other into ID errors.
    """
    t0 = time.monotonic()
    with Client(url, timeout_s=300) as client:
        for lo in range(0, n, batch):
            hi = min(n, lo + batch)
            client.pipeline(
                [["XADD", stream, entry_id(i, n), *entry_fields(i)] for i in range(lo, hi)]
            )
    seconds = time.monotonic() - t0
    return {"entries": n, "seconds": round(seconds, 3), "rate": round(n / seconds, 1)}


def load_redis(r: Any, stream: str, n: int, batch: int = 1000) -> dict[str, float]:
    """The same entries into redis-server through redis-py pipelines of ``batch`` XADDs."""
    t0 = time.monotonic()
    for lo in range(0, n, batch):
        pipe = r.pipeline(transaction=False)
        for i in range(lo, min(n, lo + batch)):
            pipe.execute_command("XADD", stream, entry_id(i, n), *entry_fields(i))
        pipe.execute()
    seconds = time.monotonic() - t0
    return {"entries": n, "seconds": round(seconds, 3), "rate": round(n / seconds, 1)}
