"""The app factory: wires the engine, the routers and the error table from one Settings."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI
from fastapi.responses import Response

from app.api import errors, openapi
from app.api.auth import TokenAuth
from app.api.binary import RawPaths
from app.api.errors import json_response
from app.api.loading import LoadingGate
from app.api.routes import (
    commands,
    consumers,
    entries,
    events,
    fallback,
    groups,
    pel,
    reads,
    streams,
)
from app.durability import InMemory, Readiness, ReadyState
from app.engine.keyspace import StreamConfig
from app.engine.limits import Limits
from app.engine.store import Store
from app.settings import Settings
from app.storage import Storage

log = logging.getLogger("xstreams")


DESCRIPTION = """\
Streams, entries, consumer groups, consumers and pending entries as REST resources under
`/v1`, with Redis 7.0 stream semantics: each operation names the Redis command it models and
behaves as redis-server does.

- Entries are `{"id": "ms-seq", "fields": {...}}`; `?fields=pairs` gives `[[field, value]]`
  pairs instead, keeping repeated field names and their order. Writes accept both forms.
- IDs are strings; times are integers of milliseconds named `*_ms`; `entries_read` and `lag`
  are null when Redis cannot tell.
- Errors are RFC 9457 problem details with Redis's error text (`error`) and code (`code`).
- Long polls (`block_ms`) wait on the server and answer an empty list at timeout.
- Names and values are bytes and need not be UTF-8. In JSON (bodies, responses, event data),
  each byte that is not part of valid UTF-8 is the escape `\\udcNN` inside a string (the byte
  0xFF is `"\\udcff"`; Python's surrogateescape, PEP 383); send back what you read and the same
  bytes are stored. Any other lone surrogate is refused (422). In paths and query values a
  byte is `%NN`: `/v1/streams/%FF` and `/v1/streams/%FE` are two streams, `%C3%A9` is `é`.
"""

TAGS = [
    {
        "name": "streams",
        "description": "Streams as a whole: SCAN, XINFO STREAM, DEL, XTRIM, XSETID.",
    },
    {
        "name": "entries",
        "description": "Append, range, long-poll and delete entries: XADD, XRANGE, XREAD, XDEL.",
    },
    {"name": "groups", "description": "Consumer groups: XINFO GROUPS, XGROUP."},
    {
        "name": "consumers",
        "description": "Consumers and their reads: XINFO CONSUMERS, XGROUP, XREADGROUP.",
    },
    {"name": "pending entries", "description": "The PEL: XACK, XPENDING, XCLAIM, XAUTOCLAIM."},
]


def create_app(settings: Settings | None = None, store: Store | None = None) -> FastAPI:
    settings = settings or Settings()
    config = StreamConfig(settings.stream_node_max_entries, settings.stream_node_max_bytes)
    storage: Storage | None = None
    if store is None:
        # Durable by default. A caller that passes its own store keeps it in memory (tests).
        storage = Storage(settings)
        store = Store(config=config, journal=storage.writer)
    app = FastAPI(
        lifespan=_lifespan,
        title="xstreams",
        version="0.1.0",
        summary="Redis 7.0 stream semantics served over HTTP.",
        description=DESCRIPTION,
        openapi_tags=TAGS,
        docs_url="/docs",
        redoc_url=None,
    )
    app.state.settings = settings
    # The engine enforces two of the limits itself, on every surface (keys per read, entries
    # per reply); a store passed in (tests) gets them too.
    store.keyspace.limits = Limits(
        read_keys=settings.max_read_keys, reply_entries=settings.max_reply_entries
    )
    app.state.store = store
    # Storage and the API meet only here: the API sees a Durability (app.durability).
    app.state.storage = storage
    app.state.durability = storage or InMemory()
    app.state.readiness = Readiness(ReadyState.STARTING if storage else ReadyState.READY)
    if storage is not None:
        storage.on_wait = app.state.readiness.set_waiting
    app.state.on_fatal = None  # set by `xstreams serve`: stops the server if recovery fails
    errors.install(app)

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> Response:
        return json_response({"status": "ok"})

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> Response:
        readiness: Readiness = app.state.readiness
        if readiness.state is not ReadyState.READY:
            body = {"status": readiness.state.value, "error": readiness.error}
            if readiness.waiting is not None:
                body["reason"] = readiness.waiting
            return json_response(body, 503)
        failure = storage.writer.failure if storage else None
        # Still ready while the database is away: reads are served, writes answer 503.
        return json_response({"status": "ready", "storage": failure.reason if failure else "ok"})

    for resource in (streams, entries, reads, groups, consumers, pel):
        app.include_router(resource.api)
    events.install(app)
    app.include_router(fallback.router)
    openapi.install(app)
    # The command endpoint: its routes go first, its catch-all path route last.
    commands.install(app)
    if settings.token:
        app.add_middleware(TokenAuth, token=settings.token)
    app.add_middleware(LoadingGate, readiness=app.state.readiness)
    app.add_middleware(RawPaths)  # outermost: every layer sees /v1 names with their bytes
    return app


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Recovery runs in the background so /readyz can answer 503 meanwhile; a clean shutdown
    commits the journal and takes a snapshot."""
    storage: Storage | None = app.state.storage
    if storage is None:
        yield
        return
    app.state.readiness.state = ReadyState.RECOVERING
    task = asyncio.create_task(_recover(app, storage))
    try:
        yield
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        elif app.state.readiness.state is ReadyState.READY:
            await storage.stop()


async def _recover(app: FastAPI, storage: Storage) -> None:
    readiness: Readiness = app.state.readiness
    try:
        await storage.start(app.state.store)
    except Exception as e:
        log.critical("recovery failed, stopping: %s", e)
        readiness.set_failed(str(e))
        if app.state.on_fatal is not None:
            app.state.on_fatal()
        return
    readiness.set_ready()
