"""Backends: what the surfaces call (``Backend``) and what stands behind it."""

from __future__ import annotations

from app.backends.base import Backend, ClientGone, CommandTimer, Gone, JsonReply
from app.durability import Durability
from app.engine.limits import Limits
from app.engine.store import Store
from app.settings import Settings

__all__ = [
    "Backend",
    "ClientGone",
    "CommandTimer",
    "Gone",
    "JsonReply",
    "open_backend",
    "service_limits",
    "workers_refusal",
]


def service_limits(settings: Settings) -> Limits:
    """The limits on the work one command may ask for, as ``settings`` set them: the engine
    enforces them on its keyspace, ``RedisBackend`` in front of Redis (the same rules)."""
    return Limits(
        read_keys=settings.max_read_keys,
        reply_entries=settings.max_reply_entries,
        restore_bytes=settings.max_restore_bytes,
        restore_node_entries=settings.max_restore_node_entries,
        stream_groups=settings.max_stream_groups,
        group_consumers=settings.max_group_consumers,
    )


def open_backend(
    settings: Settings,
    *,
    store: Store | None = None,
    durability: Durability | None = None,
    timer: CommandTimer | None = None,
) -> Backend:
    """The backend that serves, not started yet (``start()`` connects).

    Given a ``store``, or with ``settings.embedded``: the engine over ``store`` (a new
    in-memory one if none is given), answering only what ``durability`` (the journal that
    ``store`` writes to, if any) has made durable. Otherwise the Redis URL ``settings.backend``
    names: redis-py's client for it, imported only then, so the embedded default needs no
    Redis library. ``timer`` receives the command endpoint's per-command figures where the
    backend can time its own work (the embedded engine); Redis's are its own, in INFO
    commandstats.
    """
    if store is not None or settings.embedded:
        from app.backends.embedded import EmbeddedBackend

        return EmbeddedBackend(
            store or Store(),
            durability=durability,
            timer=timer,
            pipeline_slice_ms=settings.pipeline_slice_ms,
        )
    from app.backends.redis import RedisBackend

    backend: Backend = RedisBackend.from_url(
        settings.backend,
        wait_replicas=settings.wait_replicas,
        wait_timeout_ms=settings.wait_timeout_ms,
        block_connections=settings.redis_block_connections,
        limits=service_limits(settings),
        idempotency_window_ms=settings.idempotency_window_s * 1000,
    )
    return backend


def workers_refusal(settings: Settings) -> str | None:
    """Why ``settings`` cannot run as several worker processes, or None when they can."""
    if settings.workers > 1 and settings.embedded:
        return (
            f"--workers {settings.workers} needs a shared backend: the embedded engine keeps"
            " its keyspace in one process, so it serves with one worker (use --backend"
            " redis://... or redis+cluster://... to run several)"
        )
    return None
