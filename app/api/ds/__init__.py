"""The Durable Streams surface (ElectricSQL's protocol, PROTOCOL.md v1.0) under ``/ds``: one
Durable Stream is one stream, one message one entry, offsets are entry IDs written to sort as
text (docs/durable-streams.md). Handlers call the Backend's typed operations only."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.routing import Route

from .routes import Surface

__all__ = ["REQUEST_HEADERS", "RESPONSE_HEADERS", "install"]

METHODS = ["GET", "HEAD", "PUT", "POST", "DELETE"]
# What a browser page may send and read across origins, when CORS is configured (app/main.py).
REQUEST_HEADERS = [
    "If-None-Match",
    "Stream-Seq",
    "Stream-TTL",
    "Stream-Expires-At",
    "Stream-Closed",
    "Producer-Id",
    "Producer-Epoch",
    "Producer-Seq",
]
RESPONSE_HEADERS = [
    "ETag",
    "Stream-Next-Offset",
    "Stream-Up-To-Date",
    "Stream-Closed",
    "Stream-Cursor",
    "Stream-TTL",
    "Stream-Expires-At",
    "Stream-SSE-Data-Encoding",
    "Producer-Epoch",
    "Producer-Seq",
    "Producer-Expected-Seq",
    "Producer-Received-Seq",
]


def install(app: FastAPI) -> None:
    """``/ds/{path}``, ahead of the command endpoint's path-style catch-all."""
    surface = Surface()
    route = Route("/ds/{path:path}", surface.endpoint, methods=METHODS)
    app.router.routes.insert(0, route)
