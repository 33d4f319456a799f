"""Fixtures for the SSE tests: real ``xstreams serve`` processes on loopback.

httpx's in-process transport cannot stream an endless response, so every test talks to a
server subprocess. The shared one has short heartbeat and retry periods and a small send
buffer, so heartbeats, reconnects and slow-subscriber cut-offs show within seconds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.conftest import Server
from tests.support.targets import Target

HEARTBEAT_MS = 300
RETRY_MS = 100
SEND_BUFFER_BYTES = 64 * 1024
SEND_TIMEOUT_MS = 1000
SSE_ENV = {
    "XSTREAMS_SSE_SEND_TIMEOUT_MS": str(SEND_TIMEOUT_MS),
    "XSTREAMS_SSE_HEARTBEAT_MS": str(HEARTBEAT_MS),
    "XSTREAMS_SSE_RETRY_MS": str(RETRY_MS),
    "XSTREAMS_SSE_SEND_BUFFER_BYTES": str(SEND_BUFFER_BYTES),
}


@pytest.fixture(scope="session")
def sse_server(target: Target, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = target.serve(tmp_path_factory.mktemp(f"sse-{target.name}"), env=SSE_ENV)
    yield srv
    srv.stop()


async def flushed_client(url: str) -> httpx.AsyncClient:
    client = httpx.AsyncClient(base_url=url, timeout=10, limits=httpx.Limits(max_connections=100))
    r = await client.post("/", json=["FLUSHALL"])
    assert r.json() == {"result": "OK"}
    return client


@pytest.fixture
async def client(sse_server: Server) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the shared SSE server, flushed before the test."""
    c = await flushed_client(sse_server.url)
    yield c
    await c.aclose()
