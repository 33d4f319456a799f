"""``python -m bench.redis_calls [--url URL] [--tasks N] [--ops N] [--rounds N]``: the Redis
backend's CPU per single-entry append, in process, by path (issue 38).

N tasks each append one entry at a time through ``RedisBackend.append`` (what REST XADD
calls), for ``--ops`` appends in all; the figure is this process's CPU time per append
(``time.process_time``: redis-server's own CPU is not counted, and load on the machine does
not inflate it much). Paths, interleaved round by round:

- ``redis-py``: redis-py's ``execute_command`` (pool, retry wrapper, one write and read each);
- ``one-conn``: a lighter redis-py path, measured only here: one redis-py ``Connection``
  held by the router, each command sent and its reply read under a lock (no pool, no retry
  wrapper, no hooks; still a write and a read per command);
- ``mux``: app/backends/redis/mux.py, the commands of one loop turn in one write.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from app.backends.redis import RedisBackend
from app.backends.redis.parse import Arg, Raw, redis_error
from app.engine.commands.streams import XAddArgs

PATHS = ("redis-py", "one-conn", "mux")


async def one_round(url: str, path: str, tasks: int, ops: int) -> tuple[float, float]:
    """CPU µs and wall µs per append on ``path``."""
    backend = RedisBackend.from_url(url)
    backend.router.multiplex = path == "mux"
    await backend.start()
    if path == "one-conn":
        light(backend)
    await backend.command(["DEL", "bench-calls"])
    per_task = ops // tasks

    batch = [XAddArgs("bench-calls", ("f", "v"))]

    async def worker() -> None:
        for _ in range(per_task):
            await backend.append(batch)

    await asyncio.gather(*(worker() for _ in range(tasks)))  # warm: connections made
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(tasks)))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    await backend.command(["DEL", "bench-calls"])
    await backend.close()
    done = per_task * tasks
    return cpu / done * 1e6, wall / done * 1e6


def light(backend: RedisBackend) -> None:
    """``one-conn``: the router's single commands on one redis-py connection, one at a time."""
    router = backend.router
    client = router.client
    assert isinstance(client, Redis)
    conn = client.connection_pool.make_connection()
    lock = asyncio.Lock()

    async def call_plain(key: str | None, *args: Arg, node: object = None) -> Raw:
        async with lock:
            await conn.send_packed_command(conn.pack_command(*args), check_health=False)
            try:
                return await conn.read_response()
            except ResponseError as e:
                raise redis_error(e, args) from None

    router.call_plain = call_plain  # type: ignore[method-assign,assignment]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="redis://127.0.0.1:6379/3")
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--ops", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--paths", default=",".join(PATHS))
    opts = parser.parse_args()
    paths = opts.paths.split(",")
    got: dict[str, list[tuple[float, float]]] = {p: [] for p in paths}
    for _ in range(opts.rounds):
        for path in paths:
            got[path].append(asyncio.run(one_round(opts.url, path, opts.tasks, opts.ops)))
    print(f"load average {os.getloadavg()[0]:.2f}; {opts.tasks} tasks, {opts.ops} appends a round")
    for path, rows in got.items():
        cpus = ", ".join(f"{c:.1f}" for c, _ in rows)
        walls = ", ".join(f"{w:.1f}" for _, w in rows)
        print(f"{path:10} CPU µs/append: {cpus}   wall µs/append: {walls}")


if __name__ == "__main__":
    main()
