"""An event stream after its handshake: a small record beside its transport.

Held for the life of a stream, the ASGI request that opened it costs ~30 KB per subscriber
(tracemalloc of 2,000: FastAPI's solved dependencies and exit stacks, Starlette's request,
uvicorn's protocol, parser and request cycle, the task running them, a task listening for the
disconnect), for a connection that only ever receives the bytes its streams' tails hand out.
So once the response has started (admission, access checks, CORS and the status and headers
all went through the app as for any request), ``xstreams serve``'s HTTP protocol hands the
connection over (``HttpProtocol._detach_response`` in app/server/connections.py): this record
becomes the transport's protocol and the ASGI call returns, which releases all of that.

What the record holds: the transport, the connection's ``Outbox`` (what waits to be written;
its ``Subscriber`` holds the stream positions, which ``Last-Event-ID`` resumes from), the
source task that feeds it (a tail's subscriber, or a group's XREADGROUP loop), its places in
the heartbeat and watchdog tickers (each keeps its own phase), and what ends it (lifetime and
credential-expiry timers, the credential whose connection cap it holds). The hub is the
registry's ``Flusher``: its rounds frame each event once (``Flusher.chunk``) and write it to
every dirty outbox, here straight to the transport.

Behaviour is the ASGI path's (``EventStream._stream``), event for event: the transport's
``pause_writing`` holds the bytes in the outbox (a live subscriber falls behind past its bound,
a history reader waits for ``drained``) and ``resume_writing`` writes them; ``connection_lost``
is the client going away; the watchdog cuts off a peer that takes nothing for the send timeout
(with a reset); the server's graceful shutdown calls ``shutdown``. A stream that ends for any
other reason writes what is buffered and the chunked body's end, then closes the connection
(it is no HTTP connection any more: a client opens a new one), abandoned after
``SEND_TIMEOUT_S`` if the peer does not take it.

Another server (or uvicorn without ``xstreams serve``'s protocol, or a HEAD request) cannot
hand the connection over: the response then stays on the ASGI path.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from functools import partial
from typing import TYPE_CHECKING, Any

from app.access import Principal
from app.api.sse.outbox import PARKED, CloseReason, Outbox, Parked
from app.api.sse.socket import PeerProgress, transport_progress
from app.api.sse.ticker import Tick
from app.api.sse.wire import HEARTBEAT, error_event
from app.engine.errors import CommandError

if TYPE_CHECKING:
    from app.api.sse.registry import SseRegistry

__all__ = ["SEND_TIMEOUT_S", "Detach", "DetachedStream", "Source", "detacher", "frame"]

log = logging.getLogger("xstreams.sse")

SEND_TIMEOUT_S = 2.0  # the last bytes' time to leave, on either path

Source = Callable[[Outbox], Coroutine[Any, Any, Parked | None]]
"""Pushes a connection's events into its outbox; returning ends the stream, unless it returns
``PARKED`` (it goes on without a task)."""

Detach = Callable[["DetachedStream"], "tuple[Any, bytes, bool, set[Any]] | None"]
"""Hands the connection to the record: (transport, held head, writing paused, the server's
set of connections), or None when it cannot."""


def detacher(receive: Any) -> Detach | None:
    """The protocol's ``_detach_response`` for this request, if its server offers one.

    uvicorn's ``receive`` is a method of the request cycle, whose ``on_response`` is a method
    of the connection's protocol: duck-typed, so the API never imports the CLI."""
    cycle = getattr(receive, "__self__", None)
    protocol = getattr(getattr(cycle, "on_response", None), "__self__", None)
    detach = getattr(protocol, "_detach_response", None)
    if detach is None:
        return None
    return partial(detach, cycle)


def frame(data: bytes) -> bytes:
    """``data`` as one HTTP chunk."""
    return b"%x\r\n%s\r\n" % (len(data), data)


class DetachedStream:
    """One event stream's connection, served by the transport's callbacks (an asyncio
    protocol) instead of a request."""

    __slots__ = (
        "_connections",
        "_paused_since",
        "_peer",
        "_source",
        "_ticks",
        "_timers",
        "outbox",
        "principal",
        "registry",
        "send_timeout_s",
        "transport",
    )

    def __init__(
        self, outbox: Outbox, registry: SseRegistry, principal: Principal, send_timeout_s: float
    ) -> None:
        self.outbox = outbox
        self.registry = registry
        self.principal = principal
        self.send_timeout_s = send_timeout_s
        self.transport: Any = None
        self._connections: set[Any] = set()
        self._paused_since: float | None = None  # loop time writing was paused, if it is
        self._peer: PeerProgress | None = None
        self._source: asyncio.Task[Parked | None] | None = None
        self._ticks: tuple[Tick, ...] = ()
        self._timers: tuple[asyncio.TimerHandle, ...] = ()

    def attach(self, detach: Detach) -> bytes | None:
        """Take the connection over; the response head still to write, None if refused."""
        got = detach(self)
        if got is None:
            return None
        self.transport, head, paused, self._connections = got
        if paused:
            self._paused_since = asyncio.get_running_loop().time()
        self.outbox.write_directly(self.write)
        return head

    def start(
        self,
        head: bytes,
        first: bytes,
        source: Source,
        heartbeat_s: float,
        lifetime_s: float,
        expires_at_ms: int | None,
    ) -> None:
        """Write the head and ``first`` (the retry hint: EventSource opens at once), then
        run: the source, the heartbeat and watchdog ticks, the lifetime and expiry."""
        loop = asyncio.get_running_loop()
        outbox, registry = self.outbox, self.registry
        self.transport.write(head + frame(first))
        self._peer = transport_progress(self.transport, loop.time())
        self._source = task = asyncio.create_task(source(outbox))
        task.add_done_callback(self._source_ended)
        self._ticks = (
            registry.ticker(heartbeat_s).add(self._heartbeat),
            registry.ticker(self.send_timeout_s / 2).add(self._watch),
        )
        timers = []
        if lifetime_s > 0:
            timers.append(loop.call_later(lifetime_s, outbox.close, CloseReason.LIFETIME))
        if expires_at_ms is not None:
            # A stream lives no longer than the credential it was opened with.
            delay = max(0.0, expires_at_ms / 1000 - time.time())
            timers.append(loop.call_later(delay, outbox.close, CloseReason.REVOKED))
        self._timers = tuple(timers)
        outbox.when_closed(self._end)

    # Writing (the flusher's rounds call ``write`` through the outbox)

    def write(self, chunk: bytes) -> bool:
        """Write one framed chunk now, or False while the transport's buffer is full."""
        if self._paused_since is not None:
            return False
        self.transport.write(chunk)
        return True

    def _heartbeat(self) -> bool:
        if self.outbox.reason is None:
            self.outbox.push(HEARTBEAT)
            return True
        return False

    def _watch(self) -> bool:
        """Cut off a peer that took nothing for the send timeout (``EventStream._watch``)."""
        outbox = self.outbox
        if outbox.reason is not None:
            return False
        now = asyncio.get_running_loop().time()
        peer = self._peer
        if peer is not None:
            stalled = peer.stalled(now, self.send_timeout_s)
        else:
            since = self._paused_since
            stalled = since is not None and now - since >= self.send_timeout_s
        if not stalled:
            return True
        outbox.close(CloseReason.STALLED)
        if peer is not None:
            peer.abort()
        else:
            self.transport.abort()
        return False

    def _source_ended(self, task: asyncio.Task[Parked | None]) -> None:
        self._source = None
        if task.cancelled():
            return
        e = task.exception()
        if e is None and task.result() is PARKED:
            return  # live without a task: its tails feed it
        if isinstance(e, CommandError):
            self.outbox.push(error_event(e, self.principal.tenant))
        elif e is not None:
            log.error("event stream source failed", exc_info=e)
        self.outbox.close(CloseReason.ENDED)

    def _end(self, closed: asyncio.Future[CloseReason]) -> None:
        """The stream is over: let go of everything, and finish the connection."""
        reason = closed.result()
        for tick in self._ticks:
            tick.cancel()
        for timer in self._timers:
            timer.cancel()
        if self._source is not None:
            self._source.cancel()
        self.registry.release(self.outbox, self.principal)
        transport = self.transport
        if reason is CloseReason.DISCONNECTED or reason is CloseReason.STALLED:
            # Nobody reads: the buffer is dropped (a stalled peer was reset already).
            transport.close()
            return
        rest = self.outbox.rest()
        transport.write((frame(rest) if rest else b"") + b"0\r\n\r\n")
        transport.close()  # once the buffer has left
        asyncio.get_running_loop().call_later(SEND_TIMEOUT_S, transport.abort)

    # The transport's callbacks (asyncio.Protocol)

    def connection_lost(self, exc: Exception | None) -> None:
        self._connections.discard(self)
        self.outbox.close(CloseReason.DISCONNECTED)

    def pause_writing(self) -> None:
        self._paused_since = asyncio.get_running_loop().time()

    def resume_writing(self) -> None:
        self._paused_since = None
        if self.outbox.buffered:
            self.registry.flusher.mark(self.outbox)

    def data_received(self, data: bytes) -> None:
        """A client has nothing more to say on an event stream: ignored, as uvicorn's
        protocol would hold it unread."""

    def eof_received(self) -> bool:
        return False  # the client is done: the transport closes, ``connection_lost`` follows

    def shutdown(self) -> None:
        """The server stops gracefully: end cleanly, so the client resumes elsewhere."""
        self.outbox.close(CloseReason.SHUTDOWN)
