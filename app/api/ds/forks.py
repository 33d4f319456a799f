"""Forks (PROTOCOL.md 4.2), copy-on-fork: the fork is a stream of its own holding a copy of
the source's entries up to the fork point, with their IDs, so the fork shares the source's
offsets for the inherited range and its own appends follow them. Reads, long polls and SSE
need nothing else. The source counts its forks (``refs``); deleting a source that still has
forks soft-deletes it (410), and deleting the last fork of a soft-deleted source removes it,
up the chain."""

from __future__ import annotations

from dataclasses import replace

from starlette.requests import Request
from starlette.responses import Response

from app.access.check import check_keys
from app.api.access_gate import principal_of
from app.api.meter import unmetered
from app.backends import Backend
from app.engine.commands.streams import RangeArgs, XAddArgs
from app.engine.commands.table import named
from app.engine.ids import MAX_ID, MIN_ID, StreamID
from app.engine.stream import Entry

from . import headers as h
from . import meta as records
from . import offsets
from .bodies import BODY, appends, decode, messages, payload
from .meta import Meta
from .responses import error, reply
from .state import DsState

__all__ = ["SUB_OFFSET", "create_fork", "remove", "source_key"]

FORKED_FROM = "Stream-Forked-From"
FORK_OFFSET = "Stream-Fork-Offset"
SUB_OFFSET = "Stream-Fork-Sub-Offset"
PAGE = 1000


def source_key(value: str) -> str:
    """The source's key from ``Stream-Forked-From``: a path relative to the /ds base
    (``/v1/stream/a``) or the full path on this server (``/ds/v1/stream/a``)."""
    value = value.strip()
    if value.startswith("/ds/"):
        return value[4:]
    return value.lstrip("/")


def _sub_offset(request: Request) -> int:
    value = request.headers.get(SUB_OFFSET)
    if value is None:
        return 0
    if not value.strip().isdigit() or not value.strip().isascii():
        raise h.BadRequest("Stream-Fork-Sub-Offset must be a non-negative integer")
    return int(value)


def _truncated(entry: Entry, size: int) -> Entry:
    flat = list(entry.fields)
    for i in range(0, len(flat) - 1, 2):
        if flat[i] == BODY:
            flat[i + 1] = decode(payload(entry)[:size])
    return Entry(entry.id, tuple(flat))


async def _copy(backend: Backend, source: str, key: str, upto: StreamID) -> None:
    """The source's history up to the fork point, unmetered: the fork shares it, and a
    copy cut short by a budget would leave a fork with half of it."""
    start: StreamID | None = MIN_ID
    while start is not None:
        with unmetered():
            page = await backend.range(RangeArgs(source, start, upto, PAGE))
            if not page:
                return
            await backend.append([XAddArgs(key, e.fields, id=e.id) for e in page])
        start = page[-1].id.incr() if len(page) == PAGE else None


async def create_fork(
    request: Request,
    backend: Backend,
    state: DsState,
    key: str,
    existing: Meta | None,
    body: bytes,
) -> Response | None:
    """PUT with ``Stream-Forked-From``; called with ``key``'s lock held. None when a stream
    appeared at ``key`` meanwhile (another front-end): read again, call again."""
    ttl, expires = h.ttl(request.headers), h.expires_at(request.headers)
    if ttl is not None and expires is not None:
        raise h.BadRequest("Stream-TTL and Stream-Expires-At exclude each other")
    sub = _sub_offset(request)
    at_text = request.headers.get(FORK_OFFSET)
    if sub and at_text is None:
        raise h.BadRequest("Stream-Fork-Sub-Offset needs Stream-Fork-Offset")
    principal = principal_of(request.scope)
    source = principal.tenant.inward(source_key(request.headers[FORKED_FROM]))
    if not principal.unrestricted:  # a fork copies the source: reading it needs read
        check_keys(principal, named("xrange"), [source])
    if source == key:
        raise h.BadRequest("a stream cannot fork itself")
    asked_type = h.content_type_of(request.headers)
    closing = h.wants_close(request.headers)
    async with state.serialized(source):
        src = await records.load(backend, source)
        if src is None or src.expired(state.touched.get(source, 0)):
            return error(404, "no such source stream")
        if src.deleted:
            return error(409, "the source stream is deleted")
        if asked_type is not None and not h.same_type(asked_type, src.content_type):
            return error(409, f"the source's content type is {src.content_type}")
        content_type = asked_type or src.content_type
        if ttl is None and expires is None:
            ttl, expires = src.ttl, src.expires_at
        src_tail = await records.tail(backend, source)
        at = src_tail if at_text is None else offsets.parse(at_text.strip())
        if at > src_tail:
            raise h.BadRequest("Stream-Fork-Offset is past the source's tail")
        if existing is not None:
            same = (
                h.same_type(content_type, existing.content_type)
                and (ttl, expires, closing) == (existing.ttl, existing.expires_at, existing.closed)
                and (existing.forked_from, existing.fork_offset, existing.fork_sub)
                == (source, offsets.token(at), sub)
            )
            if not same:
                return error(409, "a stream with another configuration is at this path")
            last = await records.tail(backend, key)
            out = {"content-type": existing.content_type, h.NEXT_OFFSET: offsets.token(last)}
            return reply(200, out)
        extra: list[Entry] = []
        if sub:
            json_mode = h.is_json(src.content_type)
            after = at.incr() or MAX_ID
            nxt = await backend.range(RangeArgs(source, after, MAX_ID, sub if json_mode else 1))
            if json_mode:
                if len(nxt) < sub:
                    raise h.BadRequest("Stream-Fork-Sub-Offset is past the next messages")
                extra = nxt
            else:
                if not nxt or len(payload(nxt[0])) < sub:
                    raise h.BadRequest("Stream-Fork-Sub-Offset is past the next message")
                extra = [_truncated(nxt[0], sub)]
        await _copy(backend, source, key, at)
        if extra:
            await backend.append([XAddArgs(key, e.fields, id=e.id) for e in extra])
        bodies = messages(body, h.is_json(content_type), allow_empty_array=True) if body else []
        if bodies:
            await backend.append(appends(key, content_type, bodies))
        meta = Meta(
            content_type,
            ttl,
            expires,
            closed=closing,
            forked_from=source,
            fork_offset=offsets.token(at),
            fork_sub=sub,
        )
        if not await records.save_if(backend, key, meta, None):
            return None  # another front-end created a stream here meanwhile
        await records.update(backend, source, lambda m: replace(m, refs=m.refs + 1))
    out = {
        "content-type": content_type,
        h.NEXT_OFFSET: offsets.token(await records.tail(backend, key)),
        "location": str(request.url),
    }
    if closing:
        out[h.CLOSED] = "true"
    return reply(201, out)


async def remove(backend: Backend, state: DsState, key: str, meta: Meta) -> None:
    """DELETE (or expiry): soft while forks name the stream, else gone, and each source up
    the chain that was waiting for its last fork with it. Called with ``key``'s lock held;
    takes each source's lock in turn (child before parent, always)."""
    if meta.refs > 0:
        await records.update(backend, key, lambda m: replace(m, deleted=True))
        return
    await records.delete(backend, key)
    state.forget(key)
    source = meta.forked_from
    while source is not None:
        async with state.serialized(source):
            src = await records.update(
                backend, source, lambda m: replace(m, refs=max(0, m.refs - 1))
            )
            if src is None or not (src.deleted and src.refs == 0):
                return
            await records.delete(backend, source)
            state.forget(source)
            source = src.forked_from
