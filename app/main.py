"""The app factory: wires the engine, the routers and the error table from one Settings."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import Response

from app import __version__, info
from app.access import Authenticator, JwtVerifier, KeyRing
from app.api import dashboard, errors, openapi
from app.api.access_gate import PROBES, AccessGate
from app.api.binary import RawPaths
from app.api.commands import routes as commands
from app.api.errors import json_response
from app.api.holds import Holds
from app.api.loading import LoadingGate
from app.api.rest import (
    consumers,
    entries,
    fallback,
    groups,
    metrics,
    pel,
    reads,
    streams,
    whoami,
)
from app.api.services import Services
from app.api.sse import routes as events
from app.backends import Backend, open_backend, service_limits
from app.backends.embedded import EmbeddedBackend
from app.backends.shards import ReportsShards, readiness_fields
from app.durability import Readiness, ReadyState
from app.engine.keyspace import StreamConfig
from app.engine.store import Store
from app.lifespan import CONNECT_TIMEOUT_S, lifespan
from app.observe import JournalFigures, Metrics, Observe, SseFigures
from app.settings import Settings
from app.storage import Storage
from app.storage.keys import KeyStore

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
    {"name": "access", "description": "The caller's own grant: ACL WHOAMI."},
]


def create_app(
    settings: Settings | None = None, store: Store | None = None, backend: Backend | None = None
) -> FastAPI:
    """The whole service from one ``Settings`` (the environment's when none is given, as each
    ``--workers`` process builds it). ``store`` (tests): an in-memory engine instead of the
    durable one; ``backend`` (tests): a backend built by the caller instead of
    ``settings.backend``'s."""
    settings = settings or Settings()
    storage: Storage | None = None
    keys: KeyStore | None = None  # where the API keys are read from, if anywhere
    if isinstance(backend, EmbeddedBackend):
        store = backend.store
    elif backend is None and store is None and settings.embedded:
        # Durable by default. A caller that passes its own store keeps it in memory (tests).
        storage = Storage(settings)
        config = StreamConfig(settings.stream_node_max_entries, settings.stream_node_max_bytes)
        store = Store(config=config, journal=storage.writer)
        keys = storage.keys
    elif backend is None and store is None:
        # Redis holds the streams; the API keys stay in the SQL database (the same URL
        # `xstreams keys` writes, shared by every front-end), with no journal beside them.
        keys = KeyStore.at(settings.resolved_database_url())
    # ``store`` is None exactly when Redis serves: nothing of the keyspace lives here.
    app = FastAPI(
        lifespan=lifespan,
        title="xstreams",
        version=__version__,
        summary="Redis 7.0 stream semantics served over HTTP.",
        description=DESCRIPTION,
        openapi_tags=TAGS,
        docs_url="/docs",
        redoc_url=None,
    )
    app.state.settings = settings
    if store is not None:
        # The engine enforces two of the limits itself, on every surface (keys per read,
        # entries per reply); a store passed in (tests) gets them too. In front of Redis,
        # RedisBackend enforces the same ones (open_backend).
        store.keyspace.limits = service_limits(settings)
    app.state.store = store  # None with Redis: every surface goes through the backend
    # Storage and the API meet only here, through the backend: the embedded one gets the
    # journal's Durability (app.durability) and answers only what is durable. With Redis, a
    # reply waits for Redis's answer (and WAIT, inside the backend): nothing more.
    app.state.storage = storage
    # Embedded with storage: ready once recovered; in memory: at once; Redis: once it answers.
    ready = store is not None and storage is None
    app.state.readiness = Readiness(ReadyState.READY if ready else ReadyState.STARTING)
    if storage is not None:
        storage.on_wait = app.state.readiness.set_waiting
    if store is not None:
        info.install(store.keyspace, settings, storage, app.state.readiness)
    app.state.on_fatal = None  # set by `xstreams serve`: stops the server if recovery fails
    # Who may do what (app/access): the gate resolves credentials, every surface checks.
    app.state.access = _authenticator(settings)  # before events.install: it follows the keys
    app.state.key_store = keys
    app.state.keys_refresh = None
    # Why the API keys could not be read (None: read); /readyz shows it in front of Redis.
    app.state.keys_problem = None
    app.state.metrics = _metrics(settings, store, storage)
    if backend is None and store is not None:
        # The engine over this store, whatever XSTREAMS_BACKEND says: a caller that passed a
        # store (tests, `xstreams openapi`) asked for it.
        backend = EmbeddedBackend(
            store,
            durability=storage,
            timer=app.state.metrics,
            pipeline_slice_ms=settings.pipeline_slice_ms,
        )
    elif backend is None:
        backend = open_backend(settings, timer=app.state.metrics)
    app.state.services = Services(
        settings=settings,
        backend=backend,
        readiness=app.state.readiness,
        metrics=app.state.metrics,
        holds=Holds(settings.sse_max_connections_per_key),
    )
    errors.install(app)

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> Response:
        return json_response({"status": "ok"})

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> Response:
        readiness: Readiness = app.state.readiness
        backend: Backend = app.state.services.backend
        # ``backend``: what serves (never its URL, which may hold a password); ``pid``: which
        # worker process answered, when several share the port.
        body: dict[str, Any] = {"status": "ready", "backend": backend.name, "pid": os.getpid()}
        if readiness.state is not ReadyState.READY:
            body.update(status=readiness.state.value, error=readiness.error)
            if readiness.waiting is not None:
                body["reason"] = readiness.waiting
            return json_response(body, 503)
        if store is None and app.state.key_store is not None:
            body["keys"] = app.state.keys_problem or "ok"
        if store is None:
            # Redis: ready while it answers, so a load balancer takes a front-end that lost
            # it out of rotation. A degraded shard (app/backends/shards.py) is named, and
            # leaves it ready: every front-end sees the same shards.
            try:
                await asyncio.wait_for(backend.command(["PING"]), CONNECT_TIMEOUT_S)
            except Exception as e:
                body.update(status="unavailable", reason=str(e) or type(e).__name__)
                return json_response(body, 503)
            if isinstance(backend, ReportsShards):
                body.update(readiness_fields(await backend.shards(CONNECT_TIMEOUT_S)))
            return json_response(body)
        failure = storage.writer.failure if storage else None
        # Still ready while the database is away: committed state is served, writes and reads
        # of what is not durable yet answer 503.
        body["storage"] = failure.reason if failure else "ok"
        return json_response(body)

    for resource in (streams, entries, reads, groups, consumers, pel, whoami):
        app.include_router(resource.api)
    events.install(app)
    app.state.metrics.sse = _sse_figures(app)
    metrics.install(app)
    app.include_router(fallback.router)
    dashboard.install(app)  # /ui/: the dashboard's static files
    openapi.install(app)
    # The command endpoint: its routes go first, its catch-all path route last.
    commands.install(app)
    app.add_middleware(
        AccessGate, authenticator=app.state.access, open_paths=PROBES | dashboard.served_paths()
    )
    app.add_middleware(LoadingGate, readiness=app.state.readiness)
    app.add_middleware(RawPaths)  # every layer within sees /v1 names with their bytes
    if settings.cors_origins:
        # Outermost: a preflight is answered before loading or credentials are looked at.
        # Named origins are answered with themselves and credentials; "*" (alone: Settings)
        # with "*" and never credentials, which the Fetch standard forbids beside it: so no
        # origin that is not named ever gets a credentialed answer.
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_credentials=settings.cors_origins != ["*"],
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            allow_headers=[
                "Authorization",
                "Content-Type",
                "Last-Event-ID",
                "Upstash-Encoding",
                "X-Request-ID",
            ],
            expose_headers=["Location", "Link", "Retry-After", "X-Request-ID"],
            max_age=600,
        )
    # Outermost: each request's ID, count, latency and log line, whoever answers it.
    app.add_middleware(Observe, metrics=app.state.metrics)
    return app


def _metrics(settings: Settings, store: Store | None, storage: Storage | None) -> Metrics:
    """What /metrics shows, pointed at the keyspace and the journal (app.observe)."""
    figures = Metrics(
        group_streams=tuple(settings.metrics_group_streams),
        max_groups=settings.metrics_max_groups,
    )
    figures.keyspace = store.keyspace if store is not None else None  # Redis: its INFO
    if storage is not None:
        writer = storage.writer
        writer.on_commit = figures.journal_committed
        figures.journal = lambda: JournalFigures(
            uncommitted=writer.last_seq - writer.committed_seq, available=writer.failure is None
        )
    return figures


def _sse_figures(app: FastAPI) -> Callable[[], SseFigures]:
    registry, tails = app.state.sse, app.state.sse_tails
    return lambda: SseFigures(
        open=len(registry.open), closed=registry.closed, fell_behind=tails.fell_behind
    )


def _authenticator(settings: Settings) -> Authenticator:
    jwt: JwtVerifier | None = None
    if settings.jwt_secret is not None or settings.jwt_public_key_file is not None:
        public_key = (
            settings.jwt_public_key_file.read_text()
            if settings.jwt_public_key_file is not None
            else None
        )
        jwt = JwtVerifier(
            secret=settings.jwt_secret,
            public_key=public_key,
            audience=settings.jwt_audience,
            max_lifetime_ms=settings.jwt_max_lifetime_ms,
        )
    return Authenticator(
        token=settings.token,
        keys=KeyRing(),
        jwt=jwt,
        cookie=settings.auth_cookie,
        trusted_origins=settings.cors_origins,
    )
