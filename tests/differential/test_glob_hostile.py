"""Hostile glob patterns in KEYS and SCAN MATCH, against redis-server 7.0.15.

Long patterns used to recurse once per ``*`` in Python and answer 500 past ~1000 stars;
Redis answers them, and its nesting guard (a match needing more than 1000 nested ``*``
fails) decides some replies, so each reply is compared with redis-server's.
"""

from __future__ import annotations

import pytest

from tests.differential.exact import ExactPair

NAMES = ["a" * 999, "a" * 1001, "a" * 3000, "ab" * 600, "[" * 50, "\\" * 40, "x"]

PATTERNS = [
    "*a" * 999,
    "*a" * 1000,
    "*a" * 1001,  # the innermost call is nested 1001 deep: Redis says no match
    "a*" * 1200,
    "*" * 20_000,
    "*" * 20_000 + "b",
    "?*" * 1500,
    "*?" * 1001,
    "*ab" * 600,
    "*ab" * 1100,
    "[" * 5000,
    "[a" * 3000 + "*",
    "\\" * 4001,
    "*\\*" * 1200,
    "[^b]*" * 1100,
    "*[a-b]" * 1002,
    "a" * 3000,
    "a" * 2999 + "*",
]


@pytest.fixture
def hostile(pair: ExactPair) -> ExactPair:
    pair.bulk([("XADD", name, "1-1", "f", "v") for name in NAMES])
    return pair


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: f"{p[:12]}..{len(p)}")
def test_keys_with_hostile_patterns(hostile: ExactPair, pattern: str) -> None:
    """KEYS answers what redis-server answers, however long the pattern."""
    expected, actual = hostile.both("KEYS", pattern)
    assert sorted(actual) == sorted(expected)


@pytest.mark.parametrize("pattern", PATTERNS[:6], ids=lambda p: f"{p[:12]}..{len(p)}")
def test_scan_match_with_hostile_patterns(hostile: ExactPair, pattern: str) -> None:
    """A full SCAN MATCH iteration finds the keys redis-server finds."""
    found: dict[str, list[str]] = {}
    for side, send in (("redis", hostile.resp), ("xs", hostile.xs)):
        cursor, keys = "0", []
        while True:
            cursor, page = send("SCAN", cursor, "MATCH", pattern, "COUNT", "100")
            keys += page
            if cursor == "0":
                break
        found[side] = sorted(set(keys))
    assert found["xs"] == found["redis"]
