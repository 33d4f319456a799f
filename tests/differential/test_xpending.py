"""XPENDING summary and extended forms against redis-server (idle times masked)."""

from __future__ import annotations

import time

import pytest

from tests.differential.exact import ExactPair

INVALID = "ERR Invalid stream ID specified as stream command argument"
NOT_INTEGER = "ERR value is not an integer or out of range"


@pytest.fixture
def pel(pair: ExactPair) -> ExactPair:
    """Stream ``s`` with 8 entries; c1 holds 1..3 (1 delivered twice), c2 holds 4..6."""
    pair.fill("s", 8)
    pair("XGROUP", "CREATE", "s", "g", "0")
    pair("XGROUP", "CREATE", "s", "empty", "$")
    pair("XREADGROUP", "GROUP", "g", "c1", "COUNT", "3", "STREAMS", "s", ">")
    pair("XREADGROUP", "GROUP", "g", "c2", "COUNT", "3", "STREAMS", "s", ">")
    pair("XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "s", "0")
    pair("XGROUP", "CREATECONSUMER", "s", "g", "idle-one")
    return pair


def test_summary(pel: ExactPair) -> None:
    """Summary: count, smallest and greatest ID, and per-consumer counts (as strings)."""
    assert pel("XPENDING", "s", "g") == [6, "1-0", "6-0", [["c1", "3"], ["c2", "3"]]]
    assert pel("XPENDING", "s", "empty") == [0, None, None, None]
    pel("XACK", "s", "g", "1-0", "4-0", "5-0", "6-0")
    pel("XPENDING", "s", "g")


@pytest.mark.parametrize(
    "args",
    [
        ["-", "+", "10"],
        ["-", "+", "1"],
        ["-", "+", "0"],
        ["-", "+", "-1"],
        ["-", "+", "9223372036854775807"],
        ["2", "5", "10"],
        ["2-0", "2-0", "10"],
        ["(1-0", "+", "10"],
        ["-", "(6-0", "10"],
        ["(2", "(5", "10"],
        ["(1", "+", "10"],
        ["7", "+", "10"],
        ["5", "2", "10"],
        ["-", "(0", "10"],
        ["-", "+", "10", "c1"],
        ["-", "+", "2", "c2"],
        ["3", "+", "10", "c1"],
        ["-", "+", "10", "idle-one"],
        ["-", "+", "10", "nobody"],
        ["-", "+", "10", "c1", "ignored-extra"],
        ["IDLE", "0", "-", "+", "10"],
        ["IDLE", "-5", "-", "+", "10"],
        ["idle", "0", "(1", "5", "3", "c2"],
        ["IDLE", "999999999", "-", "+", "10"],
        ["IDLE", "999999999", "-", "+", "10", "c1"],
    ],
)
def test_extended(pel: ExactPair, args: list[str]) -> None:
    """Extended form: ranges (inclusive, exclusive, partial), COUNT, consumer and IDLE."""
    pel("XPENDING", "s", "g", *args)


def test_extended_shape(pel: ExactPair) -> None:
    """Rows are [id, consumer, idle, deliveries]; delivery counts are exact."""
    rows = pel("XPENDING", "s", "g", "-", "+", "10")
    assert [(r[0], r[1], r[3]) for r in rows] == [
        ("1-0", "c1", 2),
        ("2-0", "c1", 1),
        ("3-0", "c1", 1),
        ("4-0", "c2", 1),
        ("5-0", "c2", 1),
        ("6-0", "c2", 1),
    ]


def test_idle_filter_follows_the_clock(pel: ExactPair) -> None:
    """IDLE keeps only entries idle at least that long; a fresh delivery resets idleness."""
    time.sleep(0.4)  # time is the subject: idle past XPENDING's IDLE 200
    pel("XREADGROUP", "GROUP", "g", "c2", "COUNT", "1", "STREAMS", "s", "0")
    rows = pel("XPENDING", "s", "g", "IDLE", "200", "-", "+", "10")
    assert [r[0] for r in rows] == ["1-0", "2-0", "3-0", "5-0", "6-0"]
    for r in pel.xs("XPENDING", "s", "g", "-", "+", "10"):
        assert (r[2] >= 200) == (r[0] != "4-0"), r
    pel("XPENDING", "s", "g", "IDLE", "200", "-", "+", "10", "c2")
    pel("XPENDING", "s", "g", "IDLE", "100000", "-", "+", "10")


def test_deleted_entries_stay_pending(pel: ExactPair) -> None:
    """XDEL and XTRIM do not touch the PEL."""
    pel("XDEL", "s", "2-0")
    pel("XTRIM", "s", "MAXLEN", "0")
    pel("XPENDING", "s", "g")
    pel("XPENDING", "s", "g", "-", "+", "10")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["s", "nog"], "NOGROUP No such key 's' or consumer group 'nog'"),
        (["nokey", "g"], "NOGROUP No such key 'nokey' or consumer group 'g'"),
        (["nokey", "g", "-", "+", "10"], "NOGROUP No such key 'nokey' or consumer group 'g'"),
        (["s", "nog", "-", "+", "10"], "NOGROUP No such key 's' or consumer group 'nog'"),
        (["s"], "ERR wrong number of arguments for 'xpending' command"),
        ([], "ERR wrong number of arguments for 'xpending' command"),
        (["s", "g", "-"], "ERR syntax error"),
        (["s", "g", "-", "+"], "ERR syntax error"),
        (["s", "g", "IDLE", "10"], "ERR syntax error"),
        (["s", "g", "IDLE", "10", "-", "+"], "ERR syntax error"),
        (["s", "g", "-", "+", "abc"], NOT_INTEGER),
        (["s", "g", "IDLE", "abc", "-", "+", "10"], NOT_INTEGER),
        (["s", "g", "abc", "+", "10"], INVALID),
        (["s", "g", "-", "abc", "10"], INVALID),
        (["s", "g", "(-", "+", "10"], INVALID),
        (["s", "g", "*", "+", "10"], INVALID),
        (
            ["s", "g", "(18446744073709551615-18446744073709551615", "+", "10"],
            "ERR invalid start ID for the interval",
        ),
        (["s", "g", "-", "(0-0", "10"], "ERR invalid end ID for the interval"),
    ],
)
def test_errors(pel: ExactPair, args: list[str], expected: str) -> None:
    """Missing key or group, arity and argument errors, with Redis's exact texts."""
    assert pel("XPENDING", *args) == expected
