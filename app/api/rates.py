"""Requests per credential: spent before anything runs, on every surface alike.

A pure ASGI layer just inside the access gate: it knows who asks (the gate's principal) and
nothing of routes, so REST, event streams, the command endpoint and the dashboard's calls
spend the same budget, one request each (an event stream or a long poll when it opens).
The budget lives in the backend (``spend_rate``): in process for the embedded engine, in
Redis in front of it, so front-ends share it and a limit is the sum over workers.

Which rate applies: the credential's own (an API key's ``--rate``, a JWT's
``xstreams_limits`` claim), else ``rate_requests`` for API keys and JWTs, else
``rate_requests_admin`` for the admin token and an open service; none, and nothing is
spent. The health probes and the dashboard's files are never limited.

Every response to a limited credential says where it stands, in the IETF draft's fields
(draft-ietf-httpapi-ratelimit-headers): ``RateLimit-Policy: "requests";q=100;w=1`` and
``RateLimit: "requests";r=42;t=1`` (requests left now, seconds until the burst is whole).
Past the limit the answer is 429 with ``Retry-After`` (whole seconds, at least 1: the
header has no finer unit) and the wait in milliseconds in the error's text, in the shape of
the surface addressed. When the backend cannot be asked (Redis away), the request goes on
unlimited rather than failing for the limiter's sake: it meets the backend's own error next.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.access import Principal
from app.access.rates import Decision, Rate
from app.api.errors import error_body
from app.backends.roles import RatesRole
from app.observe.metrics import Metrics

__all__ = ["RateGate", "parsed", "rate_of"]

log = logging.getLogger("xstreams.rates")
POLICY = "requests"


def rate_of(
    principal: Principal, scoped_default: Rate | None, admin_default: Rate | None
) -> Rate | None:
    """The rate ``principal``'s requests are held to, or None (not limited)."""
    if principal.limits.requests is not None:
        return principal.limits.requests
    return scoped_default if principal.scoped else admin_default


def parsed(text: str | None) -> Rate | None:
    """A rate setting (checked when the settings were read), or None."""
    return None if text is None else Rate.parse(text)


def _headers(rate: Rate, decision: Decision) -> list[tuple[bytes, bytes]]:
    reset_s = math.ceil(decision.reset_ms / 1000)
    return [
        (b"ratelimit-policy", f'"{POLICY}";q={rate.count};w={rate.window_s}'.encode()),
        (b"ratelimit", f'"{POLICY}";r={decision.remaining};t={reset_s}'.encode()),
    ]


class RateGate:
    def __init__(
        self,
        app: ASGIApp,
        backend: Callable[[], RatesRole],
        metrics: Metrics,
        scoped_default: Rate | None,
        admin_default: Rate | None,
        open_paths: frozenset[str],
    ) -> None:
        self.app = app
        self.backend = backend  # asked per request: tests swap the backend after start
        self.metrics = metrics
        self.scoped_default = scoped_default
        self.admin_default = admin_default
        self.open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        principal: Principal | None = scope.get("state", {}).get("principal")
        rate = (
            None
            if principal is None
            else rate_of(principal, self.scoped_default, self.admin_default)
        )
        if principal is None or rate is None:
            await self.app(scope, receive, send)
            return
        try:
            decision = await self.backend().spend_rate(principal.limit_key, rate)
        except Exception:  # the backend's trouble is the request's to meet, not the limiter's
            log.warning("rate of %s not checked: the backend did not answer", principal.name)
            await self.app(scope, receive, send)
            return
        headers = _headers(rate, decision)
        if not decision.allowed:
            self.metrics.throttle(f"{principal.kind.value}:{principal.name}")
            await _too_many(scope, send, rate, decision, headers)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *headers]
            await send(message)

        await self.app(scope, receive, with_headers)


async def _too_many(
    scope: Scope, send: Send, rate: Rate, decision: Decision, headers: list[tuple[bytes, bytes]]
) -> None:
    text = (
        f"ERR too many requests for this credential (at most {rate}); retry after"
        f" {decision.retry_after_ms} ms"
    )
    media, body = error_body(scope["path"], 429, text)
    retry_s = max(1, math.ceil(decision.retry_after_ms / 1000))
    await send(
        {
            "type": "http.response.start",
            "status": 429,
            "headers": [
                (b"content-type", media.encode()),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", str(retry_s).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
