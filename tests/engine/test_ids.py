"""Stream ID parsing: Redis 7.0's ``streamGenericParseIDOrReply`` and ``string2ull`` rules.

Every expectation below was checked against redis-server 7.0.15 (``redis-cli -n 9``), e.g.
``xadd k ' 5' f v`` -> 5-0, ``xadd k 1--05 f v`` -> 1-18446744073709551611,
``xrange k '(18446744073709551615-18446744073709551615' +`` -> invalid start ID.
"""

from __future__ import annotations

import pytest

from app.engine.errors import CommandError
from app.engine.ids import (
    MAX_ID,
    MIN_ID,
    UINT64_MAX,
    StreamID,
    parse_id,
    parse_range_end,
    parse_range_start,
    parse_strict_id,
    string2ull,
)
from app.engine.store import Store
from tests.engine.helpers import INVALID_ID, error, ids, run

M = UINT64_MAX
ID_127_BYTES = "0" * 126 + "1"  # the longest accepted text: 127 bytes
ID_128_BYTES = "0" * 127 + "1"

# text -> (ID when the sequence defaults to 0, ID when it defaults to UINT64_MAX)
VALID: list[tuple[str, StreamID, StreamID]] = [
    ("1-2", StreamID(1, 2), StreamID(1, 2)),
    ("0-0", StreamID(0, 0), StreamID(0, 0)),
    ("5", StreamID(5, 0), StreamID(5, M)),  # incomplete: missing seq
    ("0", StreamID(0, 0), StreamID(0, M)),
    ("007-1", StreamID(7, 1), StreamID(7, 1)),  # strtoull takes leading zeros
    ("00", StreamID(0, 0), StreamID(0, M)),
    ("5-00", StreamID(5, 0), StreamID(5, 0)),
    ("+5", StreamID(5, 0), StreamID(5, M)),  # strtoull takes a '+' sign
    (" 5", StreamID(5, 0), StreamID(5, M)),  # ... and leading blanks
    ("\t7", StreamID(7, 0), StreamID(7, M)),
    ("\n7", StreamID(7, 0), StreamID(7, M)),
    ("\v7", StreamID(7, 0), StreamID(7, M)),
    ("5-+3", StreamID(5, 3), StreamID(5, 3)),
    ("5- 3", StreamID(5, 3), StreamID(5, 3)),
    ("1- +2", StreamID(1, 2), StreamID(1, 2)),
    ("1--05", StreamID(1, M - 4), StreamID(1, M - 4)),  # strtoull("-05") wraps around
    ("18446744073709551615", StreamID(M, 0), StreamID(M, M)),
    ("18446744073709551615-18446744073709551615", MAX_ID, MAX_ID),
    ("18446744073709551615-0", StreamID(M, 0), StreamID(M, 0)),
    ("0-18446744073709551615", StreamID(0, M), StreamID(0, M)),
    (ID_127_BYTES, StreamID(1, 0), StreamID(1, M)),
    ("0-" + "0" * 124 + "1", StreamID(0, 1), StreamID(0, 1)),  # 127 bytes
    ("1\x005", StreamID(1, 0), StreamID(1, M)),  # C string: stops at the NUL
    ("5-1\x00x", StreamID(5, 1), StreamID(5, 1)),
]

INVALID: list[str] = [
    "-1",  # negative: string2ll parses it, string2ull refuses it
    "-0",
    "-1-1",
    "1--5",
    "1-+-5",
    "++5",
    "+-5",
    "1-",
    "1-2-3",
    "1-**",
    "0x10",
    "5 ",  # trailing blank
    "1e3",
    "a",
    "",
    "\x00",
    "1-\x00",
    "１",  # a full-width digit
    "18446744073709551616",  # UINT64_MAX + 1
    "1-18446744073709551616",
    "18446744073709551616-0",
    "99999999999999999999",
    "-18446744073709551615",
    ID_128_BYTES,  # more than 127 bytes
    "0-" + "0" * 125 + "1",  # 128 bytes
    "(5",
    "(",
    "*",
    "5-*",  # only XADD takes ms-*
]


@pytest.mark.parametrize(("text", "low", "high"), VALID)
def test_parse_id_valid(text: str, low: StreamID, high: StreamID) -> None:
    assert parse_id(text) == (low, True)
    assert parse_id(text, M) == (high, True)
    assert parse_strict_id(text) == low
    assert parse_strict_id(text, M) == high


@pytest.mark.parametrize("text", INVALID)
def test_parse_id_invalid(text: str) -> None:
    with pytest.raises(CommandError) as info:
        parse_id(text)
    assert info.value.text == INVALID_ID


@pytest.mark.parametrize(("text", "expected"), [("-", MIN_ID), ("+", MAX_ID)])
def test_minus_and_plus_only_when_not_strict(text: str, expected: StreamID) -> None:
    assert parse_id(text) == (expected, True)
    assert parse_id(text, M) == (expected, True)  # the missing sequence does not apply
    with pytest.raises(CommandError) as info:
        parse_strict_id(text)
    assert info.value.text == INVALID_ID
    with pytest.raises(CommandError):
        parse_id(text, strict=True, allow_seq_auto=True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("5-*", StreamID(5, 0)), ("0-*", StreamID(0, 0)), ("+5-*", StreamID(5, 0))],
)
def test_seq_auto_only_where_allowed(text: str, expected: StreamID) -> None:
    assert parse_id(text, allow_seq_auto=True) == (expected, False)
    with pytest.raises(CommandError):
        parse_id(text)


@pytest.mark.parametrize("text", ["*-1", "-*", "*", "5-**", "5-* ", "5-+*"])
def test_seq_auto_rejects_other_stars(text: str) -> None:
    with pytest.raises(CommandError) as info:
        parse_id(text, allow_seq_auto=True)
    assert info.value.text == INVALID_ID


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("18446744073709551615", M),
        ("18446744073709551616", None),
        ("007", 7),
        ("+7", 7),
        (" 7", 7),
        ("-7", None),  # string2ll accepts it, then it is negative
        ("-07", (1 << 64) - 7),  # string2ll refuses it, strtoull wraps it
        ("7 ", None),
        ("", None),
        ("+", None),
        (" ", None),
    ],
)
def test_string2ull(text: str, expected: int | None) -> None:
    assert string2ull(text) == expected


# -- intervals: XRANGE / XREVRANGE / XPENDING / XAUTOCLAIM ------------------------------

RANGE_START: list[tuple[str, StreamID]] = [
    ("-", MIN_ID),
    ("+", MAX_ID),
    ("5", StreamID(5, 0)),
    ("(5", StreamID(5, 1)),
    ("(1-1", StreamID(1, 2)),
    ("(5-18446744073709551615", StreamID(6, 0)),
    ("(18446744073709551615", StreamID(M, 1)),
    ("(0-0", StreamID(0, 1)),
    ("( 1", StreamID(1, 1)),
    ("(" + ID_127_BYTES, StreamID(1, 1)),  # 128 bytes with the '(': the limit is on the ID
]

RANGE_END: list[tuple[str, StreamID]] = [
    ("+", MAX_ID),
    ("-", MIN_ID),
    ("5", StreamID(5, M)),
    ("(5", StreamID(5, M - 1)),
    ("(1-1", StreamID(1, 0)),
    ("(1-0", StreamID(0, M)),
    ("(0", StreamID(0, M - 1)),
    ("(0-1", StreamID(0, 0)),
    ("(18446744073709551615-18446744073709551615", StreamID(M, M - 1)),
]


@pytest.mark.parametrize(("text", "expected"), RANGE_START)
def test_range_start(text: str, expected: StreamID) -> None:
    assert parse_range_start(text) == expected


@pytest.mark.parametrize(("text", "expected"), RANGE_END)
def test_range_end(text: str, expected: StreamID) -> None:
    assert parse_range_end(text) == expected


@pytest.mark.parametrize(
    "text", ["(-", "(+", "((1", "(5-*", "(" + ID_128_BYTES, "(", "(-1", "(1e3"]
)
def test_exclusive_needs_a_strict_id(text: str) -> None:
    for parse in (parse_range_start, parse_range_end):
        with pytest.raises(CommandError) as info:
            parse(text)
        assert info.value.text == INVALID_ID


@pytest.fixture
def three(store: Store) -> Store:
    for i in ("1-1", "1-2", "2-0"):
        run(store, "XADD", "k", i, "a", "b")
    run(store, "XGROUP", "CREATE", "k", "g", "0")
    return store


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["XRANGE", "k", "(1-1", "+"], ["1-2", "2-0"]),
        (["XRANGE", "k", "-", "(2-0"], ["1-1", "1-2"]),
        (["XRANGE", "k", "-", "(2"], ["1-1", "1-2", "2-0"]),
        (["XRANGE", "k", "(1", "+"], ["1-1", "1-2", "2-0"]),
        (["XRANGE", "k", "1", "1"], ["1-1", "1-2"]),
        (["XRANGE", "k", "(18446744073709551615", "+"], []),
        (["XRANGE", "k", "-", "(0"], []),
        (["XRANGE", "k", "2", "1"], []),
        (["XRANGE", "k", "(0-0", "+"], ["1-1", "1-2", "2-0"]),
        (["XREVRANGE", "k", "(2-0", "(1-1"], ["1-2"]),
        (["XREVRANGE", "k", "+", "(1-2"], ["2-0"]),
    ],
)
def test_exclusive_ranges_in_commands(three: Store, argv: list[str], expected: list[str]) -> None:
    assert ids(run(three, *argv)) == expected


MAXMAX = "(18446744073709551615-18446744073709551615"
START_ERR = "ERR invalid start ID for the interval"
END_ERR = "ERR invalid end ID for the interval"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["XRANGE", "k", MAXMAX, "+"], START_ERR),
        (["XRANGE", "k", "-", "(0-0"], END_ERR),
        (["XRANGE", "k", MAXMAX, "(0-0"], START_ERR),  # the start is checked first
        (["XREVRANGE", "k", "+", MAXMAX], START_ERR),  # XREVRANGE end start: start is argv[3]
        (["XREVRANGE", "k", "(0-0", "-"], END_ERR),
        (["XPENDING", "k", "g", MAXMAX, "+", "10"], START_ERR),
        (["XPENDING", "k", "g", "-", "(0-0", "10"], END_ERR),
        (["XAUTOCLAIM", "k", "g", "c", "0", MAXMAX], START_ERR),
        (["XRANGE", "k", "(-", "+"], INVALID_ID),
        (["XRANGE", "k", "-", "(+"], INVALID_ID),
    ],
)
def test_exclusive_edge_errors(three: Store, argv: list[str], expected: str) -> None:
    assert error(three, *argv) == expected


def test_xautoclaim_exclusive_zero_start(three: Store) -> None:
    # redis-server: XAUTOCLAIM k g c 0 (0-0 -> 0-0 [] [] (nothing pending)
    reply = run(three, "XAUTOCLAIM", "k", "g", "c", "0", "(0-0")
    assert (reply.next_id, reply.claimed, reply.deleted) == (MIN_ID, [], [])


# -- IDs in commands: where '-', '+' and 'ms-*' are allowed ------------------------------

XADD_ID: list[tuple[str, str]] = [
    ("1-2", "1-2"),
    ("5", "5-0"),
    ("007-1", "7-1"),
    ("+5", "5-0"),
    (" 5", "5-0"),
    ("5-+3", "5-3"),
    ("1--05", "1-18446744073709551611"),
    ("00000000000000000001", "1-0"),
    ("18446744073709551615", "18446744073709551615-0"),
    ("18446744073709551615-18446744073709551615", "18446744073709551615-18446744073709551615"),
    ("5-*", "5-0"),
    ("0-*", "0-2"),  # the stream's last ID is 0-1
    ("1\x005", "1-0"),
]


@pytest.mark.parametrize(("text", "expected"), XADD_ID)
def test_xadd_ids(store: Store, text: str, expected: str) -> None:
    run(store, "XADD", "k", "0-1", "a", "b")
    assert str(run(store, "XADD", "k", text, "f", "v")) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("-", INVALID_ID),
        ("+", INVALID_ID),
        ("-1", INVALID_ID),
        ("18446744073709551616-1", INVALID_ID),
        ("1-18446744073709551616", INVALID_ID),
        (ID_128_BYTES, INVALID_ID),
        ("(5", INVALID_ID),
        ("5-**", INVALID_ID),
        ("0-0", "ERR The ID specified in XADD must be greater than 0-0"),
        ("0", "ERR The ID specified in XADD must be greater than 0-0"),
        ("00", "ERR The ID specified in XADD must be greater than 0-0"),
        ("0-1", "ERR The ID specified in XADD is equal or smaller than the target stream top item"),
    ],
)
def test_xadd_id_errors(store: Store, text: str, expected: str) -> None:
    run(store, "XADD", "k", "0-1", "a", "b")
    assert error(store, "XADD", "k", text, "f", "v") == expected
    assert run(store, "XLEN", "k") == 1


@pytest.mark.parametrize("text", ["-", "+", "5-*", "(1-1"])
@pytest.mark.parametrize(
    "argv",
    [
        ["XREAD", "STREAMS", "k", "{}"],
        ["XDEL", "k", "{}"],
        ["XACK", "k", "g", "{}"],
        ["XCLAIM", "k", "g", "c", "0", "1-1", "LASTID", "{}"],
        ["XGROUP", "CREATE", "k", "g2", "{}"],
        ["XTRIM", "k", "MINID", "{}"],
    ],
    ids=lambda a: a[0] if isinstance(a, list) else a,
)
def test_strict_ids_reject_minus_plus(three: Store, argv: list[str], text: str) -> None:
    assert error(three, *[a.format(text) for a in argv]) == INVALID_ID


@pytest.mark.parametrize(
    ("text", "expected"), [("-", MIN_ID), ("+", MAX_ID), ("5", StreamID(5, 0))]
)
def test_xgroup_setid_takes_minus_and_plus(three: Store, text: str, expected: StreamID) -> None:
    run(three, "XGROUP", "SETID", "k", "g", text)
    assert run(three, "XINFO", "GROUPS", "k")[0].last_delivered_id == expected


def test_xrange_with_minus_plus_and_incomplete_ids(three: Store) -> None:
    assert ids(run(three, "XRANGE", "k", "-", "+")) == ["1-1", "1-2", "2-0"]
    assert ids(run(three, "XRANGE", "k", "+", "-")) == []
    assert ids(run(three, "XRANGE", "k", "-", "-")) == []
    assert ids(run(three, "XRANGE", "k", "1", "1")) == ["1-1", "1-2"]
    assert ids(run(three, "XRANGE", "k", " 2", "+2")) == ["2-0"]
