"""The uvicorn server ``xstreams serve`` runs.

uvicorn's graceful shutdown waits for open responses to finish, and an event stream never
does: left alone, every SSE connection would hold shutdown for the whole grace period and then
be cut mid-stream. This server ends them first (``on_shutdown``), cleanly, so clients see the
stream close and reconnect elsewhere with ``Last-Event-ID``.

It also accepts connections as asyncio's loop does, every waiting one each time, on uvloop
too (app/cli/accept.py): uvloop's own accepting let a busy loop take a new connection about
once per turn.
"""

from __future__ import annotations

import asyncio
import functools
import socket
from collections.abc import Callable

import uvicorn

from app.cli import accept


class Server(uvicorn.Server):
    def __init__(
        self,
        config: uvicorn.Config,
        on_shutdown: Callable[[], None],
        on_started: Callable[[int], None] | None = None,
    ) -> None:
        super().__init__(config)
        self.on_shutdown = on_shutdown
        self.on_started = on_started  # told the port it listens on (app/cli/addresses.py)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.on_shutdown()
        await super().shutdown(sockets)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's startup, then ``on_started`` once it listens."""
        await self._startup(sockets)
        if self.started and self.on_started is not None:
            listening = [s for server in self.servers for s in server.sockets]
            port = listening[0].getsockname()[1] if listening else self.config.port
            self.on_started(port)

    async def _startup(self, sockets: list[socket.socket] | None) -> None:
        """uvicorn's startup, its listening sockets served by ``accept.FairServer``."""
        loop = asyncio.get_running_loop()
        original = loop.create_server
        try:
            loop.create_server = functools.partial(  # type: ignore[method-assign]
                accept.create_server, loop, original
            )
        except AttributeError:  # a loop that takes no attribute: its own accepting
            await super().startup(sockets)
            return
        try:
            await super().startup(sockets)
        finally:
            del loop.create_server
