"""One event-stream connection's lifecycle: admit, write, heartbeat, end cleanly.

Under ``xstreams serve`` the connection leaves its request once the response has started:
``DetachedStream`` (app/api/sse/hub.py) runs it from the transport's callbacks, by the same
rules as below, and the request's objects are released. Elsewhere (another server, a HEAD
request) the response runs as an ASGI response to its end, as described here.

The source (a live tail or a group delivery loop) only pushes bytes into the connection's
``Outbox``; this module owns everything else, so each source stays a plain loop:

- admission: past ``sse_max_connections`` open streams the request gets 429 (503 while the
  server shuts down), a problem document, before anything streams;
- headers: ``text/event-stream``, ``Cache-Control: no-store`` (no cache may replay a live
  stream) and ``X-Accel-Buffering: no`` (nginx would otherwise hold events back); then a
  ``retry:`` hint, which also gets the headers out at once so ``EventSource`` opens;
- heartbeats: a comment every heartbeat period, so proxies keep an idle stream open (run,
  as the send watchdog, by one timer for all streams: ``sse_ticker``);
- the end, whichever comes first: the client goes away, its peer takes nothing for
  ``sse_send_timeout_ms`` while bytes wait for it, counted by the kernel (``sse_socket``: a
  watchdog timer, not a timeout per send, so sends stay cheap; where the kernel cannot tell,
  a send that has not returned for that long), the maximum lifetime passes, the credential
  it was opened with expires or is revoked (``SseRegistry.close_keys``), the server shuts
  down (``SseRegistry.close_all``), or the source ends. Buffered events are flushed and the
  chunked body is terminated properly, except for a departed or stalled client, whose buffer
  is dropped (a stalled one's connection is reset, so the kernel lets go of its buffers too);
  a final write that cannot finish within ``SEND_TIMEOUT_S`` is abandoned and the server
  closes the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from functools import partial

from fastapi import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from app.access import Principal
from app.api.access_gate import principal_of, tenant_of
from app.api.errors import problem
from app.api.services import services_of
from app.api.sse.flush import DirectWrite, direct_writer
from app.api.sse.hub import SEND_TIMEOUT_S, Detach, DetachedStream, Source, detacher
from app.api.sse.outbox import PARKED, CloseReason, Outbox
from app.api.sse.registry import SseRegistry
from app.api.sse.socket import PeerProgress, peer_progress
from app.api.sse.ticker import Tick
from app.api.sse.wire import HEARTBEAT, error_event, retry_hint
from app.engine.errors import CommandError

__all__ = ["SEND_TIMEOUT_S", "EventStream", "Source"]

log = logging.getLogger("xstreams.sse")


HEADERS = {
    "cache-control": "no-store",
    "x-accel-buffering": "no",
}


class EventStream(Response):
    """A ``text/event-stream`` response fed by ``source``."""

    media_type = "text/event-stream"

    def __init__(self, request: Request, source: Source) -> None:
        # Not Response.__init__: it would set a Content-Length for an empty body.
        self.status_code = 200
        self.background = None
        self.init_headers(HEADERS)
        self.request = request
        self.source = source
        services = services_of(request)
        settings = services.settings
        self.registry: SseRegistry = services.sse
        self.heartbeat_s = settings.sse_heartbeat_ms / 1000
        self.retry_ms: int = settings.sse_retry_ms
        self.lifetime_s = settings.sse_max_lifetime_ms / 1000
        self.limit_bytes: int = settings.sse_send_buffer_bytes
        self.send_timeout_s = settings.sse_send_timeout_ms / 1000
        self._beat: Tick | None = None
        self._watchdog: Tick | None = None
        self._sending_since: float | None = None  # loop time a send started, if in one
        self._peer: PeerProgress | None = None
        self._writer: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        detach = detacher(receive)
        direct = direct_writer(receive)
        # Written directly by the flusher's rounds where uvicorn allows it: the writer task is
        # then started only once a write must wait for the socket (``Outbox.writer_on_demand``).
        outbox = Outbox(self.limit_bytes, self.registry.flusher, direct)
        if direct is not None:
            outbox.writer_on_demand(partial(self._start_writer, outbox, send))
        principal = principal_of(scope)
        refusal = self.registry.admit(outbox, principal)
        if refusal is not None:
            status, text = refusal
            refused = problem(self.request, status, text, headers={"Retry-After": "1"})
            await refused(scope, receive, send)
            return
        detached = False
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            if detach is not None:
                detached = self._detach(outbox, principal, detach)
            if not detached:
                await self._stream(outbox, receive, send, principal.expires_at_ms, direct)
        finally:
            if not detached:
                self.registry.release(outbox, principal)

    def _detach(self, outbox: Outbox, principal: Principal, detach: Detach) -> bool:
        """Hand the connection to a ``DetachedStream`` (app/api/sse/hub.py), which runs it from
        here on, and let the request go; False when the server cannot."""
        record = DetachedStream(outbox, self.registry, principal, self.send_timeout_s)
        head = record.attach(detach)
        if head is None:
            return False
        record.start(
            head,
            retry_hint(self.retry_ms),
            self.source,
            self.heartbeat_s,
            self.lifetime_s,
            principal.expires_at_ms,
        )
        return True

    async def _stream(
        self,
        outbox: Outbox,
        receive: Receive,
        send: Send,
        expires_at_ms: int | None,
        direct: DirectWrite | None,
    ) -> None:
        outbox.push(retry_hint(self.retry_ms))
        loop = asyncio.get_running_loop()
        self._peer = peer_progress(receive, loop.time())
        if direct is None:
            self._start_writer(outbox, send)
        helpers = [
            asyncio.create_task(self._run_source(outbox)),
            asyncio.create_task(_listen(receive, outbox)),
        ]
        self._beat = self.registry.ticker(self.heartbeat_s).add(partial(self._heartbeat, outbox))
        watch = self.registry.ticker(self.send_timeout_s / 2)
        self._watchdog = watch.add(partial(self._watch, outbox))
        lifetime = (
            loop.call_later(self.lifetime_s, outbox.close, CloseReason.LIFETIME)
            if self.lifetime_s > 0
            else None
        )
        # A stream lives no longer than the credential it was opened with (a JWT, an API key
        # with an expiry): the client reconnects with a fresh one (a new cookie, say).
        expiry = (
            loop.call_later(
                max(0.0, expires_at_ms / 1000 - time.time()), outbox.close, CloseReason.REVOKED
            )
            if expires_at_ms is not None
            else None
        )
        try:
            reason = await outbox.closed()
            for task in helpers:
                task.cancel()
            if reason in (CloseReason.STALLED, CloseReason.DISCONNECTED):
                # Nobody reads: drop the buffer and leave the response unfinished (a stalled
                # connection was reset by the watchdog; otherwise uvicorn closes it).
                return
            outbox.start_writer()  # the last bytes go through ``send``, which may wait
            writer = self._writer
            assert writer is not None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(writer, SEND_TIMEOUT_S)  # flush what is buffered
                end = {"type": "http.response.body", "body": b"", "more_body": False}
                await asyncio.wait_for(send(end), SEND_TIMEOUT_S)
        finally:
            for timer in (self._beat, self._watchdog):
                if timer is not None:
                    timer.cancel()
            for limit in (lifetime, expiry):
                if limit is not None:
                    limit.cancel()
            tasks = [*helpers] if self._writer is None else [self._writer, *helpers]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _start_writer(self, outbox: Outbox, send: Send) -> None:
        self._writer = asyncio.create_task(self._write(outbox, send))

    async def _write(self, outbox: Outbox, send: Send) -> None:
        """Write whatever is buffered, one send per wake-up, until the outbox closes."""
        loop = asyncio.get_running_loop()
        while (chunk := await outbox.take()) is not None:
            self._sending_since = loop.time()
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            self._sending_since = None

    def _heartbeat(self, outbox: Outbox) -> bool:
        """A comment every period, busy or not: one tiny write per period is cheaper than
        tracking idleness per event. Returns whether to go on."""
        if outbox.reason is None:
            outbox.push(HEARTBEAT)
            return True
        return False

    def _watch(self, outbox: Outbox) -> bool:
        """Cut off a client whose socket has taken nothing for the send timeout. Returns
        whether to go on watching."""
        loop = asyncio.get_running_loop()
        now, peer = loop.time(), self._peer
        if peer is not None:
            stalled = peer.stalled(now, self.send_timeout_s)
        else:
            since = self._sending_since
            stalled = since is not None and now - since >= self.send_timeout_s
        if stalled:
            outbox.close(CloseReason.STALLED)
            if peer is not None:
                peer.abort()
            return False
        return outbox.reason is None

    async def _run_source(self, outbox: Outbox) -> None:
        try:
            if await self.source(outbox) is PARKED:
                return  # it goes on without this task (and ends when the outbox closes)
        except CommandError as e:
            outbox.push(error_event(e, tenant_of(self.request.scope)))
        except Exception:
            log.exception("event stream source failed")
        outbox.close(CloseReason.ENDED)


async def _listen(receive: Receive, outbox: Outbox) -> None:
    """Close the outbox when the client disconnects."""
    while (await receive())["type"] != "http.disconnect":
        pass
    outbox.close(CloseReason.DISCONNECTED)
