"""app/server/accept.py: every waiting connection is taken at once, and served as the loop's own.

uvloop took a new connection about once per busy turn of the loop, so the first request on
the last of 50 connections opened together waited a second (bench/profiles/batch-tails.md).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Callable, Coroutine
from typing import Any, ClassVar, cast

import pytest
import uvicorn
import uvloop

from app.server import accept
from app.server.server import Server


class Echo(asyncio.Protocol):
    made: ClassVar[list[Echo]] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # (uvloop's is not a subclass)
        Echo.made.append(self)

    def data_received(self, data: bytes) -> None:
        self.transport.write(data.upper())


def _run(
    make: Callable[[], asyncio.AbstractEventLoop], main: Callable[[], Coroutine[Any, Any, None]]
) -> None:
    loop = make()
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()


LOOPS = [
    pytest.param(uvloop.new_event_loop, id="uvloop"),
    pytest.param(asyncio.new_event_loop, id="asyncio"),
]


@pytest.mark.parametrize("make", LOOPS)
def test_one_readable_turn_takes_every_waiting_connection(
    make: Callable[[], asyncio.AbstractEventLoop],
) -> None:
    async def main() -> None:
        Echo.made = []
        loop = asyncio.get_running_loop()
        listener = socket.create_server(("127.0.0.1", 0))
        server = accept.FairServer(loop, [listener], Echo, backlog=128)
        loop.remove_reader(listener.fileno())  # drive the accepting by hand, once
        clients = [socket.create_connection(listener.getsockname()) for _ in range(20)]
        try:
            server._accept(listener)
            await asyncio.gather(*server._starting)
            assert len(Echo.made) == 20
        finally:
            for c in clients:
                c.close()
            for p in Echo.made:
                p.transport.close()
            server.close()
        assert listener.fileno() == -1

    _run(make, main)


@pytest.mark.parametrize("make", LOOPS)
def test_host_and_port_are_bound_as_the_loop_binds_them_and_served(
    make: Callable[[], asyncio.AbstractEventLoop],
) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = accept.FairServer(loop, await accept.bind(loop, "127.0.0.1", 0), Echo, 64)
        (sock,) = server.sockets
        reader, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        writer.write(b"ping")
        assert await reader.readexactly(4) == b"PING"
        writer.close()
        server.close()
        await server.wait_closed()
        with pytest.raises(OSError):
            await asyncio.open_connection(*sock.getsockname()[:2])

    _run(make, main)


def test_tls_keeps_the_loops_own_server() -> None:
    """Under TLS the handshake is the loop's: the server serves the socket with the loop's
    own server, not ``FairServer``."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        config = uvicorn.Config(app=None)
        config.ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)  # as load() sets it
        server = Server(config, on_shutdown=lambda: None)
        (sock,) = await accept.bind(loop, "127.0.0.1", 0)
        plain_config = uvicorn.Config(app=None)
        plain_config.ssl = None
        served = await server._serve_socket(loop, sock)
        assert isinstance(served, asyncio.base_events.Server)
        served.close()
        await served.wait_closed()
        (sock,) = await accept.bind(loop, "127.0.0.1", 0)
        fair = await Server(plain_config, on_shutdown=lambda: None)._serve_socket(loop, sock)
        assert isinstance(fair, accept.FairServer)
        fair.close()

    _run(asyncio.new_event_loop, main)
