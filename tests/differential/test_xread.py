"""XREAD (non-blocking, plus BLOCK where data is already there) against redis-server."""

from __future__ import annotations

import pytest

from tests.differential.exact import ExactPair

INVALID = "ERR Invalid stream ID specified as stream command argument"
UNBALANCED = (
    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
)
ARITY = "ERR wrong number of arguments for 'xread' command"


@pytest.fixture
def streams(pair: ExactPair) -> ExactPair:
    """Two streams, ``s`` with three entries and ``t`` with two."""
    pair.run(
        ("XADD", "s", "1-1", "a", "1"),
        ("XADD", "s", "1-2", "b", "2"),
        ("XADD", "s", "3-0", "c", "3"),
        ("XADD", "t", "2-0", "d", "4"),
        ("XADD", "t", "2-1", "e", "5", "x", "y"),
    )
    return pair


@pytest.mark.parametrize(
    "args",
    [
        ["STREAMS", "s", "0"],
        ["STREAMS", "s", "0-0"],
        ["STREAMS", "s", "1"],
        ["STREAMS", "s", "1-1"],
        ["STREAMS", "s", "1-2"],
        ["STREAMS", "s", "3"],
        ["STREAMS", "s", "18446744073709551615-18446744073709551615"],
        ["STREAMS", "s", "$"],
        ["STREAMS", "s", "t", "0", "0"],
        ["STREAMS", "s", "t", "$", "0"],
        ["STREAMS", "s", "t", "$", "$"],
        ["STREAMS", "s", "t", "nokey", "0", "2", "0"],
        ["STREAMS", "nokey", "0"],
        ["STREAMS", "nokey", "$"],
        ["STREAMS", "s", "s", "0", "1-1"],
        ["COUNT", "1", "STREAMS", "s", "t", "0", "0"],
        ["COUNT", "2", "STREAMS", "s", "t", "1-1", "0"],
        ["COUNT", "0", "STREAMS", "s", "t", "0", "0"],
        ["COUNT", "-5", "STREAMS", "s", "0"],
        ["COUNT", "1", "COUNT", "2", "STREAMS", "s", "0"],
        ["count", "1", "streams", "s", "0"],
        ["STREAMS", "s", "STREAMS", "0", "0"],
        ["BLOCK", "0", "STREAMS", "s", "0"],
        ["BLOCK", "100", "COUNT", "1", "STREAMS", "t", "s", "0", "0"],
    ],
)
def test_xread(streams: ExactPair, args: list[str]) -> None:
    """Reads from one or several streams, with COUNT, `$` and partial IDs."""
    streams("XREAD", *args)


def test_xread_shapes(streams: ExactPair) -> None:
    """Only streams with new entries appear; nothing new at all is a null reply."""
    assert streams("XREAD", "STREAMS", "s", "t", "3-0", "0") == [
        ["t", [["2-0", ["d", "4"]], ["2-1", ["e", "5", "x", "y"]]]]
    ]
    assert streams("XREAD", "STREAMS", "s", "t", "$", "$") is None
    assert streams("XREAD", "STREAMS", "nokey", "0") is None


def test_xread_skips_deleted_and_sees_new(streams: ExactPair) -> None:
    """Deleted entries are not returned; entries added later are, from the given ID."""
    streams("XDEL", "s", "1-2")
    streams("XREAD", "STREAMS", "s", "1-1")
    streams("XADD", "s", "4-0", "z", "9")
    streams("XREAD", "COUNT", "1", "STREAMS", "s", "3-0")
    streams("XREAD", "STREAMS", "s", "0")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["STREAMS", "s", "t", "0"], UNBALANCED),
        (["STREAMS", "STREAMS", "s", "0"], UNBALANCED),
        (["COUNT", "1", "STREAMS", "s"], UNBALANCED),
        (["STREAMS", "s", "t", "u", "0", "0"], UNBALANCED),
        (["STREAMS", "s"], ARITY),
        (["STREAMS"], ARITY),
        ([], ARITY),
        (["s", "0"], ARITY),
        (["COUNT", "1"], ARITY),
        (["COUNT", "1", "STREAMS"], "ERR syntax error"),
        (["FOO", "1", "STREAMS", "s", "0"], "ERR syntax error"),
        (["s", "0", "STREAMS", "s", "0"], "ERR syntax error"),
        (["COUNT", "abc", "STREAMS", "s", "0"], "ERR value is not an integer or out of range"),
        (["COUNT", "STREAMS", "s", "0"], "ERR value is not an integer or out of range"),
        (["STREAMS", "s", "abc"], INVALID),
        (["STREAMS", "s", "t", "0", "abc"], INVALID),
        (["STREAMS", "s", "(1"], INVALID),
        (["STREAMS", "s", "-"], INVALID),
        (["STREAMS", "s", "+"], INVALID),
        (["STREAMS", "s", "1-*"], INVALID),
        (
            ["STREAMS", "s", ">"],
            "ERR The > ID can be specified only when calling XREADGROUP using the GROUP "
            "<group> <consumer> option.",
        ),
        (
            ["NOACK", "STREAMS", "s", "0"],
            "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
        ),
        (
            ["GROUP", "g", "c", "STREAMS", "s", "0"],
            "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
        ),
        (["BLOCK", "-1", "STREAMS", "s", "0"], "ERR timeout is negative"),
        (["BLOCK", "abc", "STREAMS", "s", "0"], "ERR timeout is not an integer or out of range"),
    ],
)
def test_xread_errors(streams: ExactPair, args: list[str], expected: str) -> None:
    """Unbalanced key/ID lists, bad options and bad IDs give Redis's exact texts."""
    assert streams("XREAD", *args) == expected
