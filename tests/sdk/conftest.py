"""The Upstash SDKs (Python and JavaScript) run against every target
(tests/support/targets.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.redis_servers import RedisProcess, redis8_or_skip
from tests.support.targets import three_targets


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test here that reaches the session's server runs on the three targets."""
    three_targets(metafunc)


@pytest.fixture(scope="module")
def redis8() -> Iterator[RedisProcess]:
    """redis-server 8.x, the reference for the commands Redis added after 7.0."""
    with redis8_or_skip() as server:
        yield server
