"""The bare HTTP ceiling: one trivial FastAPI JSON endpoint served the way xstreams is served.

Same ``Server`` subclass, the same ``uvicorn.Config`` arguments and the same HTTP protocol
as ``xstreams serve`` (app/cli/__init__.py, app/server/connections.py: its read deadlines and
its one write per response), so uvicorn picks the same loop and HTTP parser; whatever
xstreams measures below this app's rate is the cost of xstreams itself, not of Python HTTP. The POST
route reads the body (as the command endpoint must) and answers a fixed small reply.

    .venv/bin/python -m bench.bare_app --port 8001
"""

from __future__ import annotations

import argparse

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import Response

from app.server.connections import Limits, protocol_class
from app.server.server import Server
from app.settings import Settings

REPLY = b'{"result":"OK"}'

app = FastAPI()


@app.get("/")
async def get_root() -> Response:
    return Response(REPLY, media_type="application/json")


@app.post("/")
async def post_root(request: Request) -> Response:
    await request.body()
    return Response(REPLY, media_type="application/json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    settings = Settings()  # the defaults xstreams serve runs with
    limits = Limits(
        header_timeout_ms=settings.header_timeout_ms,
        body_timeout_ms=settings.body_timeout_ms,
        keepalive_timeout_ms=settings.keepalive_timeout_ms,
        max_connections=settings.max_connections,
    )
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level="warning",
        timeout_graceful_shutdown=5,
        http=protocol_class(limits),
    )
    Server(config, on_shutdown=lambda: None).run()


if __name__ == "__main__":
    main()
