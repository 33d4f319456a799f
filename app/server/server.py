"""The uvicorn server ``xstreams serve`` runs.

uvicorn's graceful shutdown waits for open responses to finish, and an event stream never
does: left alone, every SSE connection would hold shutdown for the whole grace period and then
be cut mid-stream. This server ends them first (``on_shutdown``), cleanly, so clients see the
stream close and reconnect elsewhere with ``Last-Event-ID``.

It also accepts connections as asyncio's loop does, every waiting one each time, on uvloop
too (app/server/accept.py): uvloop's own accepting let a busy loop take a new connection about
once per turn. It binds and serves the listening sockets itself, after uvicorn's start-up
ran the app's lifespan; tests/server/test_uvicorn_contract.py pins what it takes of uvicorn.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
from collections.abc import Callable
from typing import Any

import uvicorn
from uvicorn.config import STARTUP_FAILURE

from app.server import accept

logger = logging.getLogger("uvicorn.error")


class Server(uvicorn.Server):
    def __init__(
        self,
        config: uvicorn.Config,
        on_shutdown: Callable[[], None],
        on_started: Callable[[int], None] | None = None,
    ) -> None:
        super().__init__(config)
        self.on_shutdown = on_shutdown
        self.on_started = on_started  # told the port it listens on (app/server/addresses.py)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.on_shutdown()
        await super().shutdown(sockets)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's start-up (the app's lifespan) with no socket of its own, then the
        listening sockets served by ``accept.FairServer``, then ``on_started``.

        uvicorn is handed an empty list, so it runs the lifespan and creates no server;
        the sockets are bound here as the loop binds them (``accept.bind``) or are the ones
        given (a worker's, inherited). TLS keeps the loop's own server: its handshake is
        the loop's. A Unix socket or file descriptor of uvicorn's own config is uvicorn's.
        """
        config = self.config
        if config.uds is not None or config.fd is not None:
            await super().startup(sockets)
            return
        await super().startup(sockets=[])
        if self.should_exit:
            return
        loop = asyncio.get_running_loop()
        try:
            listening = (
                sockets
                if sockets is not None
                else await accept.bind(loop, config.host, config.port)
            )
        except OSError as exc:  # as uvicorn answers a port it cannot bind
            logger.error(exc)
            await self.lifespan.shutdown()
            sys.exit(STARTUP_FAILURE)
        self.servers = [await self._serve_socket(loop, sock) for sock in listening]
        if sockets is None:
            self._log_started_message(listening)
        if self.on_started is not None:
            self.on_started(listening[0].getsockname()[1] if listening else config.port)

    async def _serve_socket(self, loop: asyncio.AbstractEventLoop, sock: socket.socket) -> Any:
        """A server for one listening socket: ``FairServer``, or the loop's own under TLS."""
        config = self.config

        def protocol() -> asyncio.Protocol:
            return config.http_protocol_class(  # type: ignore[call-arg]
                config=config,
                server_state=self.server_state,
                app_state=self.lifespan.state,
                _loop=loop,
            )

        if config.ssl is not None:
            return await loop.create_server(
                protocol, sock=sock, ssl=config.ssl, backlog=config.backlog
            )
        return accept.FairServer(loop, [sock], protocol, config.backlog)
