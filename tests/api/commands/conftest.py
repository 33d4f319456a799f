"""Fixtures for the command endpoint's tests: raw httpx clients against the shared xstreams server.

The ``xs`` fixture (tests/conftest.py) flushes the server; every fixture here depends on it so each
test starts from an empty keyspace.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.api.support import Background
from tests.conftest import Commands, Server


@pytest.fixture
def http(server: Server, xs: Commands) -> Iterator[httpx.Client]:
    """A raw sync client on the (freshly flushed) server, for requests ``Commands`` can't make."""
    with httpx.Client(base_url=server.url, timeout=10) as client:
        yield client


@pytest.fixture
async def ahttp(server: Server, xs: Commands) -> AsyncIterator[httpx.AsyncClient]:
    """A raw async client on the (freshly flushed) server, for concurrent requests."""
    limits = httpx.Limits(max_connections=50, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=server.url, timeout=15, limits=limits) as client:
        yield client


@pytest.fixture
async def bg() -> AsyncIterator[Background]:
    """Start background tasks with ``bg.spawn(coro)``; they never outlive the test."""
    background = Background()
    try:
        yield background
    finally:
        await background.close()
