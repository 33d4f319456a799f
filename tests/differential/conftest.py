"""The ``pair`` fixture: each command goes to redis-server and to xstreams, replies compared.

The xstreams side is the session's ``server`` with one HTTP client for the whole session,
flushed before each test exactly as the ``xs`` fixture does: ``xs`` builds a new
``httpx.Client`` per test, whose TLS context alone costs ~75 ms, which over ~850 tests is
most of the suite's run time.

Setting ``XSTREAMS_DIFF_AGAINST=host:port`` points the xstreams side at another redis-server
instead (never the one the tests use as reference); the suite must then pass, which checks
that the tests encode redis-server's behaviour rather than an assumption about it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import Commands
from tests.differential.exact import ExactPair, RedisCommands


@pytest.fixture(scope="session")
def xs_session(request: pytest.FixtureRequest) -> Iterator[Any]:
    """One client on the xstreams server (or the stand-in redis) for the whole session."""
    against = os.environ.get("XSTREAMS_DIFF_AGAINST")
    if against:
        host, _, port = against.rpartition(":")
        stand_in = RedisCommands(host or "127.0.0.1", int(port))
        yield stand_in
        stand_in.close()
        return
    client = Commands(request.getfixturevalue("server").url)
    yield client
    client.client.close()


@pytest.fixture
def pair(real_redis: Any, xs_session: Any) -> Iterator[ExactPair]:
    """Pair(xs, real_redis) with both sides flushed, reading redis-server's replies verbatim."""
    assert xs_session("FLUSHALL") == "OK"
    p = ExactPair(xs_session, real_redis)
    yield p
    p.close()
