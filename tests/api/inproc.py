"""An app served in process (httpx's ASGITransport), for tests that set limits of their own."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from app.api.commands.resp import Shaper
from app.engine.blocking import Block
from app.engine.errors import CommandError
from app.engine.json_codec import decode_json, encode_json
from app.engine.store import Store
from app.engine.waiting import wait
from app.main import create_app
from app.settings import Settings
from tests.conftest import ReplyError


@asynccontextmanager
async def serve(store: Store | None = None, **settings: Any) -> AsyncIterator[httpx.AsyncClient]:
    """A client on ``create_app(Settings(**settings))`` with an in-memory store."""
    app = create_app(Settings(**settings), store=store or Store())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://xs") as client:
        yield client


class InprocTransport(httpx.BaseTransport):
    """A synchronous httpx transport that hands each request to an ASGI app in this process,
    on an event loop of its own: the app's own request handling, parsing and reply encoding,
    without sockets, uvicorn or a subprocess. The differential suite runs on it first, in
    seconds, and over real HTTP as a second pass."""

    def __init__(self, app: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.asgi = httpx.ASGITransport(app=app)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        async def send() -> httpx.Response:
            body = b"".join([part async for part in request.stream])  # type: ignore[union-attr]
            inner = httpx.Request(
                request.method, request.url, headers=request.headers, content=body
            )
            response = await self.asgi.handle_async_request(inner)
            content = await response.aread()
            return httpx.Response(response.status_code, headers=response.headers, content=content)

        return self.loop.run_until_complete(send())

    def close(self) -> None:
        self.loop.run_until_complete(self.asgi.aclose())
        self.loop.close()


def inproc_client(store: Store | None = None, **settings: Any) -> httpx.Client:
    """A synchronous client on ``create_app(Settings(**settings))`` served in process."""
    app = create_app(Settings(**settings), store=store or Store())
    return httpx.Client(transport=InprocTransport(app), base_url="http://xs", timeout=30)


class InprocCommands:
    """The command endpoint's handling of ``POST /``, in process and without HTTP: the
    store the app serves runs the command (waiting, on the transport's loop, when it blocks),
    and the endpoint's ``Shaper`` and JSON encoder make the reply, read back as a client
    reads it. ``client`` reaches the same app (same store) through ``InprocTransport`` for
    requests that need the whole endpoint: headers, ``/pipeline``, raw bodies."""

    def __init__(self) -> None:
        self.store = Store()
        self.client = inproc_client(store=self.store)
        transport = self.client._transport
        assert isinstance(transport, InprocTransport)
        self.loop = transport.loop
        self.shaper = Shaper(False)

    def __call__(self, *args: Any) -> Any:
        argv = [str(a) for a in args]
        try:
            reply = self.store.execute(argv)
            if isinstance(reply, Block):
                reply = self.loop.run_until_complete(wait(self.store, reply, None))
        except CommandError as e:
            return ReplyError(decode_json(encode_json({"error": e.text}))["error"])
        return decode_json(encode_json({"result": self.shaper(reply)}))["result"]
