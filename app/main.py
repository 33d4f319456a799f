"""The app factory: wires the engine, the routers and the error table from one Settings."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import Response

from app.api import errors
from app.api.auth import TokenAuth
from app.api.errors import json_response
from app.api.routes import commands
from app.engine.keyspace import StreamConfig
from app.engine.store import Store
from app.settings import Settings


def create_app(settings: Settings | None = None, store: Store | None = None) -> FastAPI:
    settings = settings or Settings()
    app = FastAPI(
        title="xstreams",
        version="0.1.0",
        summary="Redis 7.0 stream semantics served over HTTP.",
        docs_url="/docs",
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.store = store or Store(
        config=StreamConfig(settings.stream_node_max_entries, settings.stream_node_max_bytes)
    )
    errors.install(app)

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> Response:
        return json_response({"status": "ok"})

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> Response:
        return json_response({"status": "ready"})

    # The command endpoint's catch-all path route goes last.
    app.include_router(commands.router)
    if settings.token:
        app.add_middleware(TokenAuth, token=settings.token)
    return app
