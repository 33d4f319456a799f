"""Where an open event stream's memory goes: tracemalloc of N live tails, by package.

    python -m bench.sse_memory 2000

Runs ``xstreams serve``'s app, protocol and server in this process (uvloop), opens N live
tails of one stream from a client process of raw sockets, and compares tracemalloc snapshots
taken before they connected and once they are all live: the Python heap each subscriber
holds, by the package that allocated it (the kernel's socket buffers are not in it).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import multiprocessing as mp
import socket
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import uvicorn
import uvloop

from app.api.services import app_services
from app.main import create_app
from app.server.connections import Limits, protocol_class
from app.server.server import Server
from app.settings import Settings
from bench import sse_clients as clients


def _package(filename: str) -> str:
    parts = Path(filename).parts
    if "site-packages" in parts:
        return parts[parts.index("site-packages") + 1].removesuffix(".py")
    if "app" in parts:
        i = len(parts) - 1 - parts[::-1].index("app")
        return "/".join(parts[i : min(i + 3, len(parts) - 1)])
    return Path(filename).name if "python3" in filename else filename


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("subscribers", type=int)
    n = parser.parse_args().subscribers
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = tempfile.TemporaryDirectory(prefix="xstreams-mem-")
    tracemalloc.start()
    settings = Settings(
        data_dir=Path(data.name), sse_max_connections=n + 100, max_connections=n + 200
    )
    app = create_app(settings)
    limits = Limits(
        header_timeout_ms=settings.header_timeout_ms,
        body_timeout_ms=settings.body_timeout_ms,
        keepalive_timeout_ms=settings.keepalive_timeout_ms,
        max_connections=n + 200,
    )
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", loop="uvloop",
        http=protocol_class(limits), access_log=False,
    )  # fmt: skip
    server = Server(config, on_shutdown=app_services(app).sse.close_all)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port}"
    httpx.post(url + "/", json=["XADD", "s", "*", "n", "0"])
    ctx = mp.get_context("spawn")
    ready, out, finish = ctx.Queue(), ctx.Queue(), ctx.Event()
    time.sleep(1)
    gc.collect()
    before = tracemalloc.take_snapshot()
    paths = ["/v1/streams/s/events"] * n
    args: tuple[Any, ...] = ("127.0.0.1", port, paths, 0, ready, finish, out)
    proc = ctx.Process(target=clients.subscribe, args=args, daemon=True)
    proc.start()
    opened = ready.get(timeout=120)
    assert opened == n, opened
    time.sleep(2)
    gc.collect()  # what the requests left in reference cycles is not held
    after = tracemalloc.take_snapshot()
    by: Counter[str] = Counter()
    for stat in after.compare_to(before, "filename"):
        by[_package(stat.traceback[0].filename)] += stat.size_diff
    total = sum(by.values())
    print(f"{n} subscribers: {total / n / 1024:.2f} KB each (tracemalloc), by package:")
    for name, size in by.most_common(15):
        print(f"  {size / n:>8.0f} B  {name}")
    alive = Counter(type(o).__name__ for o in gc.get_objects())
    for name in ("Bound", "RequestResponseCycle", "Request", "EventStream", "DetachedStream",
                 "Task", "Subscriber", "Outbox", "AsyncExitStack", "Future"):  # fmt: skip
        print(f"  alive: {alive[name]:>6} {name}")
    print("top lines:")
    for stat in after.compare_to(before, "lineno")[:30]:
        frame = stat.traceback[0]
        print(f"  {stat.size_diff / n:>8.0f} B  {frame.filename}:{frame.lineno}")
    finish.set()
    out.get(timeout=60)
    proc.join(30)
    server.should_exit = True
    thread.join(30)
    data.cleanup()


if __name__ == "__main__":
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    main()
