"""Auto-pipelining: the single commands of concurrent requests share one connection per node.

redis-py's per-command path (pool, retry wrapper, observability hooks, then a write and a
read system call per command) was about 29 % of a worker's samples on REST XADD. Here a
command is packed as RESP and queued; whatever was queued during one turn of the loop goes
out in one write, and replies, read as they arrive and parsed by hiredis, resolve the
waiters in the order their commands were sent.

Only commands that answer at once use it: a blocking read holds a connection of its own
(blocking.py) and a sequence that must stay together (MULTI ... EXEC, a write then WAIT)
takes a pooled connection (``Router._on_connection``).

What a caller sees is what redis-py's path gave (routing.py turns it into the backend's
errors): an error reply is the exception redis-py's parser makes of it (raised when it is
the whole reply, kept in place inside an array); no reply within ``timeout`` is redis-py's
``TimeoutError``; a connection that fails or closes is its ``ConnectionError``. On either,
the connection is closed and every command waiting on it fails, so a late reply never
reaches another waiter; the next command connects again. A cancelled caller's reply is read
and dropped in its turn, so the connection stays in step.
"""

from __future__ import annotations

import asyncio
import collections
from typing import Any, cast

import hiredis
from redis._parsers.base import BaseParser
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import InvalidResponse, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from app.backends.redis.parse import Arg, Raw

# redis-py's own texts, so a 503's detail reads as it did.
CLOSED = "Connection closed by server."
# Connection settings that ask for more than the multiplexer does (it sends AUTH and
# SELECT, speaks RESP2 and leaves replies as bytes): such a node keeps redis-py's path.
BEYOND = ("credential_provider", "client_name", "decode_responses", "ssl")
_MORE = object()  # hiredis: no whole reply buffered yet


def pack(args: tuple[Arg, ...] | list[Arg]) -> bytes:
    """One command as a RESP array of bulk strings, as redis-py packs it: text as UTF-8,
    numbers in decimal, a first argument with spaces ("CONFIG GET") split into words."""
    first = args[0]
    if isinstance(first, str) and " " in first:
        args = [*first.split(), *args[1:]]
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, bytes):
            b = a
        elif isinstance(a, str):
            b = a.encode()
        elif isinstance(a, int) and not isinstance(a, bool):
            b = b"%d" % a
        else:
            raise TypeError(f"cannot send {type(a).__name__} to Redis")
        out.append(b"$%d\r\n%b\r\n" % (len(b), b))
    return b"".join(out)


class Pipe(asyncio.Protocol):
    """One connection: commands written in one batch per loop turn, replies matched in order."""

    def __init__(self, name: str, timeout: float) -> None:
        self.name = name
        self.timeout = timeout
        self.error: Exception | None = None  # why it can no longer be used
        self._loop = asyncio.get_running_loop()
        self._reader = hiredis.Reader(
            protocolError=InvalidResponse,
            replyError=BaseParser.parse_error,
            notEnoughData=_MORE,
        )
        self._transport: asyncio.Transport | None = None
        self._out: list[bytes] = []
        # (waiter, deadline), in the order sent
        self._waiting: collections.deque[tuple[asyncio.Future[Raw], float]] = collections.deque()
        self._timer: asyncio.TimerHandle | None = None

    # --- asyncio.Protocol ----------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport instances, but have its methods
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        reader = self._reader
        reader.feed(data)
        waiting = self._waiting
        while True:
            try:
                reply = reader.gets()
            except InvalidResponse as e:
                self.fail(RedisConnectionError(f"Protocol error from {self.name}: {e}"))
                return
            if reply is _MORE:
                return
            if not waiting:
                self.fail(RedisConnectionError(f"a reply nobody waited for from {self.name}"))
                return
            waiter = waiting.popleft()[0]
            if waiter.done():  # its caller was cancelled: the reply is dropped in its turn
                continue
            if isinstance(reply, ResponseError | RedisConnectionError):
                waiter.set_exception(reply)
            elif isinstance(reply, list) and reply and isinstance(reply[0], RedisConnectionError):
                waiter.set_exception(reply[0])
            else:
                waiter.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        detail = f"Error while reading from {self.name} : {exc.args}" if exc else CLOSED
        self.fail(RedisConnectionError(detail))

    # --- sending -------------------------------------------------------------------------
    def send(self, packed: bytes) -> asyncio.Future[Raw]:
        """The reply to the command ``packed``, written with the others of this loop turn."""
        if self.error is not None:
            raise type(self.error)(*self.error.args)
        loop = self._loop
        if not self._out:
            loop.call_soon(self._flush)
        self._out.append(packed)
        waiter: asyncio.Future[Raw] = loop.create_future()
        deadline = loop.time() + self.timeout
        self._waiting.append((waiter, deadline))
        if self._timer is None:
            self._timer = loop.call_at(deadline, self._check)
        return waiter

    def _flush(self) -> None:
        if self._transport is None or self.error is not None:
            return
        data = b"".join(self._out) if len(self._out) > 1 else self._out[0]
        self._out.clear()
        self._transport.write(data)

    def _check(self) -> None:
        """The oldest command past its deadline times the connection out (its reply may
        still come: the connection is closed so it reaches no one); else check again at
        the oldest one's deadline."""
        self._timer = None
        if not self._waiting:
            return
        deadline = self._waiting[0][1]
        if deadline <= self._loop.time():
            self.fail(RedisTimeoutError(f"Timeout reading from {self.name}"))
        else:
            self._timer = self._loop.call_at(deadline, self._check)

    def fail(self, error: Exception) -> None:
        """Close for good: every waiter gets ``error`` (each its own copy)."""
        if self.error is None:
            self.error = error
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._out.clear()
        waiting, self._waiting = self._waiting, collections.deque()
        for waiter, _ in waiting:
            if not waiter.done():
                waiter.set_exception(type(error)(*error.args))
        if self._transport is not None:
            self._transport.abort()
            self._transport = None

    @property
    def usable(self) -> bool:
        return self.error is None and self._transport is not None


class Mux:
    """The multiplexed connection to one Redis node: made on first use (and again after it
    failed), shared by every caller."""

    def __init__(
        self,
        settings: dict[str, Any],
        *,
        timeout: float = 5.0,
        connect_timeout: float = 5.0,
    ) -> None:
        self.host = str(settings.get("host", "localhost"))
        self.port = int(settings.get("port", 6379))
        self.path: str | None = settings.get("path")
        self.db = int(settings.get("db", 0) or 0)
        self.username: str | None = settings.get("username")
        self.password: str | None = settings.get("password")
        self.name = self.path or f"{self.host}:{self.port}"
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._pipe: Pipe | None = None
        self._connecting: asyncio.Future[Pipe] | None = None

    @classmethod
    def of(cls, settings: dict[str, Any], **kw: Any) -> Mux | None:
        """A multiplexer for a node with these redis-py connection settings, or None where
        one is beyond it (TLS, a credential provider...)."""
        if any(settings.get(k) for k in BEYOND) or settings.get("protocol") not in (2, "2", None):
            return None
        return cls(settings, **kw)

    async def call(self, args: tuple[Arg, ...] | list[Arg]) -> Raw:
        """One command's reply (an error reply raised as redis-py's parser classes it)."""
        pipe = self._pipe
        if pipe is None or not pipe.usable:
            pipe = await self._connected()
        return await pipe.send(pack(args))

    async def _connected(self) -> Pipe:
        """The pipe, connected now if it is not: concurrent callers share one attempt, and a
        caller cancelled meanwhile does not stop it for the others."""
        if self._connecting is None:
            self._connecting = asyncio.ensure_future(self._connect())
            self._connecting.add_done_callback(self._connected_done)
        return await asyncio.shield(self._connecting)

    def _connected_done(self, done: asyncio.Future[Pipe]) -> None:
        self._connecting = None
        if not done.cancelled() and done.exception() is None:
            self._pipe = done.result()

    async def _connect(self) -> Pipe:
        loop = asyncio.get_running_loop()
        pipe = Pipe(self.name, self.timeout)
        try:
            async with asyncio.timeout(self.connect_timeout):
                if self.path:
                    await loop.create_unix_connection(lambda: pipe, self.path)
                else:
                    await loop.create_connection(lambda: pipe, self.host, self.port)
        except TimeoutError:
            raise RedisTimeoutError(f"Timeout connecting to server {self.name}") from None
        except OSError as e:
            raise RedisConnectionError(self._connect_error(e)) from None
        handshake: list[list[Arg]] = []
        if self.password is not None:
            handshake.append(["AUTH", *([self.username] if self.username else []), self.password])
        if self.db:
            handshake.append(["SELECT", self.db])
        try:
            # sent together; the first refusal is the one raised
            for waiter in [pipe.send(pack(line)) for line in handshake]:
                await waiter
        except ResponseError as e:
            pipe.fail(RedisConnectionError(str(e)))
            raise RedisConnectionError(str(e)) from None
        except BaseException:
            pipe.fail(RedisConnectionError(CLOSED))
            raise
        return pipe

    def _connect_error(self, e: OSError) -> str:
        if len(e.args) == 1:
            return f"Error connecting to {self.name}. {e.args[0]}."
        return f"Error {e.args[0]} connecting to {self.name}. {e.args[1]}."

    def close(self) -> None:
        if self._pipe is not None:
            self._pipe.fail(RedisConnectionError(CLOSED))
            self._pipe = None
