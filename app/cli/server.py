"""The uvicorn server ``xstreams serve`` runs.

uvicorn's graceful shutdown waits for open responses to finish, and an event stream never
does: left alone, every SSE connection would hold shutdown for the whole grace period and then
be cut mid-stream. This server ends them first (``on_shutdown``), cleanly, so clients see the
stream close and reconnect elsewhere with ``Last-Event-ID``.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

import uvicorn


class Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_shutdown: Callable[[], None]) -> None:
        super().__init__(config)
        self.on_shutdown = on_shutdown

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.on_shutdown()
        await super().shutdown(sockets)
