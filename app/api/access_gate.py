"""Who is asking, decided once per request before routing (a pure ASGI middleware).

The gate resolves the request's credentials to a ``Principal`` (``app.access``) and leaves it
in the scope's state, where each surface finds it to ask the one permission check
(``app.access.check``) about the command it is about to run. Without a valid credential the
request stops here with 401, in the shape of the surface addressed: ``{"error":
"Unauthorized"}`` for the command endpoint, a problem document for ``/v1``. Health probes pass
without credentials, and so do the dashboard's static files under ``/ui/`` (the page then
calls the API with its user's credential) and a CORS preflight (the CORS middleware, outside
this one, answers it).
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Receive, Scope, Send

from app.access import Authenticator, Principal
from app.access.principal import OPEN
from app.api.errors import error_body

__all__ = ["OPEN_PATHS", "OPEN_PREFIXES", "AccessGate", "principal_of"]

OPEN_PATHS = frozenset({"/healthz", "/readyz", "/ui"})
OPEN_PREFIXES = ("/ui/",)  # static files only: nothing under them runs a command


def principal_of(scope: Scope) -> Principal:
    """The principal the gate resolved for this request."""
    principal: Principal = scope["state"]["principal"]
    return principal


class AccessGate:
    def __init__(self, app: ASGIApp, authenticator: Authenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self.authenticator.enabled:  # nothing configured: everyone is the admin
            scope.setdefault("state", {})["principal"] = OPEN
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            await self.app(scope, receive, send)
            return
        principal = self.authenticator.authenticate(
            scope["headers"],
            scope.get("query_string", b""),
            time.time_ns() // 1_000_000,
            # A cookie is read for GET under /v1 only (event streams, REST reads), never for
            # the command endpoint; and what it authorizes there may write only on a request
            # from a trusted page (app.access.principal: the check refuses the rest).
            cookie_ok=scope["method"] == "GET" and path.startswith("/v1/"),
        )
        if principal is None:
            await _unauthorized(scope, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)


async def _unauthorized(scope: Scope, send: Send) -> None:
    media, body = error_body(scope["path"], 401, "Unauthorized")
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", media.encode()),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b"Bearer"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
