"""The runner's HTTP/1.1 client: one kept-alive connection per lane, on an asyncio Protocol.

Why not httpx: its request and response objects, httpcore's pool, locks and events and h11's
parser cost 0.4 to 0.6 ms of CPU per request here (bench/REPORT.md, "Webhook delivery"),
several times what the rest of a delivery costs. A lane sends one POST at a time and wants
only the answer's status and its ``Retry-After``, so this client writes the request in one
``write`` and parses the answer with ``httptools`` (llhttp, in C), the parser uvicorn uses.

The outbound rules (``outbound``) are unchanged: each request checks the URL's scheme and
host glob, then takes the address from the checked answers of the webhook's lanes (``DNS_CACHE_S``
old at most; on a miss the name is resolved and every address checked, ``checked_address``),
and goes over a connection to that very address; a kept connection to another address is
closed first. The ``Host`` header and the TLS server name stay the host name, and the
certificate is verified against it (the ``ssl`` context httpx would build, so the same
trust store). Proxies are not used and redirects not followed (a 3xx is an answer).

A kept connection that the receiver closed while idle is seen closed before the next request
(the Protocol hears the close) and replaced. If it closes after the request went out but
before any byte of the answer (a close racing the request), the request goes once more on a
new connection: as an HTTP client may with a request that carries an idempotency key (the
``webhook-id``, the same on every attempt, which the receiver deduplicates on), and what an
XNACK and a redelivery would do anyway, without charging the entry a failed attempt. No
pipelining: a lane has one request in flight, so a failure is always that request's.

An answer is read whole (so the connection serves the next request) up to
``MAX_ANSWER_BYTES`` of body; past that, or an answer without a length (read to the close),
the status stands and the connection is closed. The caller bounds the whole request with
its timeout; a request cut short (timeout, cancel) closes its connection, since an answer
arriving later must not be read as the next request's.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from typing import cast

import httptools
import httpx

from app.delivery.outbound import (
    DNS_CACHE_S,
    OutboundRules,
    Resolver,
    checked_address,
    is_literal,
    system_resolver,
)

__all__ = ["MAX_ANSWER_BYTES", "MAX_HEAD_BYTES", "Answer", "AnswerError", "Lane", "lanes_for"]

# A receiver's answer is its status: its body is read (so the connection can serve the next
# request) up to this much, and past it the connection is closed instead.
MAX_ANSWER_BYTES = 64 * 1024
MAX_HEAD_BYTES = 64 * 1024  # the status line and headers: more is a broken answer
KEEP_ALIVE_S = 4.0  # an idle connection older than this is not reused (servers drop at 5 s)

Cache = dict[tuple[str, int], tuple[float, str]]


class AnswerError(Exception):
    """The receiver's answer is not HTTP/1.1 this client reads (or is too large a head)."""


class _Stale(ConnectionError):
    """The connection closed before any byte of the answer."""


class Answer:
    """The status and the ``Retry-After`` header (None if absent) of one answer."""

    __slots__ = ("retry_after", "status")

    def __init__(self, status: int, retry_after: str | None) -> None:
        self.status, self.retry_after = status, retry_after


class _Connection(asyncio.Protocol):
    """One connection: feeds the answer to httptools and resolves ``waiter`` with it."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.waiter: asyncio.Future[Answer] | None = None
        self.closed = False
        self.idle_since = time.monotonic()
        self._got = 0  # bytes of the current answer
        self._body = 0  # of which the body's
        self._head_done = False
        self._status = 0
        self._retry_after: str | None = None

    # -- asyncio.Protocol -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        waiter = self.waiter
        if waiter is None or waiter.done():  # nothing asked: a broken server; drop it
            self.close()
            return
        self._got += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:  # 101: an answer, and the connection is over
            self._finish(keep=False)
        except httptools.HttpParserError as e:
            self._fail(AnswerError(f"not an HTTP/1.1 answer: {e}"))
        if waiter.done():
            return
        if not self._head_done:
            if self._got > MAX_HEAD_BYTES:
                self._fail(AnswerError(f"an answer's head over {MAX_HEAD_BYTES} bytes"))
        elif self._body > MAX_ANSWER_BYTES:
            self._finish(keep=False)  # the status stands; the rest is not read

    def eof_received(self) -> bool | None:
        return False  # close the transport: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        if self._head_done:  # an answer read to the close: its status stands
            self._finish(keep=False)
        elif self._got == 0:
            waiter.set_exception(_Stale("the connection closed before any answer"))
        else:
            self._fail(ConnectionError("the connection closed mid-answer"))

    # -- httptools callbacks ----------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        if len(name) == 11 and name.lower() == b"retry-after":
            self._retry_after = value.decode("latin-1")

    def on_body(self, body: bytes) -> None:
        self._body += len(body)

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200 and status != 101:
            return  # an interim answer (100 Continue): the real one follows
        self._status = status
        self._head_done = True

    def on_message_complete(self) -> None:
        if self._head_done:
            self._finish(keep=self.parser.should_keep_alive())

    # -- the request ------------------------------------------------------------------------

    async def exchange(self, data: bytes) -> Answer:
        """Send ``data`` (a whole request) and wait for the whole answer."""
        transport = self.transport
        if self.closed or transport is None:
            raise _Stale("the connection is closed")
        self._got = self._body = self._status = 0
        self._head_done, self._retry_after = False, None
        waiter: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self.waiter = waiter
        transport.write(data)
        try:
            return await waiter
        except BaseException:
            if not waiter.done() or waiter.cancelled():
                self.close()  # cut short: a late answer must not meet the next request
            raise
        finally:
            self.waiter = None
            self.idle_since = time.monotonic()

    def _finish(self, keep: bool) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(Answer(self._status, self._retry_after))
        if not keep:
            self.close()

    def _fail(self, error: Exception) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)
        self.close()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class Lane:
    """One in-flight slot of one webhook: POSTs to ``url`` one request at a time, over one
    kept-alive connection to the checked address (see the module's docstring)."""

    def __init__(
        self,
        rules: OutboundRules,
        url: str,
        resolver: Resolver = system_resolver,
        cache: Cache | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.rules, self.url, self.resolver = rules, url, resolver
        self.cache: Cache = {} if cache is None else cache
        u = httpx.URL(url)
        self._https = u.scheme == "https"
        self._tls = tls
        # The request line and Host header, the same for every request of the lane.
        host = u.raw_host.decode("ascii")
        if ":" in host:
            host = f"[{host}]"
        self._sni = u.raw_host.decode("ascii").lower().rstrip(".")
        authority = host if u.port is None else f"{host}:{u.port}"
        path = u.raw_path.decode("ascii") or "/"
        self._head = f"POST {path} HTTP/1.1\r\nhost: {authority}\r\n".encode("ascii")
        self._target: tuple[str, int] | None = None  # (host, port) once check_url passed
        self._conn: _Connection | None = None

    async def post(self, body: bytes, headers: dict[str, str]) -> Answer:
        """POST ``body`` with ``headers`` (no CR or LF in them: the caller's own values);
        ``Refused`` if the rules refuse the destination, ``OSError`` if it cannot be reached,
        ``AnswerError`` for an answer that is not HTTP/1.1."""
        if self._target is None:  # the rules and the URL are fixed: so is the answer
            self._target = self.rules.check_url(self.url)
        host, port = self._target
        hit = self.cache.get((host, port))
        if hit is not None and hit[0] > time.monotonic():
            address = hit[1]
        else:  # an IP literal's check never changes: it is kept for good
            address = await checked_address(self.rules, host, port, self.resolver)
            until = float("inf") if is_literal(host) else time.monotonic() + DNS_CACHE_S
            self.cache[(host, port)] = (until, address)
        lines = "".join([f"{k}: {v}\r\n" for k, v in headers.items()])
        data = b"".join(
            (self._head, f"{lines}content-length: {len(body)}\r\n\r\n".encode("latin-1"), body)
        )
        conn = self._conn
        if (
            conn is None
            or conn.closed
            or conn.address != address
            or time.monotonic() - conn.idle_since > KEEP_ALIVE_S
        ):
            conn = await self._connect(address, port)
            return await conn.exchange(data)
        try:
            return await conn.exchange(data)
        except _Stale:  # a kept connection closed under the request: once, on a new one
            conn = await self._connect(address, port)
            return await conn.exchange(data)

    async def _connect(self, address: str, port: int) -> _Connection:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        loop = asyncio.get_running_loop()
        conn = _Connection(address)
        if self._https:
            if self._tls is None:
                self._tls = tls_context()
            await loop.create_connection(
                lambda: conn, address, port, ssl=self._tls, server_hostname=self._sni
            )
        else:
            await loop.create_connection(lambda: conn, address, port)
        self._conn = conn
        return conn

    async def aclose(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def tls_context(verify: bool | ssl.SSLContext = True) -> ssl.SSLContext:
    """The TLS context httpx would use (its trust store), HTTP/1.1 only."""
    if isinstance(verify, ssl.SSLContext):
        return verify
    context = httpx.create_ssl_context(verify=verify)
    context.set_alpn_protocols(["http/1.1"])
    return context


def lanes_for(
    rules: OutboundRules,
    url: str,
    lanes: int,
    resolver: Resolver = system_resolver,
    verify: bool | ssl.SSLContext = True,
) -> list[Lane]:
    """One webhook's lanes: ``lanes`` of them (its ``concurrency``), one kept-alive connection
    each, one cache of checked DNS answers and one TLS context for them all. ``verify``: TLS
    verification as httpx takes it (tests pass an ``ssl.SSLContext``)."""
    cache: Cache = {}
    tls = tls_context(verify) if url.lower().startswith("https:") else None
    return [Lane(rules, url, resolver, cache, tls) for _ in range(lanes)]
