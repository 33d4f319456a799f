"""A webhook receiver for ``python -m bench.webhooks``: a bare ASGI endpoint on xstreams's
uvicorn setup that answers 200 to every POST and, for each entry it receives, records the time
from its append (its ID's milliseconds) to its arrival.

    .venv/bin/python -m bench.webhook_receiver --port 8002

``POST /hook`` receives; ``GET /stats`` answers ``{"received", "unique", "p50_ms",
"p99_ms"}``; ``POST /reset`` forgets. Signatures are not checked (the tests check them): the
figure is the runner's rate, not a receiver's verification cost. wrk hits the same ``/hook``
for the receiver's own ceiling.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import orjson
import uvicorn

from app.server.server import Server

latency_ms: list[float] = []
seen: set[str] = set()
received = 0


def _stats() -> bytes:
    q = statistics.quantiles(latency_ms, n=100, method="inclusive") if len(latency_ms) > 1 else []
    return orjson.dumps(
        {
            "received": received,
            "unique": len(seen),
            "p50_ms": q[49] if q else None,
            "p99_ms": q[98] if q else None,
        }
    )


def _record(body: bytes) -> None:
    global received
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return  # wrk's ceiling run sends a fixed body: counted by wrk, not here
    now_ms = time.time() * 1000
    for item in doc if isinstance(doc, list) else [doc]:
        entry_id = item.get("id") if isinstance(item, dict) else None
        if not isinstance(entry_id, str) or item.get("stream") == "wrk":
            continue
        received += 1
        seen.add(entry_id)
        latency_ms.append(now_ms - int(entry_id.split("-", 1)[0]))


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    reply = b""
    if scope["path"] == "/stats":
        reply = _stats()
    elif scope["path"] == "/reset":
        global received
        latency_ms.clear()
        seen.clear()
        received = 0
    else:
        _record(body)
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": reply})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=5,
    )
    Server(config, on_shutdown=lambda: None).run()


if __name__ == "__main__":
    main()
