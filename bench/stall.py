"""How long one heavy request holds the event loop: the worst latency of a tiny concurrent
request (PING) while it runs, on a real ``xstreams serve`` (``--fsync off``).

    python -m bench.stall [--url http://127.0.0.1:8000]   # against a running service
    python -m bench.stall                                  # starts one of its own

Each case prints the heavy request's status and time and the concurrent PINGs' worst latency
(the loop stall). Figures for issue 11 (limits) are in bench/STALL.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

Heavy = Callable[[httpx.AsyncClient], Awaitable[httpx.Response]]


async def _probe(client: httpx.AsyncClient, stop: asyncio.Event) -> float:
    worst = 0.0
    while not stop.is_set():
        t = time.perf_counter()
        await client.post("/", json=["PING"])
        worst = max(worst, time.perf_counter() - t)
        await asyncio.sleep(0.005)
    return worst


async def measure(url: str, name: str, heavy: Heavy) -> None:
    limits = httpx.Limits(max_connections=200)
    async with (
        httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as hc,
        httpx.AsyncClient(base_url=url, timeout=120) as pc,
    ):
        stop = asyncio.Event()
        probe = asyncio.create_task(_probe(pc, stop))
        await asyncio.sleep(0.1)
        t = time.perf_counter()
        r = await heavy(hc)
        took = time.perf_counter() - t
        stop.set()
        worst = await probe
        detail = r.text[:90] if r.status_code >= 400 else ""
        ms, stall = took * 1000, worst * 1000
        print(f"{name:<40} {r.status_code} {ms:7.0f} ms  stall {stall:6.0f} ms  {detail}")


async def _pipeline(hc: httpx.AsyncClient, commands: list[list[str]]) -> httpx.Response:
    return await hc.post("/pipeline", json=commands)


async def _fill(url: str, key: str, n: int) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=120) as c:
        for start in range(0, n, 5000):
            batch = [["XADD", key, "*", "f", "v"] for _ in range(min(5000, n - start))]
            await c.post("/pipeline", json=batch)


async def _blocked_readers(hc: httpx.AsyncClient, readers: int, keys: int) -> httpx.Response:
    names = [f"k{i}" for i in range(keys)]
    argv = ["XREAD", "BLOCK", "20000", "STREAMS", *names, *["$"] * keys]
    body = json.dumps(argv, separators=(",", ":")).encode()
    tasks = [asyncio.create_task(hc.post("/", content=body)) for _ in range(readers)]
    await asyncio.sleep(3)  # parked (or refused)
    t = time.perf_counter()
    r = await hc.post("/", json=["XADD", "k0", "*", "f", "v"])
    ms = (time.perf_counter() - t) * 1000
    print(f"  one XADD with {readers} readers x {keys} keys: {ms:.0f} ms")
    for task in tasks:
        await task
    return r


def _get(path: str) -> Heavy:
    return lambda hc: hc.get(path)


def _post(path: str, body: object) -> Heavy:
    # Encoded once, before the clock starts: the client's own encoding of a 16 MB body
    # would otherwise hold this process's loop and show up as the server's stall.
    content = json.dumps(body, separators=(",", ":")).encode()
    headers = {"content-type": "application/json"}
    return lambda hc: hc.post(path, content=content, headers=headers)


async def run(url: str) -> None:
    pings = [["PING"]] * 1_800_000  # ~16 MB of JSON
    xadd = ["XADD", "p", "*", "f", "v"]
    for name, heavy in (
        ("pipeline: 1.8M PINGs (16 MB)", _post("/pipeline", pings)),
        ("pipeline: 100k XADD", _post("/pipeline", [xadd] * 100_000)),
        ("pipeline: 10k XADD", _post("/pipeline", [xadd] * 10_000)),
    ):
        await measure(url, name, heavy)
    await _fill(url, "big", 200_000)
    for name, heavy in (
        ("REST range, 200k entries, no count", _get("/v1/streams/big/entries")),
        ("REST range, count=1000", _get("/v1/streams/big/entries?count=1000")),
        ("REST full=true&count=0", _get("/v1/streams/big?full=true&count=0")),
        ("XRANGE big - + (command endpoint)", _post("/", ["XRANGE", "big", "-", "+"])),
    ):
        await measure(url, name, heavy)
    for keys in (100_000, 1_000):
        name = f"20 XREAD BLOCK x {keys} keys, then XADD"
        await measure(url, name, lambda hc, k=keys: _blocked_readers(hc, 20, k))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url")
    parser.add_argument("--port", type=int, default=8931)
    args = parser.parse_args()
    if args.url:
        asyncio.run(run(args.url))
        return
    with tempfile.TemporaryDirectory() as data:
        cmd = [sys.executable, "-m", "app.cli", "serve", "--port", str(args.port),
               "--data-dir", data, "--fsync", "off", "--log-level", "warning"]  # fmt: skip
        server: subprocess.Popen[Any] = subprocess.Popen(cmd, env=os.environ.copy())
        url = f"http://127.0.0.1:{args.port}"
        try:
            for _ in range(200):
                try:
                    if httpx.get(url + "/readyz").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)
            asyncio.run(run(url))
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
