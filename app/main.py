"""The app factory: assembles the service from one Settings, in named steps.

What serves and keeps the streams (``_opened``, or what a caller ``_given``), the typed
``Services`` every handler and middleware reaches (``app.state.services``, nothing else
there), the ``Runtime`` start and stop use (app/lifespan.py), then the routes and the
middleware around them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from app import __version__, info, probes
from app.access import Authenticator, JwtVerifier, KeyRing
from app.api import dashboard, ds, errors, openapi
from app.api.access_gate import PROBES, AccessGate
from app.api.commands import routes as commands
from app.api.fairness import FairGate, Scheduler
from app.api.holds import Holds
from app.api.home import BrowserHome
from app.api.idempotency import Idempotency
from app.api.loading import LoadingGate
from app.api.metered import metered
from app.api.quotas import StorageBook
from app.api.rates import RateDefaults, RateGate
from app.api.raw_paths import RawPaths
from app.api.rest import (
    compiled,
    consumers,
    delivery,
    entries,
    fallback,
    groups,
    metrics,
    pel,
    reads,
    streams,
    webhooks,
    whoami,
)
from app.api.services import Services
from app.api.sse import routes as events
from app.api.sse.registry import SseRegistry
from app.api.sse.tail import Tails
from app.backends import Backend, open_backend, service_limits
from app.backends.embedded import EmbeddedBackend
from app.delivery import WebhookRunner, store_pause
from app.durability import Readiness, ReadyState
from app.engine.keyspace import StreamConfig
from app.engine.store import Store
from app.lifespan import Runtime
from app.observe import JournalFigures, Metrics, Observe, SseFigures
from app.settings import Settings
from app.storage import Storage
from app.storage.keys import KeyStore

log = logging.getLogger("xstreams")


DESCRIPTION = """\
Streams, entries, consumer groups, consumers and pending entries as REST resources under
`/v1`, with Redis 7.0 stream semantics: each operation names the Redis command it models and
behaves as redis-server does.

xstreams follows Redis 7.0, plus these later stream commands, each named with the Redis
version that brought it where an operation uses it: XDELEX, XACKDEL and the reference
policies KEEPREF / DELREF / ACKED on XADD and XTRIM (Redis 8.2), XREADGROUP's CLAIM option
(Redis 8.4), idempotent appends with XADD's IDMP / IDMPAUTO and XCFGSET (Redis 8.6) and XNACK
(Redis 8.8). In front of a Redis server older than that, an operation that needs one answers
that server's error.

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
- A name in a path is one percent-encoded segment: `/` is `%2F` (the key `v1/stream/orders`
  is `/v1/streams/v1%2Fstream%2Forders`), `%` is `%25`. A literal `/` separates segments.
"""

TAGS = [
    {
        "name": "streams",
        "description": "Streams as a whole: SCAN, XINFO STREAM, DEL, XTRIM, XSETID.",
    },
    {
        "name": "entries",
        "description": "Append, range, long-poll and delete entries: XADD, XRANGE, XREAD, XDEL,"
        " XDELEX.",
    },
    {"name": "groups", "description": "Consumer groups: XINFO GROUPS, XGROUP."},
    {
        "name": "consumers",
        "description": "Consumers and their reads: XINFO CONSUMERS, XGROUP, XREADGROUP.",
    },
    {
        "name": "pending entries",
        "description": "The PEL: XACK, XACKDEL, XNACK, XPENDING, XCLAIM, XAUTOCLAIM.",
    },
    {
        "name": "delivery",
        "description": "What the service adds to Redis (docs/concepts/delivery-policies.md):"
        " a group's delivery policy (visibility timeout, back-off, dead-letter "
        "stream), a dead-letter stream's redrive, a stream's retention.",
    },
    {
        "name": "webhooks",
        "description": "A group's push consumers: each a consumer (XGROUP CREATECONSUMER) whose"
        " entries the service POSTs to an HTTP endpoint, signed (Standard Webhooks).",
    },
    {"name": "access", "description": "The caller's own grant: ACL WHOAMI."},
]


def create_app(
    settings: Settings | None = None,
    *,
    on_fatal: Callable[[], None] | None = None,
    store: Store | None = None,
    backend: Backend | None = None,
) -> FastAPI:
    """The whole service from one ``Settings`` (the environment's when none is given, as each
    ``--workers`` process builds it). ``on_fatal`` stops the server when it must not serve
    (``xstreams serve``: a failed recovery, protected mode).

    ``store`` and ``backend`` stand in for what ``settings`` would open, for callers that must
    not open a database: ``store``, the engine over an in-memory store (tests, ``xstreams
    openapi``); ``backend``, a backend the caller built (tests)."""
    settings = settings or Settings()
    given = store is not None or backend is not None
    parts = _given(store, backend) if given else _opened(settings)
    services = _services(settings, parts)
    run = Runtime(services, parts.store, parts.storage, parts.keys, on_fatal=on_fatal)
    app = _application(run)
    _install_routes(app, run)
    _install_middleware(app, services)
    return app


@dataclass(frozen=True, slots=True)
class _Parts:
    """What serves the streams and what keeps them, before anything is wired to them."""

    # The embedded engine's keyspace. None exactly when Redis serves: nothing of the keyspace
    # lives here.
    store: Store | None
    storage: Storage | None = None  # the store's journal, snapshots and API keys
    keys: KeyStore | None = None  # where the API keys are read from, if anywhere
    backend: Backend | None = None  # built by the caller; else over the store, or Redis's


def _opened(settings: Settings) -> _Parts:
    """What ``settings`` name: the durable engine, or Redis with the API keys in the SQL
    database (the same URL ``xstreams keys`` writes, shared by every front-end)."""
    if not settings.embedded:
        return _Parts(store=None, keys=KeyStore.at(settings.resolved_database_url()))
    storage = Storage(settings)
    config = StreamConfig(
        settings.stream_node_max_entries,
        settings.stream_node_max_bytes,
        settings.idmp_max_producers,
        xread_last_entry=settings.xread_last_entry,
    )
    store = Store(config=config, journal=storage.writer)
    return _Parts(store, storage, storage.keys)


def _given(store: Store | None, backend: Backend | None) -> _Parts:
    """What the caller built, kept in memory: no journal, no key database. The engine over
    ``store`` whatever ``settings.backend`` says; an embedded ``backend`` brings its store."""
    if isinstance(backend, EmbeddedBackend):
        store = backend.store
    return _Parts(store, backend=backend)


def _services(settings: Settings, parts: _Parts) -> Services:
    store, storage = parts.store, parts.storage
    if store is not None:
        # The engine enforces two of the limits itself, on every surface (keys per read,
        # entries per reply); a store passed in (tests) gets them too. In front of Redis,
        # RedisBackend enforces the same ones (open_backend).
        store.keyspace.limits = service_limits(settings)
        responses = store.keyspace.responses
        responses.window_ms = settings.idempotency_window_s * 1000
        responses.max_keys = settings.idempotency_max_keys
        responses.max_bytes = settings.idempotency_max_bytes
    # Embedded with storage: ready once recovered; in memory: at once; Redis: once it answers.
    ready = store is not None and storage is None
    readiness = Readiness(ReadyState.READY if ready else ReadyState.STARTING)
    if storage is not None:
        storage.on_wait = readiness.set_waiting
    if store is not None:
        info.install(store.keyspace, settings, storage, readiness)
    figures = _metrics(settings, store, storage)
    backend = parts.backend
    if backend is None:
        # Storage and the API meet only here, through the backend: the embedded one gets the
        # journal's Durability (app.durability) and answers only what is durable. With Redis,
        # a reply waits for Redis's answer (and WAIT, inside the backend): nothing more. A
        # store (tests, `xstreams openapi`) means the engine, whatever settings.backend says.
        backend = open_backend(settings, store=store, durability=storage, timer=figures)
    holds = Holds(settings.sse_max_connections_per_key)
    access = _authenticator(settings)
    sse = SseRegistry(settings.sse_max_connections, holds)
    access.keys.on_gone(sse.close_keys)  # revoked keys end their event streams
    services = Services(
        settings=settings,
        # What the surfaces call: appends and reads spend the request's meter there.
        backend=metered(backend),
        readiness=readiness,
        metrics=figures,
        holds=holds,
        access=access,
        sse=sse,
        sse_tails=Tails(backend),
        webhooks=WebhookRunner(
            backend,
            settings,
            backend.webhooks,
            pause=store_pause(backend),
            tally=figures,
            ready=lambda: readiness.state is ReadyState.READY,
        ),
    )
    figures.sse = _sse_figures(services)
    return services


def _application(run: Runtime) -> FastAPI:
    """The bare app: its OpenAPI description, ``run``'s start and stop, and on its state the
    ``Services``, the only thing kept there (app/api/services.py)."""
    app = FastAPI(
        lifespan=run.lifespan,
        title="xstreams",
        version=__version__,
        summary="Redis 7.0 stream semantics served over HTTP.",
        description=DESCRIPTION,
        openapi_tags=TAGS,
        docs_url="/docs",
        redoc_url=None,
    )
    app.state.services = run.services
    return app


def _install_routes(app: FastAPI, run: Runtime) -> None:
    """Every surface, in the order routing needs: the REST resources and event streams before
    the /v1 fallback, the command endpoint's catch-all path route last; then, before them
    all, the compiled /v1 routes, which match exactly what those routes match."""
    errors.install(app)
    probes.install(app, run)
    resources = (streams, entries, reads, groups, consumers, pel, delivery, webhooks, whoami)
    for resource in resources:
        app.include_router(resource.api)
    events.install(app)
    metrics.install(app)
    app.include_router(fallback.router)
    dashboard.install(app)  # /ui/: the dashboard's static files
    openapi.install(app)
    ds.install(app)  # /ds: the Durable Streams protocol (app/api/ds)
    commands.install(app)
    compiled.install(app)  # first: the /v1 routes solved once (app/api/rest/compiled.py)


def _install_middleware(app: FastAPI, services: Services) -> None:
    """From the innermost out: each layer added wraps the ones before it."""
    # Inside the gate: a kept response is the credential's (app/api/idempotency.py).
    app.add_middleware(Idempotency, services=services)
    open_paths = PROBES | dashboard.served_paths()
    settings = services.settings
    # Just inside the rate: past fair_slots a loop turn, credentials take turns (fairness.py).
    if settings.fair_slots:
        app.add_middleware(
            FairGate,
            scheduler=Scheduler(settings.fair_slots, settings.fair_queue_per_key),
            metrics=services.metrics,
            open_paths=open_paths,
        )
    # Inside the gate, outside all else: a request past its credential's rate runs nothing.
    app.add_middleware(
        RateGate,
        backend=lambda: services.backend,
        metrics=services.metrics,
        defaults=RateDefaults.of(settings),
        open_paths=open_paths,
        book=StorageBook(lambda: services.backend, settings.storage_refresh_s),
    )
    app.add_middleware(AccessGate, authenticator=services.access, open_paths=open_paths)
    app.add_middleware(LoadingGate, readiness=services.readiness)
    app.add_middleware(BrowserHome)  # a browser's GET / to /ui/, before any gate (app/api/home)
    app.add_middleware(RawPaths)  # every layer within routes /v1 names by raw segment
    if services.settings.cors_origins:
        _install_cors(app, services.settings.cors_origins)
    # Outermost: each request's ID, count, latency and log line, whoever answers it.
    app.add_middleware(Observe, metrics=services.metrics)


def _install_cors(app: FastAPI, origins: list[str]) -> None:
    """Outermost but one: a preflight is answered before loading or credentials are looked at.
    Named origins are answered with themselves and credentials; "*" (alone: Settings) with
    "*" and never credentials, which the Fetch standard forbids beside it: so no origin that
    is not named ever gets a credentialed answer."""
    app.add_middleware(
        CORSMiddleware,
        allow_origins=origins,
        allow_credentials=origins != ["*"],
        allow_methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
        allow_headers=[
            "Authorization",
            "Content-Type",
            "Idempotency-Key",
            "Last-Event-ID",
            "Upstash-Encoding",
            "X-Request-ID",
            *ds.REQUEST_HEADERS,  # the Durable Streams surface's (app/api/ds)
        ],
        expose_headers=[
            "Location",
            "Link",
            "Retry-After",
            "X-Request-ID",
            "Idempotent-Replayed",
            *ds.RESPONSE_HEADERS,
        ],
        max_age=600,
    )


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


def _sse_figures(services: Services) -> Callable[[], SseFigures]:
    return lambda: SseFigures(
        open=len(services.sse.open),
        closed=services.sse.closed,
        fell_behind=services.sse_tails.fell_behind,
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
