"""PUT (create) and POST (append, close, idempotent producers)."""

from __future__ import annotations

from dataclasses import replace

from starlette.requests import Request
from starlette.responses import Response

from app.api.services import services_of
from app.backends import Backend

from . import headers as h
from . import offsets
from .bodies import appends, messages
from .meta import Meta, guard, record, tail
from .responses import error, reply

__all__ = ["append", "create"]


def _stream_headers(meta: Meta, next_offset: str) -> dict[str, str]:
    out = {"content-type": meta.content_type, h.NEXT_OFFSET: next_offset}
    if meta.closed:
        out[h.CLOSED] = "true"
    return out


async def create(
    request: Request, backend: Backend, key: str, meta: Meta | None, body: bytes
) -> Response | None:
    """PUT on the record ``meta`` read (None: no stream); None when a record appeared
    meanwhile: read it again and call again."""
    ttl, expires = h.ttl(request.headers), h.expires_at(request.headers)
    if ttl is not None and expires is not None:
        raise h.BadRequest("Stream-TTL and Stream-Expires-At exclude each other")
    content_type = h.content_type_of(request.headers) or h.DEFAULT_TYPE
    closing = h.wants_close(request.headers)
    if meta is not None:
        same = (
            h.same_type(content_type, meta.content_type)
            and ttl == meta.ttl
            and expires == meta.expires_at
            and closing == meta.closed
        )
        if not same:
            return error(409, "a stream with another configuration is at this path")
        return reply(200, _stream_headers(meta, offsets.token(await tail(backend, key))))
    json_mode = h.is_json(content_type)
    bodies = messages(body, json_mode, allow_empty_array=True) if body else []
    meta = Meta(content_type, ttl, expires, closed=closing)
    batch = appends(key, content_type, bodies) if bodies else []
    ids = await backend.append_guarded(batch, guard(key, None), record(key, meta))
    if ids is None:
        return None  # another request created it meanwhile
    last = (ids[-1] if ids else None) or await tail(backend, key)
    headers = _stream_headers(meta, offsets.token(last))
    headers["location"] = str(request.url)
    return reply(201, headers)


def _producer_headers(epoch: int, seq: int) -> dict[str, str]:
    return {"Producer-Epoch": str(epoch), "Producer-Seq": str(seq)}


async def append(
    request: Request, backend: Backend, key: str, meta: Meta, body: bytes
) -> Response | None:
    """POST, decided on the record ``meta`` as read; None when the record changed before the
    write (another request or front-end wrote it): read it again and call again."""
    closing = h.wants_close(request.headers)
    producer = h.producer(request.headers)
    last = await tail(backend, key)
    next_offset = offsets.token(last)
    if meta.closed:
        closed = {h.CLOSED: "true", h.NEXT_OFFSET: next_offset}
        if producer is not None and meta.closer == [producer.id, producer.epoch, producer.seq]:
            return reply(204, {**closed, **_producer_headers(producer.epoch, producer.seq)})
        if closing and not body:
            return reply(204, closed)
        return error(409, "the stream is closed", closed)
    if not body and not closing:
        raise h.BadRequest("an append needs a body (or Stream-Closed: true)")
    content_type = h.content_type_of(request.headers)
    if body:
        if content_type is None:
            raise h.BadRequest("an append with a body needs a Content-Type")
        if not h.same_type(content_type, meta.content_type):
            return error(409, f"the stream's content type is {meta.content_type}")
    producers = dict(meta.producers)
    if producer is not None:
        state = producers.get(producer.id)
        if state is not None and producer.epoch < state[0]:
            return error(403, "stale producer epoch", {"Producer-Epoch": str(state[0])})
        if state is None or producer.epoch > state[0]:
            if producer.seq != 0:
                if state is None:
                    return error(
                        409,
                        "producer sequence gap",
                        {"Producer-Expected-Seq": "0", "Producer-Received-Seq": str(producer.seq)},
                    )
                raise h.BadRequest("a new producer epoch starts at Producer-Seq 0")
        else:
            if producer.seq <= state[1]:
                dup = _producer_headers(producer.epoch, state[1])
                return reply(204, {h.NEXT_OFFSET: next_offset, **dup})
            if producer.seq > state[1] + 1:
                gap = {
                    "Producer-Expected-Seq": str(state[1] + 1),
                    "Producer-Received-Seq": str(producer.seq),
                }
                return error(409, "producer sequence gap", gap)
        # Most recent last: the record keeps the newest ``ds_max_producers``, as IDMP does.
        producers.pop(producer.id, None)
        producers[producer.id] = [producer.epoch, producer.seq]
        cap = services_of(request).settings.ds_max_producers
        for old in list(producers)[: max(0, len(producers) - cap)]:
            del producers[old]
    seq = request.headers.get(h.SEQ)
    if seq is not None and meta.seq is not None and seq <= meta.seq:
        return error(409, "Stream-Seq must increase")
    bodies = messages(body, h.is_json(meta.content_type), allow_empty_array=False) if body else []
    closer = [producer.id, producer.epoch, producer.seq] if closing and producer else meta.closer
    changed = replace(
        meta,
        closed=meta.closed or closing,
        seq=seq if seq is not None else meta.seq,
        producers=producers,
        closer=closer,
    )
    batch = appends(key, meta.content_type, bodies) if bodies else []
    rewrite = record(key, changed) if changed != meta else None
    # Even an append that leaves the record as it is is guarded: a close, a producer's
    # step or a Stream-Seq may have been decided since this request read the record.
    ids = await backend.append_guarded(batch, guard(key, meta), rewrite)
    if ids is None:
        return None
    meta = changed
    if ids:
        last = ids[-1] or last
    elif closing:
        last = await tail(backend, key)  # closed: nothing lands after this, it is final
    out = {h.NEXT_OFFSET: offsets.token(last)}
    if meta.closed:
        out[h.CLOSED] = "true"
    if producer is not None:
        out.update(_producer_headers(producer.epoch, producer.seq))
        return reply(200 if bodies else 204, out)  # 204: a close that appended nothing
    return reply(204, out)
