"""The client sides of the SSE benchmark, each run in a process of its own (uvloop).

- ``subscribe``: N event-stream connections (live tail or group delivery) that time every
  event's arrival. Tails count ``event: entry`` in the raw bytes (cheap, so the clients are
  not what is measured); group readers need each entry's ID, to tell who got what.
- ``redis_read``: the anchor, N redis-server connections looping on ``XREAD BLOCK`` or
  ``XREADGROUP BLOCK`` (hiredis parses the replies).
- ``sink``: the send floor's readers, N loopback connections whose bytes are dropped.
- ``produce``: appends at a fixed rate over keep-alive connections (HTTP ``POST /`` or RESP)
  and notes when each append's reply arrived.

Times are ``time.monotonic()``: one clock for every process on this machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import struct
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import hiredis
import uvloop

ENTRY_MARK = b"event: entry"
ID_LINE = re.compile(rb"\nid: (\d+-\d+)\n")
POLL_S = 0.05
OPENING = 64  # connections being opened at once by one client process


@dataclass
class Arrivals:
    """What one connection received: arrival times in stream order, or (ID, time) pairs."""

    times: array[float] = field(default_factory=lambda: array("d"))
    ids: list[tuple[str, float]] = field(default_factory=list)


class _EventStream(asyncio.Protocol):
    def __init__(self, request: bytes, with_ids: bool) -> None:
        self.request = request
        self.with_ids = with_ids
        self.got = Arrivals()
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._tail = b""

    def connection_made(self, transport: Any) -> None:
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.monotonic()
        if not self.opened.done():
            if not data.startswith(b"HTTP/1.1 200"):
                self.opened.set_exception(RuntimeError(data[:300].decode(errors="replace")))
                return
            self.opened.set_result(None)
        buf = self._tail + data
        if self.with_ids:
            cut = buf.rfind(b"\n")
            for m in ID_LINE.finditer(buf, 0, cut + 1):
                self.got.ids.append((m.group(1).decode(), now))
            self._tail = buf[max(cut, 0) :]
        else:
            n = buf.count(ENTRY_MARK)
            if n:
                self.got.times.extend([now] * n)
            self._tail = buf[-(len(ENTRY_MARK) - 1) :]

    @property
    def count(self) -> int:
        return len(self.got.ids) if self.with_ids else len(self.got.times)


def subscribe(host: str, port: int, paths: list[str], expected: int, ready: Any, finish: Any,
              out: Any, with_ids: bool = False) -> None:  # fmt: skip
    """Open one event stream per path; report ready; collect until ``finish`` is set and
    ``expected`` events (in total for groups, per connection for tails) are in, or a grace
    period passes."""
    uvloop.run(_subscribe(host, port, paths, expected, ready, finish, out, with_ids))


async def _subscribe(host: str, port: int, paths: list[str], expected: int, ready: Any,
                     finish: Any, out: Any, with_ids: bool) -> None:  # fmt: skip
    loop = asyncio.get_running_loop()
    conns: list[_EventStream] = []
    transports: list[Any] = []
    # A few connections opening at a time: thousands at once would overflow the server's
    # accept backlog (the kernel then drops SYNs, which come again a second later).
    gate = asyncio.Semaphore(OPENING)

    async def open_one(path: str) -> None:
        request = f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n"
        proto = _EventStream(request.encode(), with_ids)
        async with gate:
            transport, _ = await loop.create_connection(lambda: proto, host, port)
            await proto.opened
        conns.append(proto)
        transports.append(transport)

    try:
        await asyncio.gather(*(open_one(path) for path in paths))
    except Exception as e:
        ready.put(f"{len(conns)} of {len(paths)} connections opened, then: {e!r}")
        raise
    ready.put(len(conns))

    def complete() -> bool:
        if with_ids:
            return sum(c.count for c in conns) >= expected
        return all(c.count >= expected for c in conns)

    await _until(finish, complete)
    out.put([c.got for c in conns])
    for transport in transports:
        _reset(transport)


def sink(host: str, port: int, n: int, ready: Any, finish: Any) -> None:
    """The send floor's readers: ``n`` loopback connections whose bytes are read and dropped,
    on uvloop as the subscribers are, until ``finish`` is set."""
    uvloop.run(_sink(host, port, n, ready, finish))


async def _sink(host: str, port: int, n: int, ready: Any, finish: Any) -> None:
    loop = asyncio.get_running_loop()
    gate = asyncio.Semaphore(OPENING)
    transports: list[Any] = []

    async def open_one() -> None:
        async with gate:
            transport, _ = await loop.create_connection(asyncio.Protocol, host, port)
        transports.append(transport)

    try:
        await asyncio.gather(*(open_one() for _ in range(n)))
    except Exception as e:
        ready.put(f"{len(transports)} of {n} connections opened, then: {e!r}")
        raise
    ready.put(len(transports))
    while not finish.is_set():
        await asyncio.sleep(POLL_S)
    for transport in transports:
        _reset(transport)


def _reset(transport: Any) -> None:
    """Close with a reset: no TIME_WAIT left behind, so a run of 20,000 connections can
    follow another at once (loopback has ~28,000 ephemeral ports)."""
    sock = transport.get_extra_info("socket")
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


async def _until(finish: Any, complete: Callable[[], bool], grace_s: float = 3.0) -> None:
    while not finish.is_set():
        await asyncio.sleep(POLL_S)
    deadline = time.monotonic() + grace_s
    while not complete() and time.monotonic() < deadline:
        await asyncio.sleep(POLL_S)


def _resp(*args: str) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a.encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(parts)


class _RedisReader(asyncio.Protocol):
    """One connection looping on XREAD BLOCK (after an ID) or XREADGROUP BLOCK (``>``)."""

    def __init__(self, key: str, db: int, consumer: str | None) -> None:
        self.key = key
        self.consumer = consumer
        self.reader = hiredis.Reader()
        self.got = Arrivals()
        self.last = "0-0"
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.db = db
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        transport.write(_resp("SELECT", str(self.db)) + self._next())

    def _next(self) -> bytes:
        if self.consumer is None:
            return _resp("XREAD", "BLOCK", "0", "COUNT", "1000", "STREAMS", self.key, self.last)
        return _resp("XREADGROUP", "GROUP", "g", self.consumer, "BLOCK", "0", "COUNT", "1000",
                     "STREAMS", self.key, ">")  # fmt: skip

    def data_received(self, data: bytes) -> None:
        now = time.monotonic()
        self.reader.feed(data)
        while (reply := self.reader.gets()) is not False:
            if not self.opened.done():  # the SELECT reply: the XREAD is on its way
                self.opened.set_result(None)
                continue
            if isinstance(reply, hiredis.ReplyError):  # the key went away: the run is over
                return
            entries = reply[0][1]
            if self.consumer is None:
                self.got.times.extend([now] * len(entries))
            else:
                self.got.ids.extend((e[0].decode(), now) for e in entries)
            self.last = entries[-1][0].decode()
            self.transport.write(self._next())


def redis_read(host: str, port: int, db: int, key: str, consumers: list[str | None],
               expected: int, ready: Any, finish: Any, out: Any) -> None:  # fmt: skip
    uvloop.run(_redis_read(host, port, db, key, consumers, expected, ready, finish, out))


async def _redis_read(host: str, port: int, db: int, key: str, consumers: list[str | None],
                      expected: int, ready: Any, finish: Any, out: Any) -> None:  # fmt: skip
    loop = asyncio.get_running_loop()
    conns = []
    for consumer in consumers:
        proto = _RedisReader(key, db, consumer)
        await loop.create_connection(lambda p=proto: p, host, port)  # type: ignore[misc]
        conns.append(proto)
    await asyncio.gather(*(c.opened for c in conns))
    await asyncio.sleep(0.2)  # the blocking reads reach the server
    ready.put(len(conns))
    group = consumers[0] is not None

    def complete() -> bool:
        if group:
            return sum(len(c.got.ids) for c in conns) >= expected
        return all(len(c.got.times) >= expected for c in conns)

    await _until(finish, complete)
    out.put([c.got for c in conns])


async def produce(host: str, port: int, make: Callable[[int], bytes], redis_db: int | None,
                  total: int, rate: float, connections: int,
                  ) -> tuple[list[tuple[str, float]], float]:  # fmt: skip
    """Append ``total`` entries at ``rate``/s; (entry ID, reply time) of each, and the
    achieved rate. ``redis_db``: speak RESP to redis-server, on that database."""
    out: list[tuple[str, float]] = []
    redis = redis_db is not None
    conns = [await asyncio.open_connection(host, port) for _ in range(connections)]
    for reader, writer in conns:
        if redis:
            writer.write(_resp("SELECT", str(redis_db)))
            assert await reader.readline() == b"+OK\r\n"
    start = time.monotonic() + 0.05

    async def one(k: int) -> None:
        reader, writer = conns[k]
        for i in range(k, total, connections):
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            writer.write(make(i))
            if redis:
                line = await reader.readline()
                sid = (await reader.readexactly(int(line[1:]) + 2))[:-2].decode()
            else:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(re.search(rb"content-length: (\d+)", head, re.I)[1])  # type: ignore[index]
                body = await reader.readexactly(length)
                sid = body.split(b'"')[3].decode()
            out.append((sid, time.monotonic()))
        writer.close()

    await asyncio.gather(*(one(k) for k in range(connections)))
    elapsed = time.monotonic() - start
    return out, total / elapsed


def http_xadd(key: str, value: str) -> Callable[[int], bytes]:
    def make(i: int) -> bytes:
        body = f'["XADD","{key}","*","n","{i}","v","{value}"]'.encode()
        return (
            b"POST / HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )

    return make


def resp_xadd(key: str, value: str) -> Callable[[int], bytes]:
    def make(i: int) -> bytes:
        return _resp("XADD", key, "*", "n", str(i), "v", value)

    return make
