"""The ``pair`` fixture: each command goes to redis-server and to xstreams, replies compared.

The xstreams side is the session's ``server`` with one HTTP client for the whole session,
flushed before each test exactly as the ``xs`` fixture does: ``xs`` builds a new
``httpx.Client`` per test, whose TLS context alone costs ~75 ms, which over ~850 tests is
most of the suite's run time.

Every test runs twice (``xs_mode``): first against the app served in process (the command
endpoint's own handling and reply encoding, no sockets: the whole suite in seconds), then over
real HTTP against the ``xstreams serve`` subprocess. The HTTP pass is marked ``server``.

Setting ``XSTREAMS_DIFF_AGAINST=host:port`` points the xstreams side at another redis-server
instead (never the one the tests use as reference); the suite must then pass, which checks
that the tests encode redis-server's behaviour rather than an assumption about it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.api.inproc import InprocCommands
from tests.conftest import Commands
from tests.differential.exact import ExactPair, RedisCommands, RespClient
from tests.differential.redis8 import Pair8
from tests.support.redis_servers import RedisProcess, redis8_or_skip

XS_MODES = ["inproc", "http"]


@pytest.fixture(scope="session", params=XS_MODES)
def xs_mode(request: pytest.FixtureRequest) -> str:
    """How the xstreams side is reached: ``inproc`` (the app in this process) or ``http``."""
    return str(request.param)


@pytest.fixture(scope="session")
def xs_client(request: pytest.FixtureRequest, xs_mode: str) -> Iterator[Any]:
    """One client on xstreams, in process or over HTTP, for the whole session (the ``xs``
    fixture, tests/conftest.py, flushes it before each test)."""
    if xs_mode == "inproc":
        client: Any = InprocCommands()
    else:
        client = Commands(request.getfixturevalue("server").url)
    yield client
    client.client.close()


@pytest.fixture(scope="session")
def xs_session(request: pytest.FixtureRequest, xs_mode: str) -> Iterator[Any]:
    """One client on xstreams (or the stand-in redis) for the whole session."""
    against = os.environ.get("XSTREAMS_DIFF_AGAINST")
    if against:
        if xs_mode != "http":
            pytest.skip("XSTREAMS_DIFF_AGAINST: the stand-in is checked once, in the http pass")
        host, _, port = against.rpartition(":")
        stand_in = RedisCommands(host or "127.0.0.1", int(port))
        yield stand_in
        stand_in.close()
        return
    yield request.getfixturevalue("xs_client")


@pytest.fixture
def pair(real_redis: Any, xs_session: Any) -> Iterator[ExactPair]:
    """Pair(xs, real_redis) with both sides flushed, reading redis-server's replies verbatim."""
    assert xs_session("FLUSHALL") == "OK"
    p = ExactPair(xs_session, real_redis)
    yield p
    p.close()


@pytest.fixture(scope="session")
def redis8() -> Iterator[RedisProcess]:
    """A redis-server 8.x of the session's own (its node limits are set by the tests)."""
    with redis8_or_skip() as server:
        yield server


@pytest.fixture
def pair8(redis8: RedisProcess, xs_session: Any) -> Iterator[Pair8]:
    """Pair8(xs, redis-server 8.x), both flushed, node limits at Redis's defaults before and
    after (the xstreams side is shared with the rest of the session)."""
    resp = RespClient("127.0.0.1", redis8.port)
    assert xs_session("FLUSHALL") == "OK" and resp("FLUSHALL") == "OK"
    p = Pair8(xs_session, resp)
    p.config(100, 4096)
    yield p
    p.config(100, 4096)
    p.close()
