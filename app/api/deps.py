"""Request dependencies: the store, the body within its size limit, disconnect detection."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.engine.store import Store


class BodyTooLarge(Exception):
    """The request body exceeds ``max_body_bytes``."""


# Dependencies are ``async def``: FastAPI runs a plain ``def`` one in a worker thread, two
# thread hops per request on the hottest path (XADD) for a mere attribute read.
async def get_store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


StoreDep = Annotated[Store, Depends(get_store)]


async def read_body(request: Request) -> bytes:
    """The whole body, refusing more than the configured limit before reading it all."""
    limit: int = request.app.state.settings.max_body_bytes
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
