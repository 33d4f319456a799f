"""A departed subscriber leaves nothing behind: no blocked waiter, no tail, no open stream.

This one runs uvicorn in a thread of the test process (still a real server on loopback), so
the test can look inside the app: the keyspace's blocked clients, the running tails and the
open streams, after the clients go away.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from app.api.services import app_services
from app.api.sse.hub import DetachedStream
from app.engine.store import Store
from app.main import create_app
from app.server.connections import Limits, protocol_class
from app.server.server import Server
from app.settings import Settings
from tests.api.sse.support import add, command, entry_ids, open_events
from tests.conftest import free_port
from tests.support.waiting import parked_async, until, until_async


class ThreadServer:
    def __init__(self, app: FastAPI, http: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        if http == "xstreams":  # ``xstreams serve``'s protocol and server
            limits = Limits(
                header_timeout_ms=5000, body_timeout_ms=5000, keepalive_timeout_ms=5000,
                max_connections=100,
            )  # fmt: skip
            config = uvicorn.Config(
                app, host="127.0.0.1", port=self.port, log_level="warning",
                http=protocol_class(limits),
            )  # fmt: skip
            self.server: uvicorn.Server = Server(config, app_services(app).sse.close_all)
        else:
            config = uvicorn.Config(
                app, host="127.0.0.1", port=self.port, log_level="warning", http=http
            )
            self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        until(lambda: self.server.started, 10, "uvicorn started")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


# xstreams: ``xstreams serve``'s protocol hands each stream's connection to a record of its
# own and the request ends (app/api/sse/hub.py); httptools: events are written straight to
# uvicorn's transport (``sse_flush``); h11: through the ASGI ``send`` of each connection's
# writer task. All must clean up the same way.
@pytest.fixture(scope="module", params=["xstreams", "httptools", "h11"])
def app(request: pytest.FixtureRequest) -> Iterator[FastAPI]:
    application = create_app(Settings(sse_heartbeat_ms=200), store=Store())
    srv = ThreadServer(application, request.param)
    application.state.url = srv.url
    application.state.http = request.param
    application.state.server = srv.server
    yield application
    srv.stop()


async def test_no_waiter_tail_or_stream_left_after_clients_leave(app: FastAPI) -> None:
    store = app.state.services.backend.store
    tails = app.state.services.sse_tails.by_key
    streams = app.state.services.sse.open
    async with httpx.AsyncClient(base_url=app.state.url, timeout=10) as client:
        await command(client, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
        await command(client, "XGROUP", "CREATECONSUMER", "s", "g", "c1")
        held = await add(client, "s", "n", "0")
        await command(client, "XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", ">")
        group = "/v1/streams/s/groups/g/consumers/{}/events"
        async with (
            open_events(client, "/v1/streams/s/events") as one,
            open_events(client, "/v1/streams/s/events") as two,
            open_events(client, "/v1/events", stream=["s", "t"]) as multi,
            open_events(client, group.format("c1")) as c1,
            open_events(client, group.format("c2"), max_unacked=1) as c2,
        ):
            assert entry_ids(await c2.take(1)) == [held]  # history; then it waits for acks
            await parked_async(store, 3)  # the tails of s and t, c1 (see below)
            sid = await add(client, "s", "n", "1")
            for reader in (one, two, multi, c1):
                assert entry_ids(await reader.take(1)) == [sid]
            assert set(tails) == {"s", "t"}
            assert len(streams) == 5
            state = app.state.server.server_state
            detached = [c for c in state.connections if isinstance(c, DetachedStream)]
            if app.state.http == "xstreams":
                # Every stream left its request: no ASGI task runs for it, its record stands
                # among the server's connections (the cap and the shutdown count it).
                assert len(detached) == 5 and not state.tasks, (detached, state.tasks)
            else:
                assert not detached
            # Tails of s and t, c1 on `>`. c2, held back by max_unacked, parks no reader: it
            # looks at its pending count now and then (no backend signals acks to readers).
            await parked_async(store, 3)
    direct = app.state.services.sse.flusher.direct_writes
    assert (direct > 0) == (app.state.http != "h11"), direct
    await until_async(lambda: not tails and not streams, 3, "no tail and no stream left")
    connections = app.state.server.server_state.connections
    await until_async(
        lambda: not any(isinstance(c, DetachedStream) for c in connections), 3, "records gone"
    )
    await parked_async(store, 0, 3, "no reader left blocked")
