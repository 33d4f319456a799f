"""The two clients of the fairness scenario (bench/fairness.py), each a process of its own so
the flood's client work never delays the victim's clock; each prints one JSON line.

    python -m bench.fair_client flood --port P --token K --connections 64 --batch 100
        --seconds 3
    python -m bench.fair_client victim --port P --token K --rate 50 --seconds 3

``flood``: every connection sends /pipeline requests of ``--batch`` XADDs back to back.
``victim``: one XADD on the command endpoint every 1/``--rate`` s (open loop: a slow reply
does not delay the next send, which takes another connection), and the latency of each.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import orjson

from bench.client import FIELDS, Http


async def flood(port: int, token: str, connections: int, batch: int, seconds: float) -> Any:
    body = orjson.dumps([["XADD", "flood", "*", *FIELDS]] * batch)
    deadline = time.perf_counter() + seconds
    sent = 0

    async def worker() -> None:
        nonlocal sent
        http = await Http.open(port, token)
        while time.perf_counter() < deadline:
            await http.post("/pipeline", body)
            sent += 1
        http.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(connections)))
    elapsed = time.perf_counter() - t0
    return {"requests": sent, "entries": sent * batch, "rate": sent * batch / elapsed}


async def victim(port: int, token: str, rate: float, seconds: float) -> Any:
    body = orjson.dumps(["XADD", "victim", "*", *FIELDS])
    idle: list[Http] = [await Http.open(port, token) for _ in range(4)]
    took: list[float] = []

    async def one() -> None:
        http = idle.pop() if idle else await Http.open(port, token)
        t0 = time.perf_counter()
        await http.post("/", body)
        took.append((time.perf_counter() - t0) * 1000)
        idle.append(http)

    tasks = []
    start = time.perf_counter()
    n = int(rate * seconds)
    for i in range(n):
        await asyncio.sleep(max(0.0, start + i / rate - time.perf_counter()))
        tasks.append(asyncio.create_task(one()))
    await asyncio.gather(*tasks)
    for http in idle:
        http.close()
    cuts = statistics.quantiles(took, n=100, method="inclusive")
    return {"requests": len(took), "p50_ms": statistics.median(took), "p99_ms": cuts[98]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    f = sub.add_parser("flood")
    v = sub.add_parser("victim")
    for p in (f, v):
        p.add_argument("--port", type=int, required=True)
        p.add_argument("--token", required=True)
        p.add_argument("--seconds", type=float, default=3.0)
    f.add_argument("--connections", type=int, default=64)
    f.add_argument("--batch", type=int, default=100)
    v.add_argument("--rate", type=float, default=50.0)
    args = parser.parse_args()
    if args.mode == "flood":
        got = asyncio.run(flood(args.port, args.token, args.connections, args.batch, args.seconds))
    else:
        got = asyncio.run(victim(args.port, args.token, args.rate, args.seconds))
    print(orjson.dumps(got).decode())


if __name__ == "__main__":
    main()
