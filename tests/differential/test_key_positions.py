"""The command table's key positions agree with redis-server's ``COMMAND GETKEYS``.

Durability waits and (later) access checks both trust these positions to name every key a
command reads or changes, so they are compared with Redis's own key specs, line by line.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.engine.commands import lookup

LINES = [
    ["XADD", "s", "*", "f", "v"],
    ["XADD", "s", "NOMKSTREAM", "MAXLEN", "~", "10", "*", "f", "v"],
    ["XTRIM", "s", "MAXLEN", "0"],
    ["XRANGE", "s", "-", "+"],
    ["XREVRANGE", "s", "+", "-", "COUNT", "1"],
    ["XLEN", "s"],
    ["XDEL", "s", "1-1", "2-2"],
    ["XSETID", "s", "5-5"],
    ["XREAD", "STREAMS", "a", "0"],
    ["XREAD", "COUNT", "1", "BLOCK", "5", "STREAMS", "a", "b", "0", "$"],
    ["XREAD", "STREAMS", "streams", "0"],
    ["XREAD", "STREAMS", "a", "streams", "0", "0"],
    ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", ">"],
    ["XREADGROUP", "GROUP", "streams", "c", "NOACK", "STREAMS", "a", "b", ">", "0"],
    ["XREADGROUP", "GROUP", "g", "streams", "COUNT", "2", "STREAMS", "streams", ">"],
    ["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"],
    ["XGROUP", "SETID", "s", "g", "0"],
    ["XGROUP", "DESTROY", "s", "g"],
    ["XGROUP", "CREATECONSUMER", "s", "g", "c"],
    ["XGROUP", "DELCONSUMER", "s", "g", "c"],
    ["XACK", "s", "g", "1-1"],
    ["XPENDING", "s", "g", "-", "+", "10"],
    ["XCLAIM", "s", "g", "c", "0", "1-1"],
    ["XAUTOCLAIM", "s", "g", "c", "0", "0"],
    ["XINFO", "STREAM", "s", "FULL"],
    ["XINFO", "GROUPS", "s"],
    ["XINFO", "CONSUMERS", "s", "g"],
    ["DEL", "a", "b", "c"],
    ["EXISTS", "a", "b"],
    ["TYPE", "s"],
    ["RENAME", "a", "b"],
    ["RENAMENX", "a", "b"],
    ["DUMP", "s"],
    ["RESTORE", "s", "0", "payload", "REPLACE"],
]

NO_KEYS = [
    ["PING"],
    ["ECHO", "x"],
    ["XGROUP", "HELP"],
    ["XINFO", "HELP"],
    ["CONFIG", "GET", "*"],
    ["CONFIG", "RESETSTAT"],
    ["CONFIG", "HELP"],
]
# INFO (its keyspace and clients) and CONFIG SET (how every stream grows) are about the
# whole keyspace: replies wait for every pending record, and only the admin may run them.
KEYSPACE = [
    ["KEYS", "*"],
    ["SCAN", "0"],
    ["DBSIZE"],
    ["FLUSHDB"],
    ["FLUSHALL", "ASYNC"],
    ["INFO"],
    ["CONFIG", "SET", "stream-node-max-entries", "10"],
]


@pytest.mark.redis
@pytest.mark.parametrize("argv", LINES, ids=lambda a: " ".join(a))
def test_keys_agree_with_redis(argv: list[str], real_redis: Any) -> None:
    expected = real_redis.command_getkeys(*argv)
    assert lookup(argv).keys(argv) == expected


@pytest.mark.parametrize("argv", NO_KEYS, ids=lambda a: " ".join(a))
def test_commands_without_keys(argv: list[str]) -> None:
    assert lookup(argv).keys(argv) == []


@pytest.mark.parametrize("argv", KEYSPACE, ids=lambda a: " ".join(a))
def test_keyspace_commands_name_every_key(argv: list[str]) -> None:
    assert lookup(argv).keys(argv) is None


@pytest.mark.parametrize(
    "argv",
    [
        ["XREAD", "STREAMS", "a", "0", "b"],
        ["XREAD", "COUNT", "1", "STREAMS"],
        ["XREAD", "BLOCK", "0", "COUNT", "1"],
    ],
)
def test_a_malformed_read_names_no_key(argv: list[str]) -> None:
    assert lookup(argv).keys(argv) == []
