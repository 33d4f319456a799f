"""The /ds routes: one Starlette route for every method on ``/ds/{path}``."""

from __future__ import annotations

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from app.access import NoPerm
from app.access.check import check_keys
from app.api.access_gate import principal_of
from app.api.deps import BodyTooLarge, read_body
from app.api.holds import TooManyHeld
from app.api.meter import OverBudget
from app.api.quotas import QuotaFull
from app.api.services import services_of
from app.engine.commands.table import named
from app.engine.waiting import ClientGone

from . import headers as h
from . import meta as records
from . import offsets
from .forks import FORKED_FROM, SUB_OFFSET, create_fork, remove
from .offsets import OffsetError
from .reads import read_get
from .responses import error, reply
from .sse import read_sse
from .state import DsState
from .writes import append, create

__all__ = ["Surface"]

_MODELS = {
    "PUT": named("xadd"),
    "POST": named("xadd"),
    "GET": named("xrange"),
    "HEAD": named("xrange"),
    "DELETE": named("del"),
}
_LIVE = {None, "long-poll", "sse"}

# How often a write decides again when the record keeps changing under it (other front-ends
# writing the same stream); past that the client is asked to try again.
ATTEMPTS = 16


def _busy() -> Response:
    return error(503, "the stream's record kept changing; try again", {"retry-after": "1"})


class Surface:
    """The endpoint, with this process's per-stream state (locks, last touch)."""

    def __init__(self) -> None:
        self.state = DsState()

    async def endpoint(self, request: Request) -> Response:
        key = request.path_params["path"]
        if not key:
            return error(404, "no stream")
        principal = principal_of(request.scope)
        key = principal.tenant.inward(key)  # the credential's prefix (app/access/prefix.py)
        try:
            if not principal.unrestricted:
                check_keys(principal, _MODELS[request.method], [key])
            return await self._serve(request, key)
        except (h.BadRequest, OffsetError) as exc:
            return error(400, str(exc))
        except records.UnreadableRecord as exc:
            return error(409, str(exc))
        except records.RecordBusy:
            return _busy()
        except NoPerm as exc:
            return error(403, str(exc))
        except TooManyHeld as exc:
            return error(429, exc.text, {"retry-after": "1"})
        except OverBudget as exc:  # the rate gate adds Retry-After and RateLimit
            return error(429, exc.text)
        except QuotaFull as exc:
            return error(507, exc.text)
        except BodyTooLarge:
            return error(413, "the body is larger than max_body_bytes")
        except (ClientGone, ClientDisconnect):
            return reply(499)

    async def _current(self, request: Request, key: str) -> records.Meta | None:
        """The stream's record; an expired stream is deleted here (lazily) and is None."""
        backend = services_of(request).backend
        meta = await records.load(backend, key)
        if meta is not None and not meta.deleted and meta.expired(self.state.touched.get(key, 0)):
            await remove(backend, self.state, key, meta)
            return None
        return meta

    async def _existing(self, request: Request, key: str) -> records.Meta | Response:
        """The stream's live record, or the answer when there is none: 404, or 410 for a
        deleted stream that forks still name."""
        meta = await self._current(request, key)
        if meta is None:
            return error(404, "no such stream")
        if meta.deleted:
            return error(410, "the stream is deleted")
        return meta

    async def _serve(self, request: Request, key: str) -> Response:
        backend = services_of(request).backend
        method = request.method
        if method == "PUT":
            body = await read_body(request)  # 413 past max_body_bytes
            forked = request.headers.get(FORKED_FROM) is not None
            if not forked and request.headers.get(SUB_OFFSET) is not None:
                raise h.BadRequest("Stream-Fork-Sub-Offset needs Stream-Forked-From")
            async with self.state.serialized(key):
                for _ in range(ATTEMPTS):
                    prior = await self._current(request, key)
                    if prior is not None and prior.deleted:
                        return error(409, "a deleted stream still has forks at this path")
                    if forked:
                        response = await create_fork(request, backend, self.state, key, prior, body)
                    else:
                        response = await create(request, backend, key, prior, body)
                    if response is not None:
                        break
                else:
                    return _busy()
            if forked or h.ttl(request.headers) is not None:  # a fork may inherit a TTL
                self.state.touch(key)
            return response
        if method == "POST":
            body = await read_body(request)  # 413 past max_body_bytes
            async with self.state.serialized(key):
                for _ in range(ATTEMPTS):
                    meta = await self._existing(request, key)
                    if isinstance(meta, Response):
                        return meta
                    response = await append(request, backend, key, meta, body)
                    if response is not None:
                        break
                else:
                    return _busy()
            if meta.ttl is not None:
                self.state.touch(key)
            return response
        meta = await self._existing(request, key)
        if isinstance(meta, Response):
            return meta
        if method == "HEAD":
            return await self._head(request, key, meta)
        if method == "DELETE":
            async with self.state.serialized(key):
                meta = await self._existing(request, key)
                if isinstance(meta, Response):
                    return meta
                await remove(backend, self.state, key, meta)
            return reply(204)
        params = request.query_params
        if len(params.getlist("offset")) > 1 or len(params.getlist("live")) > 1:
            raise h.BadRequest("offset and live may each be given once")
        live = params.get("live")
        if live not in _LIVE:
            raise h.BadRequest("live is long-poll or sse")
        offset = params.get("offset")
        if offset is None:
            if live is not None:
                raise h.BadRequest("a live read needs an offset")
            offset = "-1"
        if offset == "":
            raise h.BadRequest("an empty offset")
        if meta.ttl is not None:
            self.state.touch(key)
        if live == "sse":
            return await read_sse(request, backend, key, meta, offset)
        return await read_get(request, backend, key, meta, offset, live == "long-poll")

    async def _head(self, request: Request, key: str, meta: records.Meta) -> Response:
        last = await records.tail(services_of(request).backend, key)
        out = {
            "content-type": meta.content_type,
            h.NEXT_OFFSET: offsets.token(last),
            "cache-control": "no-store",
        }
        if meta.ttl is not None:
            out[h.TTL] = str(meta.ttl)
        if meta.expires_at is not None:
            out[h.EXPIRES_AT] = meta.expires_at
        if meta.closed:
            out[h.CLOSED] = "true"
        return reply(200, out)
