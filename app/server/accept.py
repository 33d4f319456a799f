"""Accepting every waiting connection at once, on uvloop as on asyncio's own loop.

uvloop (libuv) takes new connections from a listening socket about one per turn of the event
loop while the loop is busy. Under load a turn runs dozens of requests, so a client opening
50 connections at once saw its last one accepted a second later, and the first request on
it answered a second late (bench/profiles/batch-tails.md: the p99 of the batch rows, 20 to
150 times their median). asyncio's loop accepts all that wait, up to the backlog, each time
the socket is readable; this does the same on any loop: it reads the listening sockets
itself (``add_reader``) and hands each connection to the loop
(``connect_accepted_socket``), which serves it exactly as one it had accepted.

The sockets are bound as the loop binds them (``bind``: ``create_server`` without serving,
same addresses, same options); only the accepting changes. TLS keeps the loop's own server.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
from collections.abc import Callable, Sequence
from typing import Any

log = logging.getLogger("xstreams.server")

# What asyncio's loop does when accept() runs out of a resource: stop accepting a moment
# instead of spinning on a socket that stays readable.
RETRY_ACCEPT_S = 1.0
_RESOURCE = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class FairServer:
    """The part of ``asyncio.Server`` uvicorn uses (``sockets``, ``close``, ``wait_closed``),
    accepting every waiting connection each time a listening socket is readable."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sockets: Sequence[socket.socket],
        protocol_factory: Callable[[], asyncio.Protocol],
        backlog: int,
    ) -> None:
        self.loop = loop
        self._sockets = list(sockets)
        self.protocol_factory = protocol_factory
        self.backlog = backlog
        self._closed = False
        self._starting: set[asyncio.Task[Any]] = set()
        for sock in self._sockets:
            sock.setblocking(False)
            sock.listen(backlog)
            self._serve(sock)

    @property
    def sockets(self) -> list[socket.socket]:
        return list(self._sockets)

    def _serve(self, sock: socket.socket) -> None:
        if not self._closed:
            self.loop.add_reader(sock.fileno(), self._accept, sock)

    def _accept(self, sock: socket.socket) -> None:
        """Every connection waiting (at most ``backlog``), as asyncio's loop takes them."""
        for _ in range(self.backlog):
            try:
                conn, _addr = sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as e:
                if e.errno in _RESOURCE:
                    log.error("accepting a connection failed, retrying in 1 s: %s", e)
                    self.loop.remove_reader(sock.fileno())
                    self.loop.call_later(RETRY_ACCEPT_S, self._serve, sock)
                    return
                raise
            conn.setblocking(False)
            if conn.family in (socket.AF_INET, socket.AF_INET6):
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = self.loop.create_task(self._connect(conn))
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)

    async def _connect(self, conn: socket.socket) -> None:
        try:
            await self.loop.connect_accepted_socket(self.protocol_factory, conn)
        except Exception as e:  # a connection that died at once: nobody to answer
            log.debug("dropping a connection that could not be set up: %s", e)
            conn.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for sock in self._sockets:
            if sock.fileno() != -1:
                self.loop.remove_reader(sock.fileno())
                sock.close()

    async def wait_closed(self) -> None:
        return None


async def bind(loop: asyncio.AbstractEventLoop, host: Any, port: int) -> list[socket.socket]:
    """Listening sockets for ``host``:``port``, bound as the loop binds them (every address
    the host resolves to, the loop's socket options), not yet accepting: each is duplicated
    before the loop's server, which never listened, closes its own."""
    bound = await loop.create_server(asyncio.Protocol, host, port, start_serving=False)
    try:
        return [
            socket.socket(s.family, s.type, s.proto, fileno=os.dup(s.fileno()))
            for s in bound.sockets
        ]
    finally:
        bound.close()
