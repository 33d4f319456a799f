"""GET with ``live=sse``: the stream's messages as ``data`` events, each followed by a
``control`` event (next offset, cursor, up-to-date, closed). Binary streams are base64."""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncIterator

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from app.api.access_gate import principal_of
from app.api.deps import wait_for_disconnect
from app.api.meter import patiently, unmetered
from app.api.services import services_of
from app.backends import Backend
from app.engine.commands.reads import ReadRequest
from app.engine.ids import StreamID
from app.engine.waiting import ClientGone

from . import headers as h
from . import offsets
from .bodies import concat, payload
from .meta import Meta, load, meta_key, tail
from .reads import Chunk, read_chunk

__all__ = ["read_sse"]

CONNECTION_S = 60  # the protocol asks to close about every minute (CDN collapsing)


def _lines(text: str) -> bytes:
    return "".join(f"data:{line}\n" for line in text.split("\n")).encode()


def _data_event(chunk: Chunk, content_type: str) -> bytes:
    if h.is_json(content_type):
        text = concat(chunk.entries, json_mode=True).decode("utf-8", "replace")
        return b"event: data\n" + _lines(text) + b"\n"
    raw = b"".join(payload(e) for e in chunk.entries)
    if h.is_text(content_type):
        text = raw.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
        return b"event: data\n" + _lines(text) + b"\n"
    return b"event: data\n" + _lines(base64.b64encode(raw).decode()) + b"\n"


def _control(request: Request, meta: Meta, position: StreamID, up_to_date: bool) -> bytes:
    control: dict[str, object] = {"streamNextOffset": offsets.token(position)}
    closed = meta.closed and up_to_date
    if closed:
        control["streamClosed"] = True
    else:
        control["streamCursor"] = h.cursor_after(request.query_params.get("cursor"))
    if up_to_date:
        control["upToDate"] = True
    return b"event: control\ndata:" + orjson.dumps(control) + b"\n\n"


async def read_sse(
    request: Request, backend: Backend, key: str, meta: Meta, offset: str
) -> Response:
    if offset == offsets.NOW:
        position = await tail(backend, key)
    else:
        position = offsets.parse(offset)
    holds = services_of(request).holds
    principal = principal_of(request.scope)
    out = {
        **h.security(),
        "content-type": "text/event-stream",  # as is: no charset
        "cache-control": "no-cache",
        "x-accel-buffering": "no",
    }
    if not h.is_text(meta.content_type):
        out["stream-sse-data-encoding"] = "base64"

    refusal = holds.take(principal)  # before the response starts: a refusal is a 429
    if refusal is not None:
        raise refusal
    patiently()  # past the entries budget the stream pauses (app/api/meter.py)

    async def events() -> AsyncIterator[bytes]:
        nonlocal meta, position
        deadline = time.monotonic() + CONNECTION_S
        try:
            while True:
                chunk = await read_chunk(backend, key, position)
                data = _data_event(chunk, meta.content_type) if chunk.entries else b""
                position = chunk.next
                # One write: a data event and its control event reach the client together.
                yield data + _control(request, meta, position, chunk.up_to_date)
                if meta.closed and chunk.up_to_date:
                    return
                if not chunk.up_to_date:
                    continue
                while True:
                    left = int((deadline - time.monotonic()) * 1000)
                    if left <= 0:
                        return
                    read = ReadRequest(
                        keys=[key, meta_key(key)],
                        ids=[str(position), str(meta.written)],
                        count=1,
                        block_ms=left,
                    )
                    try:
                        with unmetered():  # a wake-up: read_chunk spends what it reads
                            got = await backend.read(read, lambda: wait_for_disconnect(request))
                    except ClientGone:
                        return
                    if not got:
                        continue
                    fresh = await load(backend, key)
                    if fresh is None:
                        return
                    meta = fresh
                    break
        finally:
            holds.give_back(principal)

    return StreamingResponse(events(), headers=out)
