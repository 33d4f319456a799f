"""``/healthz`` and ``/readyz``: whether the process answers, and whether it serves.

``/readyz`` reports how far start got (``app.lifespan``): recovering or connecting, waiting
for a database and why, failed; once ready, what serves and the state of what it depends on
(the journal's database embedded; Redis, its shards and the API keys' database in front of
Redis). Both pass the access and loading gates (``PROBES``), so a load balancer sees "alive,
not ready" without credentials.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from fastapi import FastAPI
from fastapi.responses import Response

from app.api.errors import json_response
from app.backends.shards import ReportsShards, readiness_fields
from app.durability import ReadyState
from app.lifespan import CONNECT_TIMEOUT_S, Runtime

__all__ = ["install"]


def install(app: FastAPI, run: Runtime) -> None:
    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> Response:
        return json_response({"status": "ok"})

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> Response:
        return await ready(run)


async def ready(run: Runtime) -> Response:
    readiness, backend = run.services.readiness, run.services.backend
    # ``backend``: what serves (never its URL, which may hold a password); ``pid``: which
    # worker process answered, when several share the port.
    body: dict[str, Any] = {"status": "ready", "backend": backend.name, "pid": os.getpid()}
    if readiness.state is not ReadyState.READY:
        body.update(status=readiness.state.value, error=readiness.error)
        if readiness.waiting is not None:
            body["reason"] = readiness.waiting
        return json_response(body, 503)
    if run.store is None:
        if run.keys is not None:
            body["keys"] = run.keys_problem or "ok"
        # Redis: ready while it answers, so a load balancer takes a front-end that lost it
        # out of rotation. A degraded shard (app/backends/shards.py) is named, and leaves it
        # ready: every front-end sees the same shards.
        try:
            await asyncio.wait_for(backend.command(["PING"]), CONNECT_TIMEOUT_S)
        except Exception as e:
            body.update(status="unavailable", reason=str(e) or type(e).__name__)
            return json_response(body, 503)
        if isinstance(backend, ReportsShards):
            body.update(readiness_fields(await backend.shards(CONNECT_TIMEOUT_S)))
        return json_response(body)
    failure = run.storage.writer.failure if run.storage else None
    # Still ready while the database is away: committed state is served, writes and reads
    # of what is not durable yet answer 503.
    body["storage"] = failure.reason if failure else "ok"
    return json_response(body)
