"""Bytes that are not UTF-8 against redis-server: the same bytes stored, the same replies.

redis-py writes raw bytes to redis-server; the same commands go to xstreams as JSON with each
such byte as the escape ``\\udcNN``. Every reply must be the same bytes: read plainly (the
escapes mapped back to bytes), and with ``Upstash-Encoding: base64`` (decoded).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.conftest import Commands
from tests.differential.support import mask

KEY, OTHER = b"s\xff", b"s\xfe"
GROUP, ALICE, BOB = b"g\xfe", b"c\xfd", b"\xc3\x28"  # BOB: a broken two-byte sequence
FIELD, VALUE = b"f\xfe\xc3", b"\xff\x00\xc3\xa9\x80"  # é inside a value stays é
ACUTE = "é".encode()

SCRIPT: list[tuple[bytes | str, ...]] = [
    ("XADD", KEY, "1-1", FIELD, VALUE),
    ("XADD", KEY, "2-1", FIELD, b"\x80", b"\xe9t\xe9", VALUE),
    ("XADD", OTHER, "1-1", "a", b"\xfe"),
    ("XRANGE", KEY, "-", "+"),
    ("XREVRANGE", KEY, "+", "-", "COUNT", "1"),
    ("XREAD", "STREAMS", KEY, OTHER, "0", "0"),
    ("XGROUP", "CREATE", KEY, GROUP, "0"),
    ("XGROUP", "CREATECONSUMER", KEY, GROUP, BOB),
    ("XREADGROUP", "GROUP", GROUP, ALICE, "COUNT", "1", "STREAMS", KEY, ">"),
    ("XREADGROUP", "GROUP", GROUP, BOB, "STREAMS", KEY, ">"),
    ("XREADGROUP", "GROUP", GROUP, ALICE, "STREAMS", KEY, "0"),
    ("XPENDING", KEY, GROUP),
    ("XPENDING", KEY, GROUP, "-", "+", "10", BOB),
    ("XCLAIM", KEY, GROUP, BOB, "0", "1-1"),
    ("XAUTOCLAIM", KEY, GROUP, ALICE, "0", "0-0"),
    # Names listed in their bytes' order, as Redis's rax keeps them: 0x80 before é (0xc3 0xa9),
    # and BOB's broken 0xc3 0x28 before é (a str's order would put é first both times).
    ("XGROUP", "CREATE", KEY, ACUTE, "0"),
    ("XGROUP", "CREATE", KEY, b"\x80", "0"),
    ("XCLAIM", KEY, GROUP, ACUTE, "0", "2-1", "JUSTID"),
    ("XPENDING", KEY, GROUP),
    ("XINFO", "GROUPS", KEY),
    ("XINFO", "CONSUMERS", KEY, GROUP),
    ("XINFO", "STREAM", KEY),
    ("XINFO", "STREAM", KEY, "FULL"),
    ("EXISTS", KEY, OTHER, b"s\xfd"),
    ("XDEL", KEY, "2-1"),
    ("XRANGE", KEY, "-", "+"),
]


def as_text(value: Any) -> Any:
    """A reply of raw bytes in the representation: each byte that is not UTF-8 as U+DCNN."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    if isinstance(value, list):
        return [as_text(v) for v in value]
    return value


def from_b64(value: Any) -> Any:
    if isinstance(value, str):
        return base64.b64decode(value).decode("utf-8", "surrogateescape")
    if isinstance(value, list):
        return [from_b64(v) for v in value]
    return value


@pytest.fixture
def raw_redis(real_redis: Any) -> Iterator[redis.Redis]:
    """redis-py on the tests' database, bytes in and bytes out, no reply parsing."""
    kw = real_redis.connection_pool.connection_kwargs
    client = redis.Redis(host=kw["host"], port=kw["port"], db=kw["db"], protocol=2)
    client.response_callbacks.clear()
    yield client
    client.close()


def xstreams(xs: Commands, args: tuple[Any, ...], b64: bool) -> Any:
    headers = {"Upstash-Encoding": "base64"} if b64 else {}
    r = xs.client.post("/", content=json.dumps(as_text(list(args))).encode(), headers=headers)
    assert r.status_code == 200, (args, r.text)
    r.content.decode("utf-8")  # strict UTF-8 on the wire
    return r.json()["result"]


def test_the_same_bytes_as_redis_server(raw_redis: redis.Redis, xs: Commands) -> None:
    for args in SCRIPT:
        expected = as_text(raw_redis.execute_command(*args))
        plain = xstreams(xs, args, b64=False)
        text_args = tuple(as_text(list(args)))
        assert mask(text_args, plain) == mask(text_args, expected), (args, expected, plain)
        if args[0] in ("XRANGE", "XREAD", "XINFO", "XPENDING"):
            decoded = from_b64(xstreams(xs, args, b64=True))
            assert mask(text_args, decoded) == mask(text_args, expected), (args, decoded)


def test_what_xstreams_stored_is_what_redis_py_stored(raw_redis: redis.Redis, xs: Commands) -> None:
    """Written as ``\\udcNN`` escapes, read back by base64: redis-py's raw bytes exactly."""
    raw_redis.execute_command("XADD", KEY, "1-1", FIELD, VALUE)
    xstreams(xs, ("XADD", KEY, "1-1", FIELD, VALUE), b64=False)
    stored = raw_redis.execute_command("XRANGE", KEY, "-", "+")
    reply = xstreams(xs, ("XRANGE", KEY, "-", "+"), b64=True)
    assert [[base64.b64decode(x) for x in [e[0], *e[1]]] for e in reply] == [
        [e[0], *e[1]] for e in stored
    ]
