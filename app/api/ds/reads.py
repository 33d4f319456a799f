"""GET: catch-up reads and long polls (``live=long-poll``)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from app.access.check import check_keys
from app.api.access_gate import principal_of
from app.api.deps import wait_for_disconnect
from app.api.services import services_of
from app.backends import Backend
from app.engine.commands.reads import ReadRequest
from app.engine.commands.streams import RangeArgs
from app.engine.commands.table import named
from app.engine.ids import MAX_ID, StreamID
from app.engine.stream import Entry

from . import headers as h
from . import offsets
from .bodies import concat, payload
from .meta import Meta, load, meta_key, tail
from .responses import error, reply

__all__ = ["Chunk", "read_chunk", "read_get"]

CHUNK_ENTRIES = 1000
CHUNK_BYTES = 1 << 20
LONG_POLL_MS = 10_000
_XREAD = named("xread")  # a long poll is checked as the blocking read it is


@dataclass(frozen=True, slots=True)
class Chunk:
    """Entries after a position, up to the chunk limits, and where the next read starts."""

    start: StreamID
    entries: list[Entry]
    next: StreamID
    up_to_date: bool


async def read_chunk(backend: Backend, key: str, start: StreamID) -> Chunk:
    after = start.incr()
    if after is None:
        return Chunk(start, [], start, True)
    got = await backend.range(RangeArgs(key, after, MAX_ID, CHUNK_ENTRIES + 1))
    more = len(got) > CHUNK_ENTRIES
    entries = got[:CHUNK_ENTRIES]
    size = 0
    for i, entry in enumerate(entries):
        size += len(payload(entry))
        if size > CHUNK_BYTES and i > 0:
            entries, more = entries[:i], True
            break
    end = entries[-1].id if entries else start
    return Chunk(start, entries, end, not more)


def _etag(chunk: Chunk, closed: bool) -> str:
    end = offsets.token(chunk.next)
    return f'"{offsets.token(chunk.start)}:{end}{":c" if closed else ""}"'


def _data(request: Request, meta: Meta, chunk: Chunk, *, live: bool, status: int = 200) -> Response:
    closed = meta.closed and chunk.up_to_date
    out = {
        "content-type": meta.content_type,
        h.NEXT_OFFSET: offsets.token(chunk.next),
        "etag": _etag(chunk, closed),
    }
    if chunk.up_to_date:
        out[h.UP_TO_DATE] = "true"
    if closed:
        out[h.CLOSED] = "true"
    if live and not closed:
        out[h.CURSOR] = h.cursor_after(request.query_params.get("cursor"))
    private = "authorization" in request.headers
    out["cache-control"] = (
        f"{'private' if private else 'public'}, max-age=60, stale-while-revalidate=300"
    )
    if request.headers.get("if-none-match") == out["etag"]:
        return reply(304, {k: v for k, v in out.items() if k != "content-type"})
    body = concat(chunk.entries, h.is_json(meta.content_type))
    return reply(status, out, body)


def _at_tail(request: Request, meta: Meta, position: StreamID, *, live: bool) -> Response:
    """Nothing after ``position``: catch-up 200 with an empty body, long poll 204."""
    out = {h.NEXT_OFFSET: offsets.token(position), h.UP_TO_DATE: "true"}
    if meta.closed:
        out[h.CLOSED] = "true"
    elif live:
        out[h.CURSOR] = h.cursor_after(request.query_params.get("cursor"))
    if live:
        return reply(204, out)
    out["content-type"] = meta.content_type
    out["cache-control"] = "no-store"
    return reply(200, out, b"[]" if h.is_json(meta.content_type) else b"")


async def read_get(
    request: Request, backend: Backend, key: str, meta: Meta, offset: str, live: bool
) -> Response:
    if offset == offsets.NOW:
        position = await tail(backend, key)
        if not live or meta.closed:
            return _at_tail(request, meta, position, live=live)
    else:
        position = offsets.parse(offset)
    chunk = await read_chunk(backend, key, position)
    if chunk.entries:
        return _data(request, meta, chunk, live=live)
    if not live or meta.closed:
        if not live:
            return _data(request, meta, chunk, live=False)
        return _at_tail(request, meta, position, live=True)
    return await _long_poll(request, backend, key, meta, position)


async def _long_poll(
    request: Request, backend: Backend, key: str, meta: Meta, position: StreamID
) -> Response:
    """Wait for an entry after ``position`` or a change of the record (a close, a delete)."""
    services = services_of(request)
    principal = principal_of(request.scope)
    if not principal.unrestricted:
        check_keys(principal, _XREAD, [key])
    deadline = time.monotonic() + LONG_POLL_MS / 1000
    with services.holds.holding(principal):
        while True:
            left = int((deadline - time.monotonic()) * 1000)
            if left <= 0:
                return _at_tail(request, meta, position, live=True)
            read = ReadRequest(
                keys=[key, meta_key(key)],
                ids=[str(position), str(meta.written)],
                count=1,
                block_ms=left,
            )
            await backend.read(read, lambda: wait_for_disconnect(request))
            fresh = await load(backend, key)
            if fresh is None:
                return error(404, "stream deleted")
            meta = fresh
            chunk = await read_chunk(backend, key, position)
            if chunk.entries:
                return _data(request, meta, chunk, live=True)
            if meta.closed:
                return _at_tail(request, meta, position, live=True)
