"""Bearer-token authentication for every request (except health probes).

A pure ASGI middleware: it runs before routing, so an unauthenticated request never reaches
a handler. It answers in the shape of the surface addressed: ``{"error":"Unauthorized"}`` for
the command endpoint, an RFC 9457 problem for the ``/v1`` resources.
"""

from __future__ import annotations

import hmac
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Receive, Scope, Send

OPEN_PATHS = frozenset({"/healthz", "/readyz"})
_UNAUTHORIZED = b'{"error":"Unauthorized"}'
_UNAUTHORIZED_PROBLEM = (
    b'{"type":"about:blank","title":"Unauthorized","status":401,'
    b'"detail":"Unauthorized","code":"Unauthorized","error":"Unauthorized"}'
)


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
            # Compared as bytes: latin-1 maps each byte (raw or percent-decoded) to one
            # character and back, so any bytes at all compare, and a token that is not
            # ASCII matches its UTF-8 percent-encoding (a wrong one is a 401, never a 500).
            for k, v in parse_qsl(query.decode("latin-1"), encoding="latin-1"):
                if k == "_token" and hmac.compare_digest(v.encode("latin-1"), self.token):
                    return True
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or self._allowed(scope):
            await self.app(scope, receive, send)
            return
        rest = scope["path"] == "/v1" or scope["path"].startswith("/v1/")
        body = _UNAUTHORIZED_PROBLEM if rest else _UNAUTHORIZED
        media = b"application/problem+json" if rest else b"application/json"
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", media),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b"Bearer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
