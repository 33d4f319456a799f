"""Responses of the /ds surface: the browser security headers on every one, errors as short
plain text (clients read the status and headers, not the body)."""

from __future__ import annotations

from starlette.responses import Response

from .headers import security

__all__ = ["error", "reply"]


def reply(status: int, headers: dict[str, str] | None = None, body: bytes = b"") -> Response:
    """No ``media_type``: Starlette would append a charset to the stream's content type."""
    return Response(body, status_code=status, headers={**security(), **(headers or {})})


def error(status: int, text: str, headers: dict[str, str] | None = None) -> Response:
    return reply(status, {"content-type": "text/plain", **(headers or {})}, text.encode())
