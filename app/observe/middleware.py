"""Every request, observed once: its ID, its latency and status for ``/metrics``, its log line.

The outermost layer of the app (a pure ASGI middleware), so what it measures includes every
other layer, a 401 from the access gate or a 503 while loading as well as the handler:

- the request ID: the client's ``X-Request-ID`` when it is sane (1 to 128 characters of
  letters, digits and ``._:@+=/-``: it goes into log lines, so no spaces, quotes or control
  characters), else a new one, unique: a random prefix drawn at start and a counter (a random
  ID per request cost a system call each); echoed in the response's ``X-Request-ID`` and set in
  ``logs.REQUEST_ID`` while the request is served;
- one count and one latency observation per request, by method and route (the matched path
  template, so the label set stays bounded whatever paths clients send; FastAPI's router
  leaves ``scope["route"]`` for its own routes only, so a plain Starlette route, such as the
  command endpoint's, is found by its ``endpoint``; a request answered before routing, a
  401 from the access gate or a 503 while loading, is ``unrouted``);
- one log line at info on ``xstreams.access`` when the response has ended: client, method,
  path with its query (secrets masked by ``redact``), status, route, duration, request ID.
  It replaces uvicorn's access log, which knows neither the route nor the ID.
"""

from __future__ import annotations

import itertools
import logging
import re
import secrets
import time
from typing import Any

from starlette.convertors import StringConvertor
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.observe.logs import REQUEST_ID
from app.observe.metrics import Metrics
from app.redaction import redact

__all__ = ["REQUEST_ID_HEADER", "Observe", "request_id_of"]

log = logging.getLogger("xstreams.access")

REQUEST_ID_HEADER = b"x-request-id"
_SANE_ID = re.compile(rb"[A-Za-z0-9._:@+=/-]{1,128}")
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


_PREFIX = secrets.token_hex(8)  # this process's; the counter follows it
_COUNTER = itertools.count(1)


def request_id_of(headers: list[tuple[bytes, bytes]]) -> str:
    """The client's request ID if it is sane, else a new one: this process's 16 random hex
    digits and a counter, 32 hex digits in all."""
    for name, value in headers:
        if name == REQUEST_ID_HEADER:
            if _SANE_ID.fullmatch(value):
                return value.decode("ascii")
            break
    return f"{_PREFIX}{next(_COUNTER):016x}"


class Observe:
    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics
        self._paths: dict[Any, str] | None = None  # plain routes' endpoints to their paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request_id = request_id_of(scope["headers"])
        echoed = (REQUEST_ID_HEADER, request_id.encode("ascii"))
        token = REQUEST_ID.set(request_id)
        status = 500  # what the server answers if the app fails before it starts a response

        async def observed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), echoed]
            await send(message)

        try:
            await self.app(scope, receive, observed)
        finally:
            seconds = time.perf_counter() - started
            method = scope["method"] if scope["method"] in _METHODS else "OTHER"
            route = self._route(scope)
            self.metrics.http.observe((method, route, str(status)), seconds)
            try:
                if log.isEnabledFor(logging.INFO):
                    _access_line(scope, method, route, status, seconds, request_id)
            finally:
                REQUEST_ID.reset(token)

    def _route(self, scope: Scope) -> str:
        route = scope.get("route")
        if route is not None:
            return template(route)
        endpoint = scope.get("endpoint")
        if endpoint is None:
            return "unrouted"
        if self._paths is None:
            self._paths = {
                r.endpoint: template(r) for r in scope["app"].router.routes if isinstance(r, Route)
            }
        return self._paths.get(endpoint, "unrouted")


def template(route: Any) -> str:
    """A route's label: its path as written, but ``{name}`` for a parameter of one segment
    whatever convertor decodes it (the /v1 names' ``segment``: app/api/raw_paths.py), so the
    label is the template clients read; ``{path:path}``, which spans segments, stays."""
    convertors = getattr(route, "param_convertors", None) or {}
    if convertors and all(isinstance(c, StringConvertor) for c in convertors.values()):
        return str(route.path_format)
    return str(route.path)


def _access_line(
    scope: Scope, method: str, route: str, status: int, seconds: float, request_id: str
) -> None:
    raw: bytes = scope.get("raw_path") or scope["path"].encode("utf-8", "surrogateescape")
    query: bytes = scope.get("query_string", b"")
    path = redact(raw.decode("latin-1") + ("?" + query.decode("latin-1") if query else ""))
    client = scope.get("client")
    peer = f"{client[0]}:{client[1]}" if client else "-"
    duration_ms = round(seconds * 1000, 3)
    log.info(
        '%s - "%s %s HTTP/%s" %d route=%s duration_ms=%.3f request_id=%s',
        peer,
        method,
        path,
        scope.get("http_version", "1.1"),
        status,
        route,
        duration_ms,
        request_id,
        extra={
            "redacted": True,  # ``path`` is; the rest cannot hold a query (app/redaction)
            "batched": True,  # written with the loop turn's other access lines (LineWriter)
            "fields": {
                "client": peer,
                "method": method,
                "path": path,
                "route": route,
                "status": status,
                "duration_ms": duration_ms,
            },
        },
    )
