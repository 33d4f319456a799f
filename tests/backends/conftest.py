"""Fixtures for tests that hold both backends to one behaviour."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from app.backends.embedded import EmbeddedBackend
from app.backends.redis import RedisBackend
from app.backends.roles import StreamsRole
from app.engine.store import Store
from tests.backends.test_redis_backend import _flush_cluster, _standalone_url


async def redis_backend(request: pytest.FixtureRequest, where: str) -> RedisBackend:
    if where == "standalone":
        url = _standalone_url()
    else:
        nodes: list[str] = request.getfixturevalue("cluster_nodes")
        _flush_cluster(nodes)
        url = "redis+cluster://" + ",".join(nodes)
    b = RedisBackend.from_url(url, block_connections=4)
    await b.start()
    return b


@pytest.fixture(params=["embedded", "standalone", "cluster"])
async def streams(request: pytest.FixtureRequest) -> AsyncIterator[StreamsRole]:
    """The embedded backend, then a Redis backend on a server, then on a cluster."""
    if request.param == "embedded":
        yield EmbeddedBackend(Store())
        return
    b = await redis_backend(request, request.param)
    yield b
    await b.close()


@pytest.fixture(params=["standalone", "cluster"])
async def in_redis(request: pytest.FixtureRequest) -> AsyncIterator[RedisBackend]:
    b = await redis_backend(request, request.param)
    yield b
    await b.close()
