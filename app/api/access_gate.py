"""Who is asking, decided once per request before routing (a pure ASGI middleware).

The gate resolves the request's credentials to a ``Principal`` (``app.access``) and leaves it
in the scope's state, where each surface finds it to ask the one permission check
(``app.access.check``) about the command it is about to run. Without a valid credential the
request stops here with 401, in the shape of the surface addressed: ``{"error":
"Unauthorized"}`` for the command endpoint, a problem document for ``/v1``. Only GET and
HEAD requests of a fixed set of paths pass without credentials: the health probes and the
dashboard's files (``dashboard.served_paths``: the page then calls the API with its user's
credential). Any other method on those paths, or any other path beside them, is asked for
credentials: an open path must not lead to a route that runs a command. A CORS preflight
never gets here (the CORS middleware, outside this one, answers it).
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Receive, Scope, Send

from app.access import Authenticator, Principal
from app.access.prefix import NO_PREFIX, TenantPrefix
from app.access.principal import OPEN
from app.api.errors import send_error

__all__ = ["OPEN_METHODS", "PROBES", "AccessGate", "principal_of", "tenant_of"]

PROBES = frozenset({"/healthz", "/readyz"})
OPEN_METHODS = frozenset({"GET", "HEAD"})


def principal_of(scope: Scope) -> Principal:
    """The principal the gate resolved for this request."""
    principal: Principal = scope["state"]["principal"]
    return principal


def tenant_of(scope: Scope) -> TenantPrefix:
    """The name mapping of the request's credential (app/access/prefix.py); none when no
    principal was resolved (a probe, a layer's own test)."""
    principal: Principal | None = scope.get("state", {}).get("principal")
    return NO_PREFIX if principal is None else principal.tenant


class AccessGate:
    def __init__(
        self, app: ASGIApp, authenticator: Authenticator, open_paths: frozenset[str] = PROBES
    ) -> None:
        self.app = app
        self.authenticator = authenticator
        self.open_paths = open_paths  # answered to GET and HEAD without credentials

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self.authenticator.enabled:  # nothing configured: everyone is the admin
            scope.setdefault("state", {})["principal"] = OPEN
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path in self.open_paths and scope["method"] in OPEN_METHODS:
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
    await send_error(scope, send, 401, "Unauthorized", [(b"www-authenticate", b"Bearer")])
