"""Fixtures for the three-target tests: one front-end per target for the session, its
keyspace flushed before each test (tests/support/targets.py)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import Commands
from tests.support.targets import (
    CLUSTER,
    EMBEDDED,
    TARGET_PARAMS,
    Frontend,
    Target,
    cluster_url,
    redis_url,
    require_redis,
)


@pytest.fixture(scope="session")
def cluster_nodes() -> Iterator[list[str]]:
    """One 3-master Redis Cluster for the session, started on first use."""
    from tests.support.redis_cluster import cluster_or_skip

    with cluster_or_skip() as nodes:
        yield nodes


@pytest.fixture(scope="session", params=TARGET_PARAMS)
def target(request: pytest.FixtureRequest) -> Target:
    name: str = request.param
    if name == EMBEDDED:
        return Target(EMBEDDED, "embedded")
    if name == CLUSTER:
        return Target(CLUSTER, cluster_url(request.getfixturevalue("cluster_nodes")))
    require_redis()
    return Target(name, redis_url())


@pytest.fixture(scope="session")
def front(target: Target, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Frontend]:
    srv = target.serve(tmp_path_factory.mktemp(f"front-{target.name}"))
    yield srv
    srv.stop()


@pytest.fixture
def tx(front: Frontend) -> Iterator[Commands]:
    """The target's command endpoint, its keyspace flushed (FLUSHALL: the tests' database
    on redis-server, every master of the cluster)."""
    c = Commands(front.url)
    assert c("FLUSHALL") == "OK"
    yield c
    c.client.close()


@pytest.fixture
def api(front: Frontend, tx: Commands) -> Iterator[httpx.Client]:
    """A raw client on the (flushed) target, for REST and the protocol's details."""
    with httpx.Client(base_url=front.url, timeout=15) as client:
        yield client
