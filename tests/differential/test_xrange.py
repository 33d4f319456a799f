"""XRANGE and XREVRANGE against redis-server: bounds, exclusive and partial IDs, COUNT, errors."""

from __future__ import annotations

import pytest

from tests.differential.exact import ExactPair

MAX = "18446744073709551615"
INVALID = "ERR Invalid stream ID specified as stream command argument"
SYNTAX = "ERR syntax error"
NOT_INTEGER = "ERR value is not an integer or out of range"


@pytest.fixture
def stream(pair: ExactPair) -> ExactPair:
    """A stream with several entries per millisecond and gaps between them."""
    for entry in ["1-1", "1-2", "2-0", "3-5", "3-6", f"4-{MAX}", "5-0", "100-0"]:
        pair("XADD", "s", entry, "f", entry, "n", "1")
    return pair


RANGES = [
    ["-", "+"],
    ["1", "1"],
    ["1-2", "3"],
    ["3", "3-5"],
    ["(1-1", "+"],
    ["-", "(3-5"],
    ["(1", "+"],
    ["(1-2", "(3-6"],
    ["-", "(2"],
    ["(2", "+"],
    ["(3", "5"],
    ["(0-0", "+"],
    ["-", f"(4-{MAX}"],
    [f"(4-{MAX}", "+"],
    ["4", "4"],
    [f"4-{MAX}", f"4-{MAX}"],
    ["(3-5", "(3-6"],
    ["3", "1"],
    ["+", "-"],
    ["+", "+"],
    ["-", "-"],
    ["6", "99"],
    ["0", "0-0"],
    [f"{MAX}-{MAX}", "+"],
    ["0-1", "1-1"],
    ["-", "(0"],
    ["(0", "(1-1"],
]


@pytest.mark.parametrize("bounds", RANGES)
def test_xrange_bounds(stream: ExactPair, bounds: list[str]) -> None:
    """Inclusive, exclusive and partial bounds select the same entries as Redis."""
    stream("XRANGE", "s", *bounds)
    stream("XRANGE", "s", *bounds, "COUNT", "2")


@pytest.mark.parametrize("bounds", RANGES)
def test_xrevrange_bounds(stream: ExactPair, bounds: list[str]) -> None:
    """XREVRANGE takes end first and walks backwards."""
    stream("XREVRANGE", "s", *reversed(bounds))
    stream("XREVRANGE", "s", *reversed(bounds), "COUNT", "2")


@pytest.mark.parametrize(
    "count",
    ["0", "-1", "-100", "1", "3", "8", "99999999999999", "9223372036854775807", "00", "+2"],
)
@pytest.mark.parametrize("command", ["XRANGE", "XREVRANGE"])
def test_count(stream: ExactPair, command: str, count: str) -> None:
    """COUNT 0 or negative replies a null array; large counts return everything."""
    lo, hi = ("-", "+") if command == "XRANGE" else ("+", "-")
    stream(command, "s", lo, hi, "COUNT", count)


def test_count_zero_is_null(stream: ExactPair) -> None:
    """A quirk worth pinning: COUNT 0 is a null reply, not an empty array."""
    assert stream("XRANGE", "s", "-", "+", "COUNT", "0") is None
    assert stream("XREVRANGE", "s", "+", "-", "COUNT", "-3") is None
    assert stream("XRANGE", "s", "3", "1") == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["(-", "+"], INVALID),
        (["-", "(+"], INVALID),
        (["abc", "+"], INVALID),
        (["-", "abc"], INVALID),
        (["1-*", "+"], INVALID),
        (["1-1-1", "+"], INVALID),
        (["", "+"], INVALID),
        (["-1", "+"], INVALID),
        (["(2-18446744073709551616", "+"], INVALID),
        (["$", "+"], INVALID),
        ([f"({MAX}-{MAX}", "+"], "ERR invalid start ID for the interval"),
        (["-", "(0-0"], "ERR invalid end ID for the interval"),
        (["-", "+", "COUNT"], SYNTAX),
        (["-", "+", "COUNT", "abc"], NOT_INTEGER),
        (["-", "+", "COUNT", "1.5"], NOT_INTEGER),
        (["-", "+", "COUNT", "9223372036854775808"], NOT_INTEGER),
        (["-", "+", "FOO", "1"], SYNTAX),
        (["-", "+", "COUNT", "1", "extra"], SYNTAX),
        (["-"], "ERR wrong number of arguments for 'xrange' command"),
        ([], "ERR wrong number of arguments for 'xrange' command"),
    ],
)
def test_xrange_errors(stream: ExactPair, args: list[str], expected: str) -> None:
    """Invalid IDs, intervals and options give Redis's exact errors."""
    assert stream("XRANGE", "s", *args) == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["(+", "-"], INVALID),
        (["+", "(-"], INVALID),
        (["abc", "-"], INVALID),
        (["+", f"({MAX}-{MAX}"], "ERR invalid start ID for the interval"),
        (["(0-0", "-"], "ERR invalid end ID for the interval"),
        (["+", "-", "COUNT"], SYNTAX),
        (["+", "-", "COUNT", "x"], NOT_INTEGER),
        (["+"], "ERR wrong number of arguments for 'xrevrange' command"),
    ],
)
def test_xrevrange_errors(stream: ExactPair, args: list[str], expected: str) -> None:
    """XREVRANGE validates its (reversed) bounds with the same texts."""
    assert stream("XREVRANGE", "s", *args) == expected


def test_repeated_count_last_wins(stream: ExactPair) -> None:
    """COUNT given twice: the last one applies; option names are case-insensitive."""
    assert len(stream("XRANGE", "s", "-", "+", "COUNT", "1", "COUNT", "2")) == 2
    stream("XREVRANGE", "s", "+", "-", "count", "3")


def test_missing_key_and_deleted_entries(pair: ExactPair) -> None:
    """A missing key is an empty array; deleted entries are skipped, also at node edges."""
    assert pair("XRANGE", "nokey", "-", "+") == []
    assert pair("XREVRANGE", "nokey", "+", "-") == []
    assert pair("XRANGE", "nokey", "(0-0", "+", "COUNT", "0") == []
    pair.fill("s", 250)
    for i in [1, 2, 100, 101, 150, 199, 200, 250]:
        pair("XDEL", "s", f"{i}-0")
    pair("XRANGE", "s", "-", "+", "COUNT", "3")
    pair("XREVRANGE", "s", "+", "-", "COUNT", "3")
    pair("XRANGE", "s", "99", "102")
    pair("XREVRANGE", "s", "202", "198")
    assert len(pair("XRANGE", "s", "-", "+")) == 242


def test_empty_stream(pair: ExactPair) -> None:
    """An emptied stream still exists and ranges over nothing."""
    pair("XADD", "s", "1-1", "f", "v")
    pair("XDEL", "s", "1-1")
    assert pair("XRANGE", "s", "-", "+") == []
    pair("XREVRANGE", "s", "+", "-", "COUNT", "1")
