"""The ``pair`` fixture: each command goes to redis-server and to xstreams, replies compared.

Setting ``XSTREAMS_DIFF_AGAINST=host:port`` points the xstreams side at another redis-server
instead (never the one the tests use as reference); the suite must then pass, which checks
that the tests encode redis-server's behaviour rather than an assumption about it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.differential.exact import ExactPair, RedisCommands


@pytest.fixture
def pair(request: pytest.FixtureRequest, real_redis: Any) -> Iterator[ExactPair]:
    """Pair(xs, real_redis), reading redis-server's replies verbatim."""
    against = os.environ.get("XSTREAMS_DIFF_AGAINST")
    if against:
        host, _, port = against.rpartition(":")
        xs: Any = RedisCommands(host or "127.0.0.1", int(port))
    else:
        xs = request.getfixturevalue("xs")
    p = ExactPair(xs, real_redis)
    yield p
    p.close()
    if isinstance(xs, RedisCommands):
        xs.close()
