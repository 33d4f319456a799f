"""Bearer-token authentication for every request (except health probes).

A pure ASGI middleware: it runs before routing, so an unauthenticated request never reaches
a handler, and it answers in the command endpoint's shape, ``{"error":"Unauthorized"}``.
"""

from __future__ import annotations

import hmac
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Receive, Scope, Send

OPEN_PATHS = frozenset({"/healthz", "/readyz"})
_UNAUTHORIZED = b'{"error":"Unauthorized"}'


class TokenAuth:
    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    def _allowed(self, scope: Scope) -> bool:
        for name, value in scope["headers"]:
            if name == b"authorization":
                scheme, _, given = value.partition(b" ")
                if scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token):
                    return True
        query = scope.get("query_string", b"")
        if b"_token=" in query:
            for k, v in parse_qsl(query.decode("latin-1")):
                if k == "_token" and hmac.compare_digest(v.encode("latin-1"), self.token):
                    return True
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or self._allowed(scope):
            await self.app(scope, receive, send)
            return
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(_UNAUTHORIZED)).encode()),
                    (b"www-authenticate", b"Bearer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": _UNAUTHORIZED})
