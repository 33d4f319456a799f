"""Keyspace commands against redis-server: PING, ECHO, DEL, EXISTS, TYPE, KEYS, SCAN, DBSIZE,
FLUSHDB. (FLUSHALL is never sent to redis-server: it would wipe the other databases.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import ReplyError
from tests.differential.exact import ExactPair

SYNTAX = "ERR syntax error"
KEYS = ["s1", "s2", "s10", "other", "a*b", "a?b", "A1", "hello", "hallo", "hxllo", "h[e]llo", "ü"]


@pytest.fixture
def keyspace(pair: ExactPair) -> ExactPair:
    """A dozen stream keys with awkward names for patterns."""
    for key in KEYS:
        pair("XADD", key, "1-1", "f", "v")
    return pair


def test_ping_echo(pair: ExactPair) -> None:
    """PING with and without a message; ECHO returns its argument verbatim."""
    assert pair("PING") == "PONG"
    assert pair("PING", "hello world") == "hello world"
    pair("PING", "")
    pair("ping")
    assert pair("ECHO", "héllo ☃") == "héllo ☃"
    pair("ECHO", "")
    pair("echo", "PONG")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["PING", "a", "b"], "ERR wrong number of arguments for 'ping' command"),
        (["ECHO"], "ERR wrong number of arguments for 'echo' command"),
        (["ECHO", "a", "b"], "ERR wrong number of arguments for 'echo' command"),
        (["DEL"], "ERR wrong number of arguments for 'del' command"),
        (["EXISTS"], "ERR wrong number of arguments for 'exists' command"),
        (["TYPE"], "ERR wrong number of arguments for 'type' command"),
        (["TYPE", "a", "b"], "ERR wrong number of arguments for 'type' command"),
        (["KEYS"], "ERR wrong number of arguments for 'keys' command"),
        (["KEYS", "a", "b"], "ERR wrong number of arguments for 'keys' command"),
        (["SCAN"], "ERR wrong number of arguments for 'scan' command"),
        (["DBSIZE", "x"], "ERR wrong number of arguments for 'dbsize' command"),
        (["FLUSHDB", "x"], SYNTAX),
        (["FLUSHDB", "ASYNC", "SYNC"], SYNTAX),
    ],
)
def test_keyspace_errors(keyspace: ExactPair, args: list[str], expected: str) -> None:
    """Arity and syntax errors of the keyspace commands; nothing is changed."""
    assert keyspace(*args) == expected
    assert keyspace("DBSIZE") == len(KEYS)


def test_del_exists_type(keyspace: ExactPair) -> None:
    """DEL and EXISTS count repeated keys as Redis does; TYPE is stream or none."""
    assert keyspace("EXISTS", "s1", "s1", "nokey", "s2") == 3
    assert keyspace("DEL", "s1", "nokey", "s1") == 1
    assert keyspace("EXISTS", "s1") == 0
    assert keyspace("TYPE", "s2") == "stream"
    assert keyspace("TYPE", "s1") == "none"
    assert keyspace("DEL", "nokey") == 0
    assert keyspace("DEL", *KEYS) == len(KEYS) - 1
    assert keyspace("DBSIZE") == 0
    keyspace("KEYS", "*")


def test_empty_stream_is_a_key(pair: ExactPair) -> None:
    """A stream emptied by XDEL/XTRIM, or made by MKSTREAM, still exists and has a type."""
    pair("XADD", "s", "1-1", "f", "v")
    pair("XDEL", "s", "1-1")
    pair("XGROUP", "CREATE", "t", "g", "$", "MKSTREAM")
    assert pair("EXISTS", "s", "t") == 2
    pair("TYPE", "t")
    assert pair("DBSIZE") == 2
    assert pair("DEL", "s", "t") == 2
    assert pair("XINFO", "STREAM", "t") == "ERR no such key"


@pytest.mark.parametrize(
    "pattern",
    [
        "*",
        "s*",
        "s?",
        "s[0-9]*",
        "s[!1]*",
        "s[^1]*",
        "h?llo",
        "h[ae]llo",
        "h[a-e]llo",
        "h\\[e\\]llo",
        "a\\*b",
        "a\\?b",
        "a*b",
        "A*",
        "a1",
        "*o",
        "ü",
        "?",
        "nomatch*",
        "",
        "[",
        "h[",
    ],
)
def test_keys_patterns(keyspace: ExactPair, pattern: str) -> None:
    """KEYS glob matching (classes, ranges, negation, escapes, case) as Redis does it."""
    expected, actual = keyspace.both("KEYS", pattern)
    assert sorted(actual) == sorted(expected), (pattern, expected, actual)


def _scan_all(send: Callable[..., Any], *opts: str) -> list[str]:
    """Every key returned over a full SCAN iteration (duplicates kept)."""
    cursor, seen, rounds = "0", [], 0
    while True:
        reply = send("SCAN", cursor, *opts)
        assert isinstance(reply, list) and len(reply) == 2, reply
        cursor, keys = reply
        assert isinstance(cursor, str) and cursor.isdigit(), cursor
        seen.extend(keys)
        rounds += 1
        assert rounds < 1000, "SCAN does not terminate"
        if cursor == "0":
            return seen


@pytest.mark.parametrize(
    "opts",
    [
        [],
        ["COUNT", "1"],
        ["COUNT", "3"],
        ["COUNT", "1000"],
        ["MATCH", "s*"],
        ["MATCH", "h?llo", "COUNT", "2"],
        ["MATCH", "nomatch"],
        ["TYPE", "stream"],
        ["TYPE", "STREAM", "COUNT", "2"],
        ["TYPE", "string"],
        ["TYPE", "foo"],
        ["match", "*o", "type", "stream", "count", "5"],
        ["COUNT", "1", "COUNT", "2"],
        ["MATCH", "a", "MATCH", "s*"],
    ],
)
def test_scan_full_iteration(keyspace: ExactPair, opts: list[str]) -> None:
    """The set of keys over a full SCAN equals Redis's (cursor order may differ)."""
    keyspace.bulk([("XADD", f"bulk:{i}", "1-1", "f", "v") for i in range(40)])
    expected = _scan_all(keyspace.resp, *opts)
    actual = _scan_all(keyspace.xs, *opts)
    assert sorted(set(actual)) == sorted(set(expected)), (opts, expected, actual)


def test_scan_small_keyspace_is_one_page(pair: ExactPair) -> None:
    """With few keys, Redis answers a default SCAN in one page ending on cursor 0."""
    for key in ["a", "b", "c"]:
        pair("XADD", key, "1-1", "f", "v")
    expected, actual = pair.both("SCAN", "0")
    assert actual[0] == expected[0] == "0"
    assert sorted(actual[1]) == sorted(expected[1])


@pytest.mark.parametrize(
    ("opts", "expected"),
    [
        (["abc"], "ERR invalid cursor"),
        (["1.5"], "ERR invalid cursor"),
        (["0", "COUNT", "0"], SYNTAX),
        (["0", "COUNT", "-1"], SYNTAX),
        (["0", "COUNT", "abc"], "ERR value is not an integer or out of range"),
        (["0", "COUNT"], SYNTAX),
        (["0", "MATCH"], SYNTAX),
        (["0", "TYPE"], SYNTAX),
        (["0", "FOO", "1"], SYNTAX),
        (["0", "extra"], SYNTAX),
    ],
)
def test_scan_errors(keyspace: ExactPair, opts: list[str], expected: str) -> None:
    """SCAN's argument errors with Redis's exact texts."""
    assert keyspace("SCAN", *opts) == expected


def test_dbsize_and_flushdb(keyspace: ExactPair) -> None:
    """DBSIZE counts keys; FLUSHDB (plain, ASYNC, SYNC) empties the database."""
    assert keyspace("DBSIZE") == len(KEYS)
    assert keyspace("FLUSHDB") == "OK"
    assert keyspace("DBSIZE") == 0
    assert keyspace("KEYS", "*") == []
    keyspace("XADD", "s", "1-1", "f", "v")
    assert keyspace("flushdb", "async") == "OK"
    keyspace("XADD", "s", "1-1", "f", "v")
    assert keyspace("FLUSHDB", "SYNC") == "OK"
    assert keyspace("EXISTS", "s") == 0
    # A flushed key starts over: its old last ID is forgotten.
    assert keyspace("XADD", "s", "1-1", "f", "v") == "1-1"


def test_reply_error_type(pair: ExactPair) -> None:
    """Errors come back as errors (HTTP 400), never as a string result."""
    assert isinstance(pair("XLEN"), ReplyError)


def test_del_drops_groups_and_last_id(pair: ExactPair) -> None:
    """DEL removes the stream with its groups and PELs; a new stream starts from scratch."""
    pair.fill("s", 3)
    pair("XGROUP", "CREATE", "s", "g", "0")
    pair("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert pair("DEL", "s") == 1
    assert pair("XPENDING", "s", "g").startswith("NOGROUP")
    assert pair("XADD", "s", "1-0", "f", "v") == "1-0"
    assert pair("XINFO", "GROUPS", "s") == []
    pair("XINFO", "STREAM", "s")
