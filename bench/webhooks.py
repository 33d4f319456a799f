"""Webhook delivery (issue 28): ``python -m bench.webhooks [--quick] [--backend URL]``.

The runner (app/delivery) delivers a stream's entries to a bare local receiver
(bench/webhook_receiver.py, a separate process), one entry a request, signed. It prints:

- the receiver's own ceiling: wrk POSTing a delivery-sized body to it with 1, 8 and 64
  connections (what no sender can exceed on this machine);
- deliveries per second at webhook ``concurrency`` 1, 8 and 64: ``N`` entries appended
  first, then the time until the receiver has seen each (each request signed, then XACK);
- the append-to-delivery latency (p50 / p99, from the entry's ID time to its arrival) at
  each concurrency, with entries appended one at a time at a steady rate well below that
  concurrency's throughput (half of it, at most 500/s), so the figure is the pipeline's
  latency, not a queue's.

The runner drives the ``Backend`` in this process (the embedded engine by default, or Redis
by URL), as the service's background task does; the receiver and wrk run in their own
processes. On a 2-core machine the runner, the receiver and wrk share the cores: compare
the figures of one run with each other, not across machines.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
import time
import urllib.request
from typing import Any

from app.backends import Backend, open_backend
from app.delivery import WebhookRunner
from app.engine.commands.streams import XAddArgs
from app.engine.delivery import Webhook
from app.settings import Settings
from bench import harness

STREAM, GROUP = "{hooks}", "g"
SECRET = "whsec_" + base64.b64encode(b"bench-secret-0123456789").decode()
CONCURRENCY = (1, 8, 64)
FIELDS = ("order", "12345", "payload", "x" * 64)


def _get(port: int, path: str, method: str = "GET") -> dict[str, Any]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method, data=b"")
    with urllib.request.urlopen(request, timeout=10) as r:
        body = r.read()
    return json.loads(body) if body else {}


async def _stats(port: int) -> dict[str, Any]:
    return await asyncio.to_thread(_get, port, "/stats")


async def _until_received(port: int, n: int, timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        stats = await _stats(port)
        if stats["unique"] >= n:
            return stats
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {stats['unique']} of {n} delivered in {timeout_s} s")
        await asyncio.sleep(0.02)


async def _fresh(backend: Backend) -> None:
    await backend.command(["FLUSHALL"])
    await backend.create_group(STREAM, GROUP, "$", True, None)


async def _with_runner(backend: Backend, port: int, concurrency: int) -> WebhookRunner:
    settings = Settings(
        webhook_allow_hosts=["127.0.0.1"],
        webhook_allow_http=True,
        webhook_allow_private=True,
        webhook_block_ms=100,
    )
    hook = Webhook(
        STREAM, GROUP, "bench", f"http://127.0.0.1:{port}/hook", SECRET, concurrency=concurrency
    )

    async def source() -> list[Webhook]:
        return [hook]

    return WebhookRunner(backend, settings, source)


async def throughput(
    backend: Backend, port: int, concurrency: int, entries: int
) -> tuple[float, float]:
    """Entries delivered (and acknowledged) per second, from a preloaded stream, and the
    CPU this process spent per delivery in µs (the runner and the embedded engine; a figure
    that contention on a shared machine moves less than the rate)."""
    await _fresh(backend)
    await asyncio.to_thread(_get, port, "/reset", "POST")
    for first in range(0, entries, 500):
        n = min(500, entries - first)
        await backend.append([XAddArgs(STREAM, FIELDS)] * n)
    runner = await _with_runner(backend, port, concurrency)
    started, cpu = time.perf_counter(), time.process_time()
    task = asyncio.create_task(runner.run())
    try:
        await _until_received(port, entries, 300)
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return entries / seconds, cpu / entries * 1e6


async def latency(
    backend: Backend, port: int, concurrency: int, rate_per_s: float, seconds: float
) -> tuple[float, float, int]:
    """p50 and p99 ms from append to arrival, entries appended one at a time."""
    await _fresh(backend)
    await asyncio.to_thread(_get, port, "/reset", "POST")
    runner = await _with_runner(backend, port, concurrency)
    task = asyncio.create_task(runner.run())
    entries = max(int(rate_per_s * seconds), 50)
    try:
        await asyncio.sleep(0.3)  # the loop is reading before the first append
        started = time.monotonic()
        for i in range(entries):
            await backend.append([XAddArgs(STREAM, FIELDS)])
            due = started + (i + 1) / rate_per_s
            await asyncio.sleep(max(0.0, due - time.monotonic()))
        stats = await _until_received(port, entries, 120)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return float(stats["p50_ms"]), float(stats["p99_ms"]), entries


def ceiling(fleet: harness.Fleet, receiver: harness.Server, seconds: float) -> dict[int, float]:
    body = json.dumps(
        {
            "stream": "wrk",
            "group": GROUP,
            "id": "1-0",
            "fields": dict([FIELDS[:2], FIELDS[2:]]),
            "delivery": 1,
        }
    ).encode()
    script = harness.wrk_script(fleet.tmpdir("wrk"), "hook", "POST", body)
    return {c: harness.wrk(receiver, "/hook", script, c, seconds, 1).rate for c in CONCURRENCY}


async def main_async(backend_url: str, quick: bool) -> int:
    entries = 2_000 if quick else 10_000
    seconds = 3.0 if quick else 8.0
    with harness.fleet() as fleet:
        receiver = fleet.webhook_receiver()
        bare = ceiling(fleet, receiver, seconds)
        backend = open_backend(Settings(backend=backend_url))
        await backend.start()
        rows = []
        try:
            for c in CONCURRENCY:
                rate, cpu_us = await throughput(backend, receiver.port, c, entries)
                offered = min(rate / 2, 500.0)
                p50, p99, n = await latency(backend, receiver.port, c, offered, seconds)
                rows.append((c, rate, cpu_us, offered, n, p50, p99))
        finally:
            await backend.close()
    print(f"webhook delivery: backend {backend_url}, one entry a request, signed, "
          f"{entries:,} entries per throughput run")  # fmt: skip
    print("| concurrency | receiver ceiling (wrk) req/s | deliveries/s | share of ceiling "
          "| runner CPU µs/delivery | latency run: offered/s (entries) "
          "| append→delivery p50 ms | p99 ms |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for c, rate, cpu_us, offered, n, p50, p99 in rows:
        print(f"| {c} | {bare[c]:,.0f} | {rate:,.0f} | {rate / bare[c]:.0%} | {cpu_us:,.0f} "
              f"| {offered:,.0f} ({n:,}) | {p50:.1f} | {p99:.1f} |")  # fmt: skip
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.webhooks", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="2,000 entries, 3 s runs")
    parser.add_argument("--backend", default="embedded", help="embedded (default) or a Redis URL")
    args = parser.parse_args()
    sys.exit(asyncio.run(main_async(args.backend, args.quick)))


if __name__ == "__main__":
    main()
