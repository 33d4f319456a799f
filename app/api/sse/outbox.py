"""What waits to be written to one event-stream connection: bounded, and closed once.

Producers (a stream's fan-out, a group delivery loop, timers) put ready-made bytes here
without awaiting; the connection's writer ``take``s everything buffered and writes it in one
send. Live entries are ``offer``ed: past ``limit_bytes`` the offer is refused and the
subscriber falls back to reading from its own cursor, so a burst or a slow socket never makes
the buffer grow without bound. Readers of history wait for ``drained``, so they read at the
speed of the socket. A socket that takes nothing at all for the send timeout is cut off
(``STALLED``, see ``sse_response``); the client resumes by ``Last-Event-ID``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from enum import StrEnum

from app.api.sse.flush import DirectWrite, Flusher

__all__ = ["PARKED", "CloseReason", "Outbox", "Parked"]


class Parked:
    """What a source returns when the connection goes on without its task: it arranged to be
    woken by something else (a live tail's subscriber: by the tail) and to let go of what it
    holds when the outbox closes (``Outbox.when_closed``). A task per idle subscriber is
    memory held for nothing."""

    __slots__ = ()


PARKED = Parked()


class CloseReason(StrEnum):
    """Why a connection ends; decided once, by whoever closes first."""

    STALLED = "stalled"  # the client read nothing for the send timeout
    LIFETIME = "lifetime"  # the maximum connection lifetime passed; the client reconnects
    SHUTDOWN = "shutdown"  # the server is stopping
    DISCONNECTED = "disconnected"  # the client went away
    ENDED = "ended"  # the source has nothing more to send (group destroyed, error)
    REVOKED = "revoked"  # the credential was revoked or expired; a reconnect needs a new one


class Outbox:
    __slots__ = (
        "_chunks",
        "_closed",
        "_direct",
        "_flusher",
        "_idle",
        "_size",
        "_wake",
        "_writer",
        "_writing",
        "limit",
        "reason",
    )

    def __init__(
        self, limit_bytes: int, flusher: Flusher, direct: DirectWrite | None = None
    ) -> None:
        self.limit = limit_bytes
        self._flusher = flusher
        self._direct = direct
        self._writer: Callable[[], None] | None = None
        self.reason: CloseReason | None = None
        self._chunks: list[bytes] = []
        self._size = 0
        self._writing = False
        self._wake: asyncio.Future[None] | None = None  # the writer, waiting for bytes
        self._idle: asyncio.Future[None] | None = None  # a history reader, waiting for drain
        self._closed: asyncio.Future[CloseReason] = asyncio.get_running_loop().create_future()

    @property
    def buffered(self) -> int:
        return self._size

    def offer(self, chunk: bytes) -> bool:
        """Queue a live event unless that would pass the bound (or the connection is over)."""
        if self.reason is not None or self._size + len(chunk) > self.limit:
            return False
        self.push(chunk)
        return True

    @property
    def writing(self) -> bool:
        """Whether the writer is in the middle of a send."""
        return self._writing

    def push(self, chunk: bytes) -> None:
        """Queue bytes for the writer (bounded by whoever pushes: one batch, one comment)."""
        if self.reason is not None:
            return
        self._size += len(chunk)
        self._chunks.append(chunk)
        if len(self._chunks) == 1:
            self._flusher.mark(self)

    def flush(self) -> None:
        """Called by the flusher's round: write directly if the connection allows it, else
        hand the bytes to the writer task (which may wait for the socket)."""
        if self._writing or not self._chunks or self.reason is not None:
            return  # a busy writer takes them itself when its send returns
        chunks = self._chunks
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        flusher = self._flusher
        if self._direct is not None and self._direct(flusher.chunk(data)):
            flusher.direct_writes += 1
            self._chunks, self._size = [], 0
            if self._idle is not None:
                self._notify_idle()
            return
        self._chunks = [data]
        self.start_writer()
        wake = self._wake
        if wake is not None:
            self._wake = None
            if not wake.done():
                wake.set_result(None)

    def write_directly(self, direct: DirectWrite) -> None:
        """Write through ``direct`` from now on (an event stream handed its transport): no
        writer task, whatever was planned for one (it would hold the request)."""
        self._direct = direct
        self._writer = None

    def rest(self) -> bytes:
        """What is still buffered, taken out (the end of a connection written directly)."""
        chunks, self._chunks, self._size = self._chunks, [], 0
        return b"".join(chunks)

    def when_closed(self, callback: Callable[[asyncio.Future[CloseReason]], object]) -> None:
        """Call ``callback`` (with the closed future) soon after the connection closes."""
        self._closed.add_done_callback(callback)

    def writer_on_demand(self, start: Callable[[], None]) -> None:
        """``start`` starts the connection's writer task, called the first time a write cannot
        go direct: most connections never need one, and a task per subscriber is memory held
        for nothing."""
        self._writer = start

    def start_writer(self) -> None:
        """Make sure a writer task takes what is buffered (started once, when first needed)."""
        writer = self._writer
        if writer is not None:
            self._writer = None
            writer()

    async def take(self) -> bytes | None:
        """Everything buffered, joined; waits while empty; None once closed and empty."""
        self._writing = False
        while not self._chunks:
            self._notify_idle()
            if self.reason is not None:
                return None
            self._wake = asyncio.get_running_loop().create_future()
            await self._wake
        chunks, self._chunks, self._size = self._chunks, [], 0
        self._writing = True
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def drained(self) -> None:
        """Wait until everything pushed so far has been written (or the connection closed)."""
        while (self._chunks or self._writing) and self.reason is None:
            if self._idle is None:
                self._idle = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._idle)

    def _notify_idle(self) -> None:
        idle = self._idle
        if idle is not None:
            self._idle = None
            if not idle.done():
                idle.set_result(None)

    def close(self, reason: CloseReason) -> None:
        """End the connection (the first reason given wins); the writer flushes and stops."""
        if self.reason is not None:
            return
        self.reason = reason
        if reason in (CloseReason.STALLED, CloseReason.DISCONNECTED):
            self._chunks, self._size = [], 0  # nobody will read them
        wake, self._wake = self._wake, None
        if wake is not None and not wake.done():
            wake.set_result(None)
        self._notify_idle()
        self._closed.set_result(reason)

    async def closed(self) -> CloseReason:
        return await asyncio.shield(self._closed)
