"""Writing event streams in rounds: the same bytes to many sockets, few system calls.

Measured on the target 2-core machine, one ``send`` on loopback costs ~20 µs of kernel time
whatever its size, and an ASGI ``send`` through a task per connection about as much again in
Python. 100 subscribers at 1,000 entries/s written one event at a time is 100,000 writes/s:
two cores' worth. So connections are not written per event but in rounds:

- a push marks its outbox dirty; one ``Flusher`` per app writes every dirty outbox in a round;
- a round starts at once when the loop is quiet, and otherwise no sooner than
  ``DUTY_FACTOR`` times the last round's cost after the last one started: under load, events
  gather between rounds (several per write) and the writing never takes more than about half
  the loop; when idle, an event goes out within the same loop iteration;
- in a round, a connection handed over to a ``DetachedStream`` (``xstreams serve``: hub.py)
  is written straight to its transport unless the transport paused writing; an idle
  connection served by uvicorn's httptools protocol is written directly too: the buffered
  events as one HTTP chunk on its transport, no task switch. Anything else (a connection
  uvicorn has paused because the client reads slowly, a busy writer, another ASGI server)
  goes through the connection's writer task and the ordinary ASGI ``send``, which waits for
  the socket: backpressure is never bypassed.

Writing to uvicorn's transport relies on its request cycle (``receive.__self__``): found only
for ``uvicorn.protocols.http.httptools_impl``, checked on every write (paused, disconnected,
response complete, chunked), and the response is always started and finished through ``send``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["DUTY_FACTOR", "DirectWrite", "Dirty", "Flusher", "direct_writer"]

DUTY_FACTOR = 2.0  # a round starts no sooner than twice the last round's cost after the last

DirectWrite = Callable[[bytes], bool]
"""Writes one HTTP chunk (framed: ``Flusher.chunk``) at once, or returns False when it must
go through ``send``."""


class Dirty(Protocol):
    """What a round needs of a connection's outbox (app/api/sse/outbox.py): to write what it
    buffered. Named here so the outbox imports the flusher and not the other way round."""

    def flush(self) -> None: ...


class Flusher:
    def __init__(self) -> None:
        self._dirty: dict[Dirty, None] = {}
        self._handle: asyncio.Handle | None = None
        self._next_at = 0.0
        self.rounds = 0
        self.direct_writes = 0  # writes that took the fast path (for tests and metrics)
        self._last: bytes = b""  # the last bytes framed, and their chunk
        self._last_chunk: bytes = b"0\r\n\r\n"

    def chunk(self, data: bytes) -> bytes:
        """``data`` as one HTTP chunk. A stream's event is one bytes object shared by all its
        subscribers, and a round writes it to each in turn: framed once, not per subscriber."""
        if data is not self._last:
            self._last, self._last_chunk = data, b"%x\r\n%s\r\n" % (len(data), data)
        return self._last_chunk

    def mark(self, outbox: Dirty) -> None:
        self._dirty[outbox] = None
        if self._handle is None:
            loop = asyncio.get_running_loop()
            if self._next_at <= loop.time():
                self._handle = loop.call_soon(self._round)
            else:
                self._handle = loop.call_at(self._next_at, self._round)

    def _round(self) -> None:
        self._handle = None
        loop = asyncio.get_running_loop()
        start = loop.time()
        dirty, self._dirty = self._dirty, {}
        for outbox in dirty:
            outbox.flush()
        self.rounds += 1
        self._next_at = start + DUTY_FACTOR * (loop.time() - start)


def direct_writer(receive: Any) -> DirectWrite | None:
    """The fast path to uvicorn's transport for this response, if it is there to take."""
    cycle = getattr(receive, "__self__", None)
    if type(cycle).__module__ != "uvicorn.protocols.http.httptools_impl":
        return None
    if not all(
        hasattr(cycle, a) for a in ("transport", "flow", "disconnected", "response_complete")
    ):
        return None

    def write(chunk: bytes) -> bool:
        c: Any = cycle
        if c.flow.write_paused or c.disconnected or c.response_complete or not c.chunked_encoding:
            return False
        c.transport.write(chunk)
        return True

    return write
