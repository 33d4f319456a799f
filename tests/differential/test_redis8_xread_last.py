"""XREAD's ``+`` ID (the last entry, Redis 7.4) against redis-server 8.6, on an engine with
``xread_last_entry`` on (the service setting ``XSTREAMS_XREAD_LAST_ENTRY``). Off, the engine
refuses ``+`` as Redis 7.0 does (test_xread.py holds that).

Cases from Redis 8.6's own stream.tcl ("XREAD last element ...") and around them: COUNT is
ignored for a ``+`` stream only, the last *live* entry after XDEL, a stream without entries
and a missing key answer nothing, several streams and a key named twice, BLOCK with an entry
there answers at once, XREADGROUP refuses ``+``. Blocked reads woken by writes are in
tests/engine/test_xread_last.py (8.6 answered each first)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.api.inproc import InprocCommands
from tests.differential.exact import RespClient
from tests.differential.redis8 import Pair8
from tests.support.redis_servers import RedisProcess

MAX_SEQ = "18446744073709551615"


@pytest.fixture
def last8(redis8: RedisProcess) -> Iterator[Pair8]:
    xs = InprocCommands()
    xs.store.keyspace.config.xread_last_entry = True
    resp = RespClient("127.0.0.1", redis8.port)
    assert resp("FLUSHALL") == "OK"
    p = Pair8(xs, resp)
    yield p
    p.close()
    xs.client.close()


def test_the_last_entry_of_each_stream(last8: Pair8) -> None:
    p = last8
    p.run(
        ("XREAD", "STREAMS", "s", "+"),
        ("XADD", "s", "1-0", "k1", "v1"),
        ("XADD", "s", "2-0", "k2", "v2"),
        ("XADD", "s", "3-0", "k3", "v3"),
        ("XREAD", "STREAMS", "s", "+"),
        ("XREAD", "COUNT", "3", "STREAMS", "s", "+"),
        ("XREAD", "COUNT", "0", "STREAMS", "s", "+"),
        ("XREAD", "BLOCK", "1000000", "STREAMS", "s", "+"),
        ("XADD", "s", f"3-{int(MAX_SEQ) - 1}", "k4", "v4"),
        ("XADD", "s", f"3-{MAX_SEQ}", "k5", "v5"),
        ("XREAD", "STREAMS", "s", "+"),
        ("XDEL", "s", f"3-{MAX_SEQ}"),
        ("XREAD", "STREAMS", "s", "+"),
        ("XADD", "t", "0-1", "a", "1"),
        ("XREAD", "STREAMS", "t", "+"),
        ("XREAD", "STREAMS", "s", "t", "nokey", "+", "+", "+"),
        ("XREAD", "COUNT", "5", "STREAMS", "s", "s", "0", "+"),
        ("XREAD", "COUNT", "5", "STREAMS", "s", "s", "+", "0"),
        ("XREAD", "COUNT", "2", "STREAMS", "s", "t", "0", "+"),
        ("XREAD", "STREAMS", "s", "+1"),
        ("XDEL", "t", "0-1"),
        ("XREAD", "STREAMS", "t", "+"),
        ("XREAD", "STREAMS", "nokey", "+"),
        ("XGROUP", "CREATE", "e", "g", "$", "MKSTREAM"),
        ("XREAD", "STREAMS", "e", "+"),
        ("XREAD", "BLOCK", "10", "STREAMS", "e", "+"),
    )


def test_xreadgroup_refuses_plus(last8: Pair8) -> None:
    p = last8
    p.run(
        ("XADD", "s", "1-0", "f", "v"),
        ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "+"),
        ("XGROUP", "CREATE", "s", "g", "0"),
        ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "+"),
        ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "s", ">", "+"),
        ("XREAD", "STREAMS", "s", "-"),
        ("XREAD", "STREAMS", "s", "s", "+", "bad"),
    )
