"""An app served in process (httpx's ASGITransport), for tests that set limits of their own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from app.engine.store import Store
from app.main import create_app
from app.settings import Settings


@asynccontextmanager
async def serve(store: Store | None = None, **settings: Any) -> AsyncIterator[httpx.AsyncClient]:
    """A client on ``create_app(Settings(**settings))`` with an in-memory store."""
    app = create_app(Settings(**settings), store=store or Store())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://xs") as client:
        yield client
