"""The HTTP connections ``xstreams serve`` holds: read deadlines and a cap on their number.

What uvicorn 0.54 offers (read in its source), and why each guarantee lives where it does:

- ``timeout_keep_alive`` closes a connection idle *between* requests. It is armed only once a
  response has completed and disarmed by any byte: nothing bounds a connection that never sends
  its first request, or the rest of a head once its first byte came. Used as is, for keep-alive
  (``keepalive_timeout_ms``).
- ``limit_concurrency`` answers 503 once open connections (or running requests) reach it, but
  checks that on every request of every connection: a crowd of half-open connections past it
  makes established clients get 503 as well, and is itself accepted and held for ever. Not used.
- ``h11_max_incomplete_event_size`` bounds the size of a head, not its time (and h11 only;
  httptools has its own size limit). No header or body timeout exists.
- An ASGI middleware cannot supply them: the app is called only once a head is complete, and
  after the app has answered (a 401 before reading the body, say) uvicorn keeps reading a
  trickled body with nobody waiting for it.

So the protocol, which sees the bytes arrive, keeps two timers (a subclass of uvicorn's
httptools protocol, the one ``serve`` runs):

- head: from the connection's opening (first request) or a request's first byte (later ones)
  to the end of its head. When it passes: 408 if any of the request came (silence otherwise),
  and the connection is closed.
- body: from the end of the head to the end of the body, one deadline for the whole body (as
  Go's ``http.Server.ReadTimeout``), so a trickle of a byte a second cannot stretch it. When it
  passes: 408 unless a response has started (the app's ``receive`` sees the client go), and
  close.

A long poll or an event stream has a complete request and nothing more to read: neither timer
runs while its response takes its time. A timer that passes while the server itself has paused
reading (a pipelined request queued behind another, a body the app has not consumed yet) starts
again instead: the client is not the one holding things up.

The cap is decided once, when a connection opens: beyond ``max_connections`` open connections
the new one is over the cap, and its request gets uvicorn's own 503 (``limit_concurrency`` set
to 0 for that connection alone) with ``connection: close``; established connections are not
touched. A connection past the cap holds a file descriptor until its head arrives or times out,
so ``fit_open_files`` raises the soft open-file limit to the hard one at start (as the Go runtime
does) and lowers the cap, with a warning, when even that cannot hold it plus a reserve.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from dataclasses import dataclass
from typing import Any, ClassVar

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from app.api.errors import error_body

__all__ = ["RESERVED_FILES", "HttpProtocol", "Limits", "fit_open_files", "protocol_class"]

log = logging.getLogger("xstreams.http")

# File descriptors kept for everything but client connections: the listening socket, the event
# loop, the database and its journal, logs, a Redis connection pool.
RESERVED_FILES = 256


@dataclass(frozen=True, kw_only=True)
class Limits:
    header_timeout_ms: int
    body_timeout_ms: int
    keepalive_timeout_ms: int
    max_connections: int


def protocol_class(limits: Limits) -> type[HttpProtocol]:
    """uvicorn's ``http`` protocol, bound to ``limits`` (uvicorn builds it from the class)."""

    class Bound(HttpProtocol):
        pass

    Bound.limits = limits
    return Bound


class HttpProtocol(HttpToolsProtocol):
    limits: ClassVar[Limits]

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        # uvicorn annotates it as whole seconds but hands it to call_later, which takes any.
        self.timeout_keep_alive = self.limits.keepalive_timeout_ms / 1000  # type: ignore[assignment]
        # Deadlines, kept lazily: a parser callback only notes when a head or body began (a
        # float), and one timer per connection, armed when none is, checks them when it fires
        # and re-arms for whatever is still pending. Arming and cancelling a timer for every
        # request head cost ~3 % of a one-entry XADD.
        self._head_since: float | None = None  # when the pending head began (None: none)
        self._body_since: float | None = None  # when the pending body began
        self._head_begun = False  # some of the current request's head has arrived
        self._looked = False  # the head's deadline passed once with nothing read
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(OneWrite(transport, self.loop))  # type: ignore[arg-type]
        over_cap = len(self.connections) > self.limits.max_connections
        self.limit_concurrency = 0 if over_cap else None
        self._head_since = self.loop.time()  # the first request's head must come in time
        self._arm(self.limits.header_timeout_ms / 1000)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._head_since = self._body_since = None
        super().connection_lost(exc)

    # Parser callbacks

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_begun = True
        if self._head_since is None:
            self._head_since = self.loop.time()
            if self._timer is None:
                self._arm(self.limits.header_timeout_ms / 1000)

    def on_headers_complete(self) -> None:
        self._head_since = None
        self._head_begun = False
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and cycle.scope is self.scope and cycle.more_body:
            self._body_since = self.loop.time()
            if self._timer is None:
                self._arm(self.limits.body_timeout_ms / 1000)

    def on_message_complete(self) -> None:
        self._body_since = None
        super().on_message_complete()

    # The timer

    def _arm(self, delay_s: float) -> None:
        self._timer = self.loop.call_later(delay_s, self._check)

    def _check(self) -> None:
        """A deadline may have passed: act on it, or wait for the next pending one."""
        self._timer = None
        if self.transport.is_closing():
            return
        now = self.loop.time()
        head_s = self.limits.header_timeout_ms / 1000
        body_s = self.limits.body_timeout_ms / 1000
        if self.flow.read_paused:
            # The server stopped reading, not the client: its clocks start again.
            if self._head_since is not None:
                self._head_since = now
            if self._body_since is not None:
                self._body_since = now
        if self._head_since is not None and now - self._head_since >= head_s:
            if not self._head_begun and not self._looked:
                # Nothing read yet, but a stalled loop may hold bytes it has not read: one
                # more turn (a timer runs after that turn's reads) before calling it silence.
                self._looked = True
                self._timer = self.loop.call_later(0, self._check)
                return
            self._head_timed_out()
            return
        if self._body_since is not None and now - self._body_since >= body_s:
            cycle = self.cycle
            if cycle is not None and cycle.more_body:
                self._body_timed_out(cycle)
                return
            self._body_since = None  # that body is done with
        pending = [
            since + limit - now
            for since, limit in ((self._head_since, head_s), (self._body_since, body_s))
            if since is not None
        ]
        if pending:
            self._arm(min(pending))

    def _head_timed_out(self) -> None:
        idle = self.cycle is None or self.cycle.response_complete
        if self._head_begun and idle:
            log.info("closing %s: request head not received in time", _peer(self.client))
            self._reply_408("head", self.limits.header_timeout_ms, "/")
        self.transport.close()

    def _body_timed_out(self, cycle: Any) -> None:
        log.info("closing %s: request body not received in time", _peer(self.client))
        if not cycle.response_started:
            cycle.disconnected = True  # the app's receive answers http.disconnect, sends drop
            cycle.message_event.set()
            self._reply_408("body", self.limits.body_timeout_ms, self.scope["path"])
        self.transport.close()

    # Handing a started response over

    def _detach_response(
        self, cycle: Any, protocol: Any
    ) -> tuple[Any, bytes, bool, set[Any]] | None:
        """Give this connection, whose response ``cycle`` has started, to ``protocol`` (an
        event stream's record, which writes the rest of the chunked body itself): its
        transport, the response head still held back (``OneWrite``) and whether writing is
        paused; None when it cannot be handed over (the caller goes on through ``send``).

        Found by duck typing through the ASGI ``receive`` (``app/api/sse/hub.py``), so the API
        does not import the CLI. The request ends for uvicorn as if its response were complete,
        so its task, the request cycle, this protocol and its parser are released; ``protocol``
        takes this one's place among the server's connections (the connection cap and the
        graceful shutdown, which calls its ``shutdown``, count it), and receives the
        transport's callbacks (``connection_lost``, ``pause_writing``...) from now on. The
        connection is never an HTTP connection again: the record closes it when it ends."""
        transport = self.transport
        raw = getattr(transport, "_transport", None)
        if (
            cycle is not self.cycle
            or not cycle.response_started
            or cycle.response_complete
            or cycle.disconnected
            or not cycle.chunked_encoding
            or cycle.scope["method"] == "HEAD"
            or self.pipeline
            or not isinstance(transport, OneWrite)
            or not transport.holds_head()
            or not hasattr(raw, "set_protocol")
            or transport.is_closing()
        ):
            return None
        # The connection ends with the stream (the record closes it), so the head says so: a
        # client must not put it back in its pool and send its next request on it.
        head = _closing(transport.take_head())
        paused = self.flow.write_paused
        cycle.response_complete = True  # uvicorn's task ends quietly; nothing more goes there
        cycle.on_response = _nothing
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.timeout_keep_alive_task is not None:
            self.timeout_keep_alive_task.cancel()
            self.timeout_keep_alive_task = None
        self.flow.resume_reading()  # the record must see the client leave
        self.connections.discard(self)
        self.connections.add(protocol)
        raw.set_protocol(protocol)
        self.cycle = None
        self.scope = None
        self.headers = None
        return raw, head, paused, self.connections

    def _reply_408(self, part: str, timeout_ms: int, path: str) -> None:
        """408 in the shape of the surface addressed (an unfinished head has no path yet:
        the command endpoint's shape)."""
        text = f"ERR request {part} not received within {timeout_ms} ms"
        media, body = error_body(path, 408, text)
        head = [b"HTTP/1.1 408 Request Timeout\r\n"]
        for name, value in self.server_state.default_headers:
            head.append(b"%s: %s\r\n" % (name, value))
        head.append(b"content-type: %s\r\ncontent-length: %d\r\n" % (media.encode(), len(body)))
        head.append(b"connection: close\r\n\r\n")
        self.transport.write(b"".join(head) + body)


class OneWrite:
    """A connection's transport on which a response head waits for its body.

    uvicorn writes a response's head and its body with a write each, so every response cost
    two system calls (bench/profiles/: 8 to 25 % of a request). Here the head is held and
    goes out with the first write after it, in one call; a head that no body follows at
    once (an event stream, a 204) goes out at the end of the loop's turn, or before the
    connection closes. Everything else is the transport's own."""

    __slots__ = ("_head", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._head: bytes | None = None

    def write(self, data: bytes) -> None:
        head = self._head
        if head is not None:
            self._head = None
            self._transport.writelines((head, data))
        elif data.startswith(b"HTTP/") and data.endswith(b"\r\n\r\n"):
            self._head = data
            self._loop.call_soon(self._flush)
        else:
            self._transport.write(data)

    def _flush(self) -> None:
        head = self._head
        if head is not None:
            self._head = None
            self._transport.write(head)

    def holds_head(self) -> bool:
        """Whether a response head is held back, not yet written."""
        return self._head is not None

    def take_head(self) -> bytes:
        """The head held back, if any, for whoever writes next on the raw transport."""
        head, self._head = self._head, None
        return head or b""

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def abort(self) -> None:
        self._head = None
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def _closing(head: bytes) -> bytes:
    """A response head with ``connection: close`` (unless it names the connection already)."""
    if b"\r\nconnection:" in head.lower() or not head.endswith(b"\r\n\r\n"):
        return head
    return head[:-2] + b"connection: close\r\n\r\n"


def _nothing() -> None:
    pass


def _peer(client: tuple[str, int] | None) -> str:
    return f"{client[0]}:{client[1]}" if client else "a client"


def fit_open_files(max_connections: int) -> int:
    """Raise the soft open-file limit to the hard one; the connections that then fit beside
    ``RESERVED_FILES`` (``max_connections`` when they all do)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as e:
            log.warning("could not raise the open-file limit from %d to %d: %s", soft, hard, e)
    if soft == resource.RLIM_INFINITY or soft >= max_connections + RESERVED_FILES:
        return max_connections
    fits = max(soft - RESERVED_FILES, 1)
    log.warning(
        "max_connections lowered from %d to %d: the open-file limit is %d "
        "(raise it with `ulimit -n` or LimitNOFILE=)",
        max_connections,
        fits,
        soft,
    )
    return fits
