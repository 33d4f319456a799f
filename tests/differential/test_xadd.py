"""XADD against redis-server: IDs, NOMKSTREAM, exact and approximate trimming, errors."""

from __future__ import annotations

import time

import pytest

from tests.differential.exact import ID_RE, ExactPair

MAX = "18446744073709551615"
SMALLER = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
ZERO = "ERR The ID specified in XADD must be greater than 0-0"
INVALID = "ERR Invalid stream ID specified as stream command argument"
EXHAUSTED = "ERR The stream has exhausted the last possible ID, unable to add more items"
TOO_LARGE = "ERR Elements are too large to be stored"
ARITY = "ERR wrong number of arguments for 'xadd' command"
LIMIT_NEEDS_TILDE = "ERR syntax error, LIMIT cannot be used without the special ~ option"
LIMIT_NEEDS_STRATEGY = (
    "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
)
BOTH_STRATEGIES = "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
LIMIT_NEGATIVE = "ERR The LIMIT argument must be >= 0."
NOT_INTEGER = "ERR value is not an integer or out of range"


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        (["1-1"], "1-1"),
        (["5"], "5-0"),
        (["5", "5-*"], "5-1"),
        (["5-7", "5-*"], "5-8"),
        (["7-*"], "7-0"),
        (["0-*"], "0-1"),
        (["1-*"], "1-0"),
        (["5", "6"], "6-0"),
        (["5-3", "5-4"], "5-4"),
        (["5", "5"], SMALLER),
        (["5-3", "5-2"], SMALLER),
        (["5-3", "4-9"], SMALLER),
        (["6", "5-*"], SMALLER),
        (["5", "05-1"], "5-1"),
        (["5", "+6-1"], "6-1"),
        (["5-1", "5-01"], SMALLER),
        (["0-0"], ZERO),
        (["0"], ZERO),
        ([f"{MAX}-{MAX}"], f"{MAX}-{MAX}"),
        ([f"{MAX}-*"], f"{MAX}-0"),
        ([f"{MAX}-{MAX}", "*"], EXHAUSTED),
        ([f"{MAX}-{MAX}", f"{MAX}-*"], EXHAUSTED),
        ([f"{MAX}-{MAX}", f"{MAX}-{MAX}"], EXHAUSTED),
        ([f"5-{MAX}", "5-*"], TOO_LARGE),
        ([f"5-{MAX}", "6-*"], "6-0"),
        (["18446744073709551616"], INVALID),
        (["1-18446744073709551616"], INVALID),
        (["abc"], INVALID),
        (["1-abc"], INVALID),
        (["-1"], INVALID),
        (["1-"], INVALID),
        (["1--1"], INVALID),
        (["1-1-1"], INVALID),
        (["1-1x"], INVALID),
        (["1.5"], INVALID),
        ([""], INVALID),
        (["*-1"], INVALID),
        (["-"], INVALID),
        (["+"], INVALID),
        (["$"], INVALID),
        ([">"], INVALID),
    ],
)
def test_xadd_ids(pair: ExactPair, ids: list[str], expected: str) -> None:
    """Explicit, partial and `ms-*` IDs are accepted or refused exactly as Redis does."""
    replies = [pair("XADD", "s", i, "f", "v") for i in ids]
    assert replies[-1] == expected
    pair("XLEN", "s")
    pair("XRANGE", "s", "-", "+")


def test_xadd_star_ids_are_wall_clock_and_increasing(pair: ExactPair) -> None:
    """`*` IDs cannot be compared literally; check their shape, clock and order instead."""
    now = time.time() * 1000
    first = [pair.both("XADD", "s", "*", "f", "v") for _ in range(5)]
    for expected, actual in first:
        assert ID_RE.match(expected) and ID_RE.match(actual), (expected, actual)
        ms = int(actual.split("-")[0])
        assert now - 5000 < ms < now + 5000, (actual, now)
    actual_ids = [tuple(map(int, a.split("-"))) for _, a in first]
    assert actual_ids == sorted(set(actual_ids))
    pair("XLEN", "s")
    # An explicit ID below the clock-based top is refused on both.
    assert pair("XADD", "s", "1-1", "f", "v") == SMALLER
    last_ms = actual_ids[-1][0]
    assert pair.xs("XADD", "s", f"{last_ms}-*", "f", "v") == f"{last_ms}-{actual_ids[-1][1] + 1}"


def test_xadd_star_on_future_top_uses_top_plus_one(pair: ExactPair) -> None:
    """With a top item in the future, `*` must increment the sequence of the top."""
    future = int(time.time() * 1000) + 10_000_000
    pair("XADD", "s", f"{future}-5", "f", "v")
    assert pair("XADD", "s", "*", "f", "v") == f"{future}-6"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["s"], ARITY),
        (["s", "1"], ARITY),
        (["s", "1", "f"], ARITY),
        (["s", "1", "f", "v", "g"], ARITY),
        (["s", "MAXLEN"], ARITY),
        (["s", "MAXLEN", "5", "1", "f"], ARITY),
        (["s", "MAXLEN", "9", "f", "v"], INVALID),
        (["s", "MAXLEN", "~", "3", "f", "v"], INVALID),
        (["s", "MINID", "3", "f", "v"], INVALID),
        (["s", "MAXLEN", "1", "~", "10", "f", "v"], INVALID),
        (["s", "~", "1", "11", "f", "v"], INVALID),
        (["s", "MAXLEN", "=", "1", "LIMIT", "10", "1", "f", "v"], LIMIT_NEEDS_TILDE),
        (["s", "MAXLEN", "1", "LIMIT", "10", "1", "f", "v"], LIMIT_NEEDS_TILDE),
        (["s", "MINID", "=", "1", "LIMIT", "10", "1", "f", "v"], LIMIT_NEEDS_TILDE),
        (["s", "LIMIT", "5", "1", "f", "v"], LIMIT_NEEDS_STRATEGY),
        (["s", "MAXLEN", "1", "MINID", "5", "1", "f", "v"], BOTH_STRATEGIES),
        (["s", "MINID", "5", "MAXLEN", "6", "1", "f", "v"], BOTH_STRATEGIES),
        (["s", "MAXLEN", "5", "MAXLEN", "6", "1", "f", "v"], BOTH_STRATEGIES),
        (["s", "MAXLEN", "-1", "1", "f", "v"], "ERR The MAXLEN argument must be >= 0."),
        (["s", "MAXLEN", "abc", "1", "f", "v"], NOT_INTEGER),
        (["s", "MAXLEN", "5.5", "1", "f", "v"], NOT_INTEGER),
        (["s", "MAXLEN", "9223372036854775808", "1", "f", "v"], NOT_INTEGER),
        (["s", "MAXLEN", "~", "abc", "1", "f", "v"], NOT_INTEGER),
        (["s", "MINID", "abc", "1", "f", "v"], INVALID),
        (["s", "MINID", "0-5-5", "1", "f", "v"], INVALID),
        (["s", "MINID", "~", "5", "LIMIT", "-1", "1", "f", "v"], LIMIT_NEGATIVE),
        (["s", "MINID", "~", "5", "LIMIT", "abc", "1", "f", "v"], NOT_INTEGER),
    ],
)  # fmt: skip
def test_xadd_errors(pair: ExactPair, args: list[str], expected: str) -> None:
    """Syntax, arity and argument errors carry Redis's exact texts, and create nothing."""
    pair("XADD", "keep", "1-1", "f", "v")
    assert pair("XADD", *args) == expected
    pair("EXISTS", "s")
    pair("KEYS", "*")


@pytest.mark.parametrize(
    "args",
    [
        ["MAXLEN", "9223372036854775807"],
        ["MAXLEN", "~", "1", "LIMIT", "10"],
        ["MAXLEN", "~", "1", "LIMIT", "0"],
        ["limit", "0", "maxlen", "~", "1"],
        ["MAXLEN", "~", "5", "LIMIT", "1", "LIMIT", "2"],
        ["nomkstream", "maxlen", "=", "2"],
        ["NOMKSTREAM", "NOMKSTREAM"],
        ["minid", "3"],
    ],
)
def test_xadd_option_forms_accepted(pair: ExactPair, args: list[str]) -> None:
    """Options in any case and order, repeated, or with boundary values, as Redis parses them."""
    pair.fill("s", 5)
    assert pair("XADD", "s", *args, "9", "f", "v") == "9-0"
    pair("XRANGE", "s", "-", "+")


def test_xadd_nomkstream(pair: ExactPair) -> None:
    """NOMKSTREAM on a missing key replies null and creates nothing; on a stream it adds."""
    assert pair("XADD", "s", "NOMKSTREAM", "1-1", "f", "v") is None
    assert pair("XADD", "s", "NOMKSTREAM", "*", "f", "v") is None
    assert pair("XADD", "s", "NOMKSTREAM", "MAXLEN", "0", "1-1", "f", "v") is None
    assert pair("EXISTS", "s") == 0
    pair("XADD", "s", "1-1", "f", "v")
    assert pair("XADD", "s", "NOMKSTREAM", "2-1", "f", "v") == "2-1"
    # NOMKSTREAM does not relax ID validation.
    assert pair("XADD", "s", "NOMKSTREAM", "2-1", "f", "v") == SMALLER
    assert pair("XLEN", "s") == 2


def test_xadd_fields_kept_in_order_with_duplicates(pair: ExactPair) -> None:
    """Field/value pairs are stored verbatim, duplicates and empty strings included."""
    pair("XADD", "s", "1", "b", "2", "a", "1", "b", "3")
    pair("XADD", "s", "2", "", "", "x", "y")
    pair("XADD", "s", "3", "ünï", "çødé ☃", "n", "12345678901234567890")
    pair("XADD", "s", "4", "f", "-0")
    assert len(pair("XRANGE", "s", "-", "+")) == 4


def test_xadd_maxlen_zero_leaves_empty_stream(pair: ExactPair) -> None:
    """MAXLEN 0 adds then trims everything: the key stays, as an empty stream."""
    assert pair("XADD", "s", "MAXLEN", "0", "2", "f", "v") == "2-0"
    assert pair("XLEN", "s") == 0
    assert pair("EXISTS", "s") == 1
    pair("TYPE", "s")
    pair("XINFO", "STREAM", "s")
    assert pair("XADD", "s", "2", "f", "v") == SMALLER


@pytest.mark.parametrize(
    "trim",
    [
        ["MAXLEN", "3"],
        ["MAXLEN", "=", "3"],
        ["MAXLEN", "0"],
        ["MAXLEN", "1"],
        ["MAXLEN", "100"],
        ["MINID", "5"],
        ["MINID", "=", "5-0"],
        ["MINID", "8-0"],
        ["MINID", "(5"],
        ["MINID", "0"],
        ["MINID", "99"],
        ["MINID", "11"],
    ],
)
def test_xadd_exact_trimming(pair: ExactPair, trim: list[str]) -> None:
    """Exact trimming after the add, including trims that remove the new entry itself."""
    pair.fill("s", 10)
    pair("XADD", "s", *trim, "11", "f", "v")
    pair("XLEN", "s")
    pair("XRANGE", "s", "-", "+")
    pair("XINFO", "STREAM", "s")


def _fill_mixed(pair: ExactPair, n: int, value_size: int, vary_fields: bool) -> None:
    commands = []
    for i in range(1, n + 1):
        fields = (
            [f"f{i % 3}", "x" * value_size] if vary_fields and i % 4 else ["f", "x" * value_size]
        )
        if vary_fields and i % 7 == 0:
            fields += ["extra", str(i)]
        commands.append(("XADD", "s", f"{i}-0", *fields))
    pair.bulk(commands)


@pytest.mark.parametrize(
    ("value_size", "vary_fields", "trim"),
    [
        *[
            (size, vary, trim)
            for size in (1, 200)
            for vary in (False, True)
            for trim in (
                ["MAXLEN", "~", "150"],
                ["MAXLEN", "~", "10"],
                ["MINID", "~", "151"],
                ["MAXLEN", "~", "10", "LIMIT", "50"],
                ["MINID", "~", "280", "LIMIT", "30"],
            )
        ],
        (1, False, ["MAXLEN", "~", "0"]),
        (1, False, ["MAXLEN", "~", "299"]),
        (1, False, ["MINID", "~", "250"]),
        (1, False, ["MAXLEN", "~", "10", "LIMIT", "100"]),
        (1, False, ["MAXLEN", "~", "10", "LIMIT", "150"]),
        (1, False, ["MAXLEN", "~", "10", "LIMIT", "0"]),
        (200, False, ["MAXLEN", "~", "10", "LIMIT", "40"]),
        (40, True, ["MAXLEN", "~", "10", "LIMIT", "70"]),
    ],
)
def test_xadd_approximate_trimming_removes_whole_nodes(
    pair: ExactPair, value_size: int, vary_fields: bool, trim: list[str]
) -> None:
    """`~` trims whole listpack nodes only (100 entries or 4096 bytes each), like Redis."""
    _fill_mixed(pair, 300, value_size, vary_fields)
    pair("XADD", "s", *trim, "301", "f", "x" * value_size)
    length = pair("XLEN", "s")
    assert length <= 301
    pair("XRANGE", "s", "-", "+", "COUNT", "2")
    pair("XREVRANGE", "s", "+", "-", "COUNT", "2")
    pair("XINFO", "STREAM", "s")


def test_xadd_approximate_trim_repeated_adds(pair: ExactPair) -> None:
    """A capped stream fed entry by entry drops a whole node at a time, never a single entry."""
    commands: list[tuple[str, ...]] = []
    for i in range(1, 260):
        commands.append(("XADD", "s", "MAXLEN", "~", "120", f"{i}-1", "field", "v" * (i % 50)))
        commands.append(("XLEN", "s"))
    lengths = pair.bulk(commands)[1::2]
    assert max(lengths) > 120 and lengths[-1] < 200
    pair("XRANGE", "s", "-", "+", "COUNT", "1")


def test_xadd_approximate_trim_after_deletes(pair: ExactPair) -> None:
    """Nodes holding deleted entries still count them towards the node limits."""
    pair.fill("s", 250)
    pair.bulk([("XDEL", "s", f"{i}-0") for i in range(1, 250, 3)])
    pair("XADD", "s", "MAXLEN", "~", "50", "251", "f", "v")
    pair("XLEN", "s")
    pair("XRANGE", "s", "-", "+", "COUNT", "3")
    pair("XADD", "s", "MAXLEN", "~", "50", "252", "f", "v")
    pair("XINFO", "STREAM", "s")
