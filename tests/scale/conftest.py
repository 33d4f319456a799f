"""Fixtures for the three-target tests: one front-end per target for the session, its
keyspace flushed before each test (tests/support/targets.py)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import Commands
from tests.support.targets import Frontend, three_targets


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    three_targets(metafunc)


@pytest.fixture(scope="session")
def front(server: Frontend) -> Frontend:
    """The session's front-end on the target (tests/conftest.py's ``server``)."""
    return server


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
