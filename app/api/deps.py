"""Request helpers: the body within its size limit, disconnect detection."""

from __future__ import annotations

from fastapi import Request
from starlette.requests import ClientDisconnect

from app.api.services import services_of


class BodyTooLarge(Exception):
    """The request body exceeds ``max_body_bytes``."""


async def read_body(request: Request) -> bytes:
    """The whole body, refusing more than the configured limit before reading it all. Read
    once: the request's own ``body`` and ``stream`` do not see it (``RestRequest`` keeps it)."""
    limit: int = services_of(request).settings.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    # ``receive`` itself, as ``Request.stream`` reads it, without an async generator a request.
    receive = request.receive
    size = 0
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def wait_for_disconnect(request: Request) -> None:
    """Returns when the client goes away (the body has been read by then)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
