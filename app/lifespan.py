"""What runs between start and stop: recovery (embedded) or the connection to Redis, the API
keys before the first request is served and their refresh after, protected mode, and the
shutdown order. Kept apart from the app factory, which only wires: this is the part with
timing, retries and failure modes."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from fastapi import FastAPI

from app.api.services import Services
from app.backends import Backend
from app.delivery import Retainer
from app.durability import ReadyState
from app.engine.store import Store
from app.settings import Settings
from app.storage import Storage
from app.storage.keys import KeyStore
from app.storage.writer import describe

log = logging.getLogger("xstreams")


@dataclass(slots=True)
class Runtime:
    """What start and stop use beside the ``Services``: the parts they open, recover and
    close, which no request handler touches. ``create_app`` builds it and hands its
    ``lifespan`` to FastAPI; ``/readyz`` reads it too (app/probes.py)."""

    services: Services
    # The embedded engine's keyspace, recovered into at start (None: Redis serves).
    store: Store | None
    # Its journal, snapshots and API keys (None: in memory, or Redis).
    storage: Storage | None
    # Where the API keys are read from, if anywhere (``storage.keys`` when embedded and
    # durable; their own SQL database in front of Redis).
    keys: KeyStore | None
    # Stops the server when recovery fails or protected mode refuses (set by ``xstreams
    # serve``), instead of serving a wrong or open state.
    on_fatal: Callable[[], None] | None = None
    # Why the API keys could not be read (None: read); /readyz shows it in front of Redis.
    keys_problem: str | None = None
    keys_refresh: asyncio.Task[None] | None = None
    # The background retention sweeps (app/delivery), on either backend.
    retention: asyncio.Task[None] | None = None
    # The webhook loops (``Services.webhooks``): stopped before the backend closes, since
    # what they hold in flight still acknowledges or releases through it.
    webhooks: asyncio.Task[None] | None = None

    def lifespan(self, app: FastAPI) -> contextlib.AbstractAsyncContextManager[None]:
        """FastAPI's ``lifespan``: this runtime's start and stop, whatever app runs it."""
        return lifespan(self)


@contextlib.asynccontextmanager
async def lifespan(run: Runtime) -> AsyncIterator[None]:
    """Recovery (embedded) or the first answer to PING (Redis) runs in the background, so
    /readyz can answer 503 meanwhile; a clean shutdown commits the journal and takes a
    snapshot (embedded), and closes the backend's connections."""
    backend, readiness, storage = run.services.backend, run.services.readiness, run.storage
    await backend.start()
    task: asyncio.Task[None] | None = None
    if storage is not None:
        readiness.state = ReadyState.RECOVERING
        task = asyncio.create_task(_recover(run, storage))
    elif readiness.state is not ReadyState.READY:
        task = asyncio.create_task(_connect(run, backend))
    run.retention = asyncio.create_task(retainer(run).run(), name="retention")
    run.webhooks = asyncio.create_task(run.services.webhooks.run(), name="webhooks")
    try:
        yield
    finally:
        for background in (run.keys_refresh, run.retention, run.webhooks):
            if background is not None:
                background.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await background
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        elif storage is not None and readiness.state is ReadyState.READY:
            await storage.stop()
        await backend.close()
        if storage is None and run.keys is not None:
            run.keys.close()  # Redis: the keys' own database (Storage closes its own)


def retainer(run: Runtime) -> Retainer:
    """The retention sweeps for this service: its backend, the settings' glob defaults,
    counted in its metrics, idle until the backend is ready (recovered, connected)."""
    services = run.services
    settings, metrics, readiness = services.settings, services.metrics, services.readiness
    return Retainer(
        services.backend,
        settings.retention_defaults(),
        settings.retention_interval_s,
        settings.retention_step,
        ready=lambda: readiness.state is ReadyState.READY,
        trimmed=metrics.retention_trimmed,
        failed=metrics.retention_failed,
    )


async def _connect(run: Runtime, backend: Backend) -> None:
    """A Redis backend: ready once it answers PING and the API keys are read. Until then
    requests are refused at once with the reason (``Readiness.waiting``), and PING is
    retried."""
    readiness, keys = run.services.readiness, run.keys
    if keys is None and _unprotected(run):  # with keys: once they are known
        return
    readiness.state = ReadyState.RECOVERING  # connecting: the state /readyz shows
    failing = False
    while True:
        try:
            await asyncio.wait_for(backend.command(["PING"]), CONNECT_TIMEOUT_S)
        except Exception as e:
            reason = f"the {backend.name} backend does not answer: {e or type(e).__name__}"
            if not failing:
                log.warning("%s; retrying", reason)
            failing = True
            readiness.set_waiting(reason)
            await asyncio.sleep(CONNECT_RETRY_S)
            continue
        readiness.set_waiting(None)
        break
    if keys is not None:
        await _first_keys(run, keys)
        if _unprotected(run):
            return
        run.keys_refresh = asyncio.create_task(_refresh_keys(run, keys), name="keys")
    readiness.set_ready()


async def _first_keys(run: Runtime, keys: KeyStore) -> None:
    """Read the API keys before a Redis front-end is ready, as the embedded engine does
    before it is (a service with keys must never answer as an open one).

    When the key database cannot be read (a PostgreSQL server away, a wrong URL, a data
    folder that cannot be written), the choice depends on what else is configured. With an
    admin token or JWT verification, the front-end serves those callers anyway: the streams
    are Redis's and Redis answers, so a key database outage should not take every front-end
    out of rotation; API keys are refused (401) until the periodic refresh reads them, and
    /readyz says why under ``keys``. With nothing else configured, serving would mean serving
    an open service while keys may exist, so it stays not ready, the reason in /readyz and
    in each refusal, retrying."""
    authenticator, readiness = run.services.access, run.services.readiness
    others = authenticator.enabled  # the ring is still empty: a token or a JWT verifier
    told: str | None = None
    while True:
        try:
            authenticator.keys.replace(await keys.load())
            break
        except Exception as e:
            reason = f"cannot read the API keys from {keys.url}: {describe(e)}"
            if others:
                log.error(
                    "%s; serving the admin token and JWTs meanwhile, API keys are refused"
                    " until it can be read (retrying every %g s)",
                    reason,
                    run.services.settings.keys_refresh_ms / 1000,
                )
                run.keys_problem = reason
                return
            waiting = (
                f"{reason}; no token or JWT is configured, so nothing can be served safely;"
                f" retrying every {CONNECT_RETRY_S:g} s"
            )
            if waiting != told:
                log.error("%s", waiting)
                told = waiting
            readiness.set_waiting(waiting)
            await asyncio.sleep(CONNECT_RETRY_S)
    if told is not None:
        log.warning("the API keys are read from %s now", keys.url)
        readiness.set_waiting(None)


CONNECT_TIMEOUT_S = 2.0
CONNECT_RETRY_S = 0.5


def _unprotected(run: Runtime) -> bool:
    """Protected mode, as Redis's: a non-loopback address with no credentials configured stops
    the service instead of serving it open (unless --insecure-no-auth)."""
    settings, authenticator = run.services.settings, run.services.access
    if authenticator.enabled or settings.insecure_no_auth or _loopback(settings):
        return False
    refusal = PROTECTED_MODE.format(host=settings.host)
    log.critical(refusal)
    _stop(run, refusal)
    return True


async def _recover(run: Runtime, storage: Storage) -> None:
    readiness, authenticator = run.services.readiness, run.services.access
    assert run.store is not None  # storage is the embedded engine's
    try:
        await storage.start(run.store)
        # Keys before ready: a service with keys must never answer as an open one.
        authenticator.keys.replace(await storage.keys.load())
    except Exception as e:
        log.critical("recovery failed, stopping: %s", e)
        _stop(run, f"recovery failed: {e}")
        return
    if _unprotected(run):
        await storage.stop()
        return
    run.keys_refresh = asyncio.create_task(_refresh_keys(run, storage.keys), name="keys")
    readiness.set_ready()


PROTECTED_MODE = (
    "refusing to serve {host} with no credentials configured (protected mode): anyone who can"
    " reach it could read, write and flush every stream. Set a token (--token), create an API"
    " key (xstreams keys create --name NAME --read GLOB ...) or accept JWTs (--jwt-secret,"
    " --jwt-public-key); or bind to 127.0.0.1; or pass --insecure-no-auth to serve it open"
)


def _loopback(settings: Settings) -> bool:
    if settings.host == "localhost":
        return True
    try:
        return ipaddress.ip_address(settings.host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def _stop(run: Runtime, error: str) -> None:
    run.services.readiness.set_failed(error)
    if run.on_fatal is not None:
        run.on_fatal()


async def _refresh_keys(run: Runtime, keys: KeyStore) -> None:
    """Re-read the API keys, on either backend, so ``xstreams keys`` takes effect without a
    restart; keys that went away (revoked, deleted, expired) end their event streams (the
    ring tells the SSE registry)."""
    ring = run.services.access.keys
    every_s = run.services.settings.keys_refresh_ms / 1000
    failing = run.keys_problem is not None  # told already (``_first_keys``)
    while True:
        await asyncio.sleep(every_s)
        try:
            records = await keys.load()
        except Exception as e:  # the database is away: keep the keys known so far
            run.keys_problem = f"cannot read the API keys from {keys.url}: {describe(e)}"
            if not failing:
                log.warning("%s; keeping the known ones", run.keys_problem)
            failing = True
            continue
        if failing:
            log.warning("the API keys are read from %s again", keys.url)
        failing = False
        run.keys_problem = None
        ring.replace(records, time.time_ns() // 1_000_000)
