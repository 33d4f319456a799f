"""XLEN, XDEL, XTRIM and XSETID against redis-server, with the stream metadata they change."""

from __future__ import annotations

from typing import Any

import pytest

from tests.differential.checks import read_all
from tests.differential.exact import ExactPair
from tests.differential.support import NODES_COMPARED

MAX = "18446744073709551615"
INVALID = "ERR Invalid stream ID specified as stream command argument"
NOT_INTEGER = "ERR value is not an integer or out of range"
SYNTAX = "ERR syntax error"


def _meta(pair: ExactPair, key: str = "s") -> None:
    """Compares everything XINFO STREAM exposes about ``key``."""
    pair("XINFO", "STREAM", key)
    pair("XLEN", key)


# --- XLEN ---------------------------------------------------------------------------------


def test_xlen(pair: ExactPair) -> None:
    """XLEN counts live entries; a missing key is 0."""
    assert pair("XLEN", "nokey") == 0
    pair.fill("s", 7)
    assert pair("XLEN", "s") == 7
    pair("XDEL", "s", "3-0")
    assert pair("XLEN", "s") == 6


@pytest.mark.parametrize("args", [[], ["s", "extra"]])
def test_xlen_arity(pair: ExactPair, args: list[str]) -> None:
    """XLEN takes exactly one key."""
    assert pair("XLEN", *args) == "ERR wrong number of arguments for 'xlen' command"


# --- XDEL ---------------------------------------------------------------------------------


def test_xdel_counts_only_existing(pair: ExactPair) -> None:
    """Duplicates and missing IDs are not counted; partial IDs mean ms-0."""
    pair.fill("s", 5)
    assert pair("XDEL", "s", "2-0", "2-0", "9-9") == 1
    assert pair("XDEL", "s", "3") == 1
    assert pair("XDEL", "s", "3") == 0
    assert pair("XDEL", "nokey", "1-0") == 0
    _meta(pair)
    pair("XRANGE", "s", "-", "+")


def test_xdel_max_deleted_id_and_first_entry(pair: ExactPair) -> None:
    """XDEL raises max-deleted-entry-id only upwards and moves first-entry."""
    pair.fill("s", 6)
    pair("XDEL", "s", "4-0")
    _meta(pair)
    pair("XDEL", "s", "2-0")
    _meta(pair)
    pair("XDEL", "s", "1-0")
    _meta(pair)
    pair("XDEL", "s", "6-0")
    _meta(pair)
    pair("XADD", "s", "7-0", "f", "v")
    _meta(pair)


def test_xdel_everything(pair: ExactPair) -> None:
    """Deleting every entry leaves an empty stream that remembers its last ID."""
    pair.fill("s", 3)
    assert pair("XDEL", "s", "1-0", "2-0", "3-0") == 3
    assert pair("EXISTS", "s") == 1
    _meta(pair)
    assert pair("XADD", "s", "3-0", "f", "v").startswith("ERR")
    pair("XADD", "s", "3-*", "f", "v")
    _meta(pair)


def test_xdel_whole_nodes(pair: ExactPair) -> None:
    """Deleting every entry of one listpack node (the second of three) and around it."""
    pair.fill("s", 250)
    assert pair("XDEL", "s", *[f"{i}-0" for i in range(101, 201)]) == 100
    _meta(pair)
    pair("XRANGE", "s", "99", "202")
    pair("XREVRANGE", "s", "202", "99")
    assert pair("XDEL", "s", *[f"{i}-0" for i in range(1, 101)]) == 100
    _meta(pair)
    pair("XRANGE", "s", "-", "+", "COUNT", "2")
    pair("XADD", "s", "MAXLEN", "~", "10", "251", "f", "v")
    _meta(pair)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["s"], "ERR wrong number of arguments for 'xdel' command"),
        ([], "ERR wrong number of arguments for 'xdel' command"),
        (["s", "abc"], INVALID),
        (["s", "1-0", "abc"], INVALID),
        (["s", "-"], INVALID),
        (["s", "*"], INVALID),
        (["s", "1-*"], INVALID),
    ],
)
def test_xdel_errors(pair: ExactPair, args: list[str], expected: str) -> None:
    """An invalid ID anywhere fails the whole command and deletes nothing."""
    pair.fill("s", 3)
    assert pair("XDEL", *args) == expected
    assert pair("XLEN", "s") == 3


# --- XTRIM --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["MAXLEN", "5"],
        ["MAXLEN", "=", "5"],
        ["MAXLEN", "0"],
        ["MAXLEN", "10"],
        ["MAXLEN", "11"],
        ["maxlen", "9223372036854775807"],
        ["MINID", "5"],
        ["MINID", "=", "5-1"],
        ["MINID", "0"],
        ["MINID", "11"],
        ["MINID", f"{MAX}-{MAX}"],
        ["MINID", "~", "5"],
        ["MAXLEN", "~", "5"],
        ["MAXLEN", "~", "0", "LIMIT", "1"],
        ["MAXLEN", "~", "0", "LIMIT", "0"],
    ],
)
def test_xtrim_small(pair: ExactPair, args: list[str]) -> None:
    """XTRIM replies the number of entries removed; `~` on one node removes nothing."""
    pair.fill("s", 10)
    pair("XTRIM", "s", *args)
    pair("XRANGE", "s", "-", "+")
    _meta(pair)


def test_xtrim_missing_key(pair: ExactPair) -> None:
    """Trimming a missing key replies 0 and does not create it."""
    assert pair("XTRIM", "nokey", "MAXLEN", "0") == 0
    assert pair("XTRIM", "nokey", "MINID", "~", "5") == 0
    assert pair("EXISTS", "nokey") == 0


@pytest.mark.parametrize(
    "args",
    [
        ["MAXLEN", "~", "150"],
        ["MAXLEN", "~", "0"],
        ["MAXLEN", "~", "201"],
        ["MAXLEN", "~", "50", "LIMIT", "100"],
        ["MAXLEN", "~", "50", "LIMIT", "99"],
        ["MAXLEN", "~", "0", "LIMIT", "250"],
        ["MINID", "~", "120"],
        ["MINID", "~", "201"],
        ["MINID", "~", "400"],
        ["MINID", "~", "400", "LIMIT", "150"],
        ["MAXLEN", "=", "77"],
        ["MINID", "123-0"],
    ],
)
@pytest.mark.parametrize("value_size", [3, 250])
def test_xtrim_large(pair: ExactPair, args: list[str], value_size: int) -> None:
    """Approximate trimming over several nodes: by entry count (100) or node bytes (4096)."""
    pair.bulk(
        [
            ("XADD", "s", f"{i}-0", *(["f", v] if i % 5 else ["other", v, "x", "1"]))
            for i in range(1, 301)
            for v in ["v" * value_size]
        ]
    )
    pair("XTRIM", "s", *args)
    pair("XRANGE", "s", "-", "+", "COUNT", "1")
    _meta(pair)
    # A second trim after the first removed (or kept) whole nodes.
    pair("XTRIM", "s", *args)
    _meta(pair)


@pytest.mark.parametrize(
    "value",
    [
        lambda i: str(10**12 + i),  # integers: listpack stores them compactly
        lambda i: f"{10**12 + i}x",  # same length, but strings
        lambda i: str(-i * 1000),
        lambda i: f"0{i}",  # not canonical integers
    ],
    ids=["int", "str", "negative-int", "leading-zero"],
)
def test_xtrim_node_bytes_with_numeric_values(pair: ExactPair, value: Any) -> None:
    """Node size in bytes depends on listpack's integer encoding of values and IDs."""
    pair.bulk(
        [
            ("XADD", "s", f"{i}-{i}", *[x for k in range(8) for x in (f"f{k}", value(i + k))])
            for i in range(1, 201)
        ]
    )
    pair("XTRIM", "s", "MAXLEN", "~", "100")
    _meta(pair)
    pair("XTRIM", "s", "MINID", "~", "150")
    _meta(pair)


def test_xtrim_after_xdel_keeps_node_accounting(pair: ExactPair) -> None:
    """Deleted entries still occupy their node, so `~` trimming counts them."""
    pair.fill("s", 300)
    pair("XDEL", "s", *[f"{i}-0" for i in range(1, 60)])
    pair("XTRIM", "s", "MAXLEN", "~", "150")
    _meta(pair)
    pair("XTRIM", "s", "MAXLEN", "~", "150", "LIMIT", "41")
    _meta(pair)
    pair("XTRIM", "s", "MINID", "~", "260")
    _meta(pair)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["s"], "ERR wrong number of arguments for 'xtrim' command"),
        (["s", "MAXLEN"], "ERR wrong number of arguments for 'xtrim' command"),
        (["s", "FOO", "1"], SYNTAX),
        (["s", "MAXLEN", "1", "extra"], SYNTAX),
        (["s", "MAXLEN", "1", "LIMIT"], SYNTAX),
        (
            ["s", "MAXLEN", "=", "0", "LIMIT", "1"],
            "ERR syntax error, LIMIT cannot be used without the special ~ option",
        ),
        (
            ["s", "MINID", "0", "LIMIT", "1"],
            "ERR syntax error, LIMIT cannot be used without the special ~ option",
        ),
        (
            ["s", "LIMIT", "1"],
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ),
        (
            ["s", "MAXLEN", "1", "MINID", "1"],
            "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
        ),
        (["s", "MAXLEN", "-1"], "ERR The MAXLEN argument must be >= 0."),
        (["s", "MAXLEN", "~", "1", "LIMIT", "-1"], "ERR The LIMIT argument must be >= 0."),
        (["s", "MAXLEN", "abc"], NOT_INTEGER),
        (["s", "MAXLEN", "~", "1", "LIMIT", "x"], NOT_INTEGER),
        (["s", "MINID", "(5"], INVALID),
        (["s", "MINID", "-"], INVALID),
        (["s", "MINID", "+"], INVALID),
        (["s", "MINID", "1-*"], INVALID),
        (["s", "MINID", "abc"], INVALID),
        (["nokey", "FOO", "1"], SYNTAX),
    ],
)
def test_xtrim_errors(pair: ExactPair, args: list[str], expected: str) -> None:
    """Syntax and argument errors carry Redis's texts and trim nothing."""
    pair.fill("s", 3)
    assert pair("XTRIM", *args) == expected
    assert pair("XLEN", "s") == 3


# --- XSETID -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["3-0"],
        ["3"],
        ["4-0"],
        ["99"],
        [f"{MAX}-{MAX}"],
        ["3-0", "ENTRIESADDED", "3"],
        ["3-0", "ENTRIESADDED", "9223372036854775807"],
        ["10", "ENTRIESADDED", "7", "MAXDELETEDID", "9-9"],
        ["10", "entriesadded", "7", "maxdeletedid", "0"],
        ["10", "MAXDELETEDID", "10-0"],
        ["10", "ENTRIESADDED", "4", "ENTRIESADDED", "6"],
    ],
)
def test_xsetid(pair: ExactPair, args: list[str]) -> None:
    """XSETID moves last-generated-id and the 7.0 metadata; later XADDs respect it."""
    pair.fill("s", 3)
    assert pair("XSETID", "s", *args) == "OK"
    _meta(pair)
    pair("XADD", "s", "10-0", "f", "v")
    pair("XADD", "s", "100-*", "f", "v")
    pair("XLEN", "s")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["2-0"], "ERR The ID specified in XSETID is smaller than the target stream top item"),
        (["2-9"], "ERR The ID specified in XSETID is smaller than the target stream top item"),
        (
            ["3-0", "ENTRIESADDED", "2"],
            "ERR The entries_added specified in XSETID is smaller than the target stream length",
        ),
        (
            ["3-0", "ENTRIESADDED", "3", "MAXDELETEDID", "3-1"],
            "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
        ),
        (
            ["5", "MAXDELETEDID", "5-1"],
            "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
        ),
        (["5", "ENTRIESADDED", "-1"], "ERR entries_added must be positive"),
        (["5", "ENTRIESADDED", "abc"], NOT_INTEGER),
        (["5", "ENTRIESADDED", "9223372036854775808"], NOT_INTEGER),
        (["5", "ENTRIESADDED"], SYNTAX),
        (["5", "MAXDELETEDID"], SYNTAX),
        (["5", "FOO", "1"], SYNTAX),
        (["5", "MAXDELETEDID", "abc"], INVALID),
        (["abc"], INVALID),
        (["*"], INVALID),
        (["$"], INVALID),
        (["-"], INVALID),
        (["1-*"], INVALID),
        ([], "ERR wrong number of arguments for 'xsetid' command"),
    ],
)
def test_xsetid_errors(pair: ExactPair, args: list[str], expected: str) -> None:
    """XSETID's validations, in Redis's order, with its exact texts; nothing changes."""
    pair.fill("s", 3)
    assert pair("XSETID", "s", *args) == expected
    _meta(pair)


def test_xsetid_missing_key(pair: ExactPair) -> None:
    """XSETID never creates a stream."""
    assert pair("XSETID", "nokey", "1-1") == "ERR no such key"
    assert pair("XSETID", "nokey", "1-1", "ENTRIESADDED", "1", "MAXDELETEDID", "0-0") == (
        "ERR no such key"
    )
    assert pair("XSETID", "nokey", "abc") == INVALID
    assert pair("EXISTS", "nokey") == 0


def test_xsetid_on_empty_stream_accepts_lower_ids(pair: ExactPair) -> None:
    """With no entries left, XSETID may move the last ID backwards (even to 0-0)."""
    pair.fill("s", 3)
    pair("XDEL", "s", "1-0", "2-0", "3-0")
    assert pair("XSETID", "s", "1-0") == "OK"
    _meta(pair)
    assert pair("XSETID", "s", "0-0", "ENTRIESADDED", "0") == "OK"
    _meta(pair)
    assert pair("XADD", "s", "0-1", "f", "v") == "0-1"
    _meta(pair)


def test_xsetid_below_deleted_last_entry(pair: ExactPair) -> None:
    """Redis 7.0 compares with the last live entry, not the last ID nor the max deleted ID."""
    pair.fill("s", 3)
    pair("XDEL", "s", "3-0")
    assert pair("XSETID", "s", "2-5") == "OK"
    _meta(pair)
    assert pair("XSETID", "s", "1-5") == (
        "ERR The ID specified in XSETID is smaller than the target stream top item"
    )
    assert pair("XADD", "s", "2-6", "f", "v") == "2-6"
    _meta(pair)


@pytest.mark.parametrize("size", [4000, 4100, 9000])
def test_entries_larger_than_a_node(pair: ExactPair, size: int) -> None:
    """Entries near or above 4096 bytes each end their node; `~` then trims per entry."""
    pair.bulk([("XADD", "s", f"{i}-0", "f", "x" * size) for i in range(1, 31)])
    pair("XTRIM", "s", "MAXLEN", "~", "10")
    _meta(pair)
    pair("XADD", "s", "MAXLEN", "~", "5", "31-0", "f", "small")
    _meta(pair)
    pair("XTRIM", "s", "MINID", "~", "29")
    _meta(pair)


# --- nodes left with deleted entries only ---------------------------------------------------


def _emptied(pair: ExactPair) -> None:
    """Issue 23's sequence: XDEL takes the node's last entry, an exact MINID trim flags the
    first one deleted. Redis keeps the node (count 0, deleted 2) and the stream is empty."""
    pair.masked = NODES_COMPARED
    assert pair("XADD", "s", "9-0", "a", "1") == "9-0"
    assert pair("XADD", "s", "11-0", "a", "1", "b", "2", "c", "3") == "11-0"
    assert pair("XDEL", "s", "11-0") == 1
    assert pair("XTRIM", "s", "MINID", "11-0") == 1


def test_stream_emptied_by_xdel_and_xtrim(pair: ExactPair) -> None:
    """Every read, XINFO form and DUMP of it answers as Redis does (length 0, counters kept,
    no first or last entry), never an internal error."""
    _emptied(pair)
    info = pair("XINFO", "STREAM", "s")
    assert info[:2] == ["length", 0] and info[-4:] == ["first-entry", None, "last-entry", None]
    read_all(pair, "s")


@pytest.mark.parametrize(
    "then",
    [
        [("XADD", "s", "12-0", "a", "1")],  # lands in the emptied node
        [("XADD", "s", "12-0", "b", "2"), ("XADD", "s", "13-0", "a", "1")],
        [("XTRIM", "s", "MAXLEN", "0")],  # length 0 <= 0: the node stays
        [("XTRIM", "s", "MINID", "11-0")],  # its last ID is not below: it stays
        [("XTRIM", "s", "MINID", "12-0")],  # dropped, with 0 entries deleted
        [("XTRIM", "s", "MINID", "~", "12-0", "LIMIT", "1")],
        [("XADD", "s", "MINID", "12-0", "12-0", "a", "1")],
        [("XADD", "s", "12-0", "a", "1"), ("XTRIM", "s", "MAXLEN", "~", "0")],
        [("XADD", "s", "12-0", "a", "1"), ("XDEL", "s", "12-0")],
        [("XSETID", "s", "5-0")],
        # Under the node's master ID: the appends land in it, out of ID order, and are
        # found (ranges both ways, XINFO's first and last entry, XDEL) as Redis finds them.
        [
            ("XSETID", "s", "5-0"),
            ("XADD", "s", "7-0", "a", "2"),
            ("XADD", "s", "8-0", "b", "2"),
            ("XREVRANGE", "s", "7-0", "-"),
            ("XDEL", "s", "8-0"),
            ("XDEL", "s", "7-0"),
        ],
    ],
)
def test_writes_after_a_stream_emptied_by_xdel_and_xtrim(
    pair: ExactPair, then: list[tuple[str, ...]]
) -> None:
    """What comes next treats the emptied node as Redis does: appends fill it, a trim drops
    it whole or keeps it, and every read agrees after each step."""
    _emptied(pair)
    for cmd in then:
        pair(*cmd)
        read_all(pair, "s")


def test_groups_over_a_stream_emptied_by_xdel_and_xtrim(pair: ExactPair) -> None:
    """Deliveries of entries that then went: the PEL keeps them, XREADGROUP of the history
    gives them as nil, XAUTOCLAIM drops them, lag and entries-read follow Redis."""
    pair.masked = NODES_COMPARED
    pair("XGROUP", "CREATE", "s", "g1", "$", "MKSTREAM")
    pair("XADD", "s", "9-0", "a", "1")
    pair("XADD", "s", "10-0", "b", "1")
    pair("XADD", "s", "11-0", "a", "1", "b", "2", "c", "3")
    pair("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "2", "STREAMS", "s", ">")
    pair("XGROUP", "CREATE", "s", "g2", "0")
    assert pair("XDEL", "s", "11-0") == 1
    assert pair("XTRIM", "s", "MINID", "=", "11-0") == 2
    read_all(pair, "s")
    pair("XREADGROUP", "GROUP", "g2", "bob", "STREAMS", "s", ">")
    read_all(pair, "s")
    pair("XAUTOCLAIM", "s", "g1", "bob", "0", "0-0")
    read_all(pair, "s")
