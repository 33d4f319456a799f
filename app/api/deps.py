"""Request helpers: the body within its size limit, disconnect detection."""

from __future__ import annotations

from fastapi import Request

from app.api.services import services_of


class BodyTooLarge(Exception):
    """The request body exceeds ``max_body_bytes``."""


async def read_body(request: Request) -> bytes:
    """The whole body, refusing more than the configured limit before reading it all."""
    limit: int = services_of(request).settings.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    size = 0
    chunks = []
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


async def wait_for_disconnect(request: Request) -> None:
    """Returns when the client goes away (the body has been read by then)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
