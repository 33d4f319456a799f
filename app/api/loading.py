"""Holding requests while the keyspace loads (recovery), as Redis answers LOADING meanwhile.

A request that arrives during recovery waits up to ``LOADING_WAIT_S`` for it to finish, then
gets 503 with Redis's ``LOADING`` error: short recoveries cost a client a short delay rather
than an error, and nobody ever sees a half-loaded keyspace. While recovery waits for its
database instead (unreachable, or refusing writes) a request is answered at once, with the
reason. ``/healthz`` and ``/readyz`` pass at once, so probes see "alive, not ready".
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.errors import send_error
from app.durability import Readiness, ReadyState

LOADING_WAIT_S = 10.0
LOADING = "LOADING xstreams is loading the dataset in memory"
_PROBES = ("/healthz", "/readyz")


class LoadingGate:
    def __init__(self, app: ASGIApp, readiness: Readiness, wait_s: float = LOADING_WAIT_S) -> None:
        self.app = app
        self.readiness = readiness
        self.wait_s = wait_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        ready = self.readiness
        if (
            scope["type"] != "http"
            or ready.state is ReadyState.READY
            or scope["path"] in _PROBES
            or (
                ready.state is not ReadyState.FAILED
                and ready.waiting is None
                and await ready.wait(self.wait_s)
            )
        ):
            await self.app(scope, receive, send)
            return
        if ready.error is not None:
            text = f"LOADING {ready.error}"
        elif ready.waiting is not None:
            text = f"LOADING xstreams is waiting for its database: {ready.waiting}"
        else:
            text = LOADING
        await send_error(scope, send, 503, text, [(b"retry-after", b"1")])
