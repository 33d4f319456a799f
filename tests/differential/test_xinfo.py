"""XINFO STREAM [FULL [COUNT n]], GROUPS and CONSUMERS against redis-server.

The group scenarios pin Redis 7.0's entries-read and lag arithmetic, including the cases where
Redis cannot know them and replies null (tombstones after the group, XSETID, SETID without
ENTRIESREAD).
"""

from __future__ import annotations

import pytest

from tests.differential.exact import ExactPair

NOKEY = "ERR no such key"
STREAM_SYNTAX = "ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP."

Cmd = tuple[str, ...]


def _info(pair: ExactPair) -> None:
    pair("XINFO", "GROUPS", "s")
    pair("XINFO", "STREAM", "s")
    pair("XINFO", "STREAM", "s", "FULL")


def _read(group: str, count: int | None = None, consumer: str = "c") -> Cmd:
    opts = ("COUNT", str(count)) if count else ()
    return ("XREADGROUP", "GROUP", group, consumer, *opts, "STREAMS", "s", ">")


SCENARIOS: dict[str, list[Cmd]] = {
    "fresh-group-at-0": [("XGROUP", "CREATE", "s", "g", "0")],
    "fresh-group-at-dollar": [("XGROUP", "CREATE", "s", "g", "$")],
    "group-in-the-middle": [("XGROUP", "CREATE", "s", "g", "5-0")],
    "group-at-first-entry": [("XGROUP", "CREATE", "s", "g", "1-0")],
    "group-beyond-last": [("XGROUP", "CREATE", "s", "g", "99-0")],
    "partial-then-full-read": [
        ("XGROUP", "CREATE", "s", "g", "0"),
        _read("g", 3),
        _read("g", 4),
        _read("g"),
        ("XADD", "s", "11-0", "f", "v"),
        ("XADD", "s", "12-0", "f", "v"),
        _read("g", 1),
    ],
    "xdel-after-group-position": [
        ("XGROUP", "CREATE", "s", "g", "0"),
        _read("g", 3),
        ("XDEL", "s", "6-0"),
        _read("g", 2),
        _read("g", 2),
        _read("g"),
    ],
    "xdel-before-group-position": [
        ("XGROUP", "CREATE", "s", "g", "0"),
        _read("g", 5),
        ("XDEL", "s", "2-0"),
        _read("g", 1),
    ],
    "xdel-first-and-last": [
        ("XGROUP", "CREATE", "s", "g", "0"),
        ("XDEL", "s", "1-0"),
        ("XDEL", "s", "10-0"),
        _read("g", 2),
        _read("g"),
        ("XADD", "s", "11-0", "f", "v"),
    ],
    "xdel-last-entry-then-add": [
        ("XGROUP", "CREATE", "s", "g", "$"),
        ("XDEL", "s", "10-0"),
        ("XADD", "s", "11-0", "f", "v"),
        _read("g"),
    ],
    "xtrim-from-the-front": [
        ("XGROUP", "CREATE", "s", "g", "0"),
        _read("g", 2),
        ("XTRIM", "s", "MAXLEN", "5"),
        _read("g", 1),
        ("XTRIM", "s", "MINID", "9"),
        _read("g"),
    ],
    "xtrim-everything": [
        ("XGROUP", "CREATE", "s", "g", "0"),
        ("XGROUP", "CREATE", "s", "h", "$"),
        ("XTRIM", "s", "MAXLEN", "0"),
        ("XADD", "s", "11-0", "f", "v"),
        _read("g"),
        _read("h"),
    ],
    "xsetid-forward": [
        ("XGROUP", "CREATE", "s", "g", "0"),
        _read("g", 4),
        ("XSETID", "s", "50-0"),
        ("XADD", "s", "60-0", "f", "v"),
        _read("g", 2),
    ],
    "xsetid-entriesadded-maxdeletedid": [
        ("XGROUP", "CREATE", "s", "g", "0"),
        _read("g", 4),
        ("XSETID", "s", "10-0", "ENTRIESADDED", "20", "MAXDELETEDID", "5-0"),
        _read("g", 2),
        _read("g"),
    ],
    "xsetid-maxdeleted-beyond-group": [
        ("XGROUP", "CREATE", "s", "g", "8-0"),
        ("XSETID", "s", "30-0", "ENTRIESADDED", "10", "MAXDELETEDID", "20-0"),
        ("XADD", "s", "31-0", "f", "v"),
        _read("g"),
    ],
    "setid-without-entriesread": [
        ("XGROUP", "CREATE", "s", "g", "0"),
        _read("g", 6),
        ("XGROUP", "SETID", "s", "g", "3-0"),
        _read("g", 1),
        ("XGROUP", "SETID", "s", "g", "$"),
        ("XGROUP", "SETID", "s", "g", "0"),
    ],
    "setid-with-entriesread": [
        ("XGROUP", "CREATE", "s", "g", "0"),
        ("XGROUP", "SETID", "s", "g", "3-0", "ENTRIESREAD", "3"),
        _read("g", 1),
        ("XGROUP", "SETID", "s", "g", "3-0", "ENTRIESREAD", "8"),
        ("XGROUP", "SETID", "s", "g", "3-0", "ENTRIESREAD", "-1"),
        _read("g", 1),
    ],
    "create-with-entriesread": [
        ("XGROUP", "CREATE", "s", "g", "4-0", "ENTRIESREAD", "4"),
        ("XGROUP", "CREATE", "s", "h", "4-0", "ENTRIESREAD", "9"),
        ("XGROUP", "CREATE", "s", "k", "0", "ENTRIESREAD", "0"),
        _read("g", 2),
        _read("h", 2),
        _read("k", 2),
    ],
    "noack-and-several-groups": [
        ("XGROUP", "CREATE", "s", "a", "0"),
        ("XGROUP", "CREATE", "s", "b", "$"),
        ("XGROUP", "CREATE", "s", "c", "3"),
        ("XREADGROUP", "GROUP", "a", "x", "NOACK", "COUNT", "4", "STREAMS", "s", ">"),
        ("XADD", "s", "11-0", "f", "v"),
        _read("b"),
        _read("c", 2),
        ("XDEL", "s", "11-0"),
        _read("a"),
    ],
    "claims-and-acks": [
        ("XGROUP", "CREATE", "s", "g", "0"),
        _read("g", 5, "c1"),
        ("XCLAIM", "s", "g", "c2", "0", "2-0", "3-0"),
        ("XACK", "s", "g", "1-0", "3-0"),
        ("XCLAIM", "s", "g", "c2", "0", "9-0", "FORCE", "LASTID", "9-0"),
        ("XAUTOCLAIM", "s", "g", "c3", "0", "0", "COUNT", "1"),
    ],
}


@pytest.mark.parametrize("steps", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_group_entries_read_and_lag(pair: ExactPair, steps: list[Cmd]) -> None:
    """entries-read and lag follow Redis 7.0 after every step, null when Redis can't tell."""
    pair.fill("s", 10)
    for step in steps:
        pair(*step)
        _info(pair)


def test_lag_on_empty_streams(pair: ExactPair) -> None:
    """A group on a stream that never had entries has lag 0; after deletions it may be null."""
    pair("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    _info(pair)
    pair("XADD", "s", "1-0", "f", "v")
    _info(pair)
    pair("XDEL", "s", "1-0")
    _info(pair)
    pair(*_read("g"))
    _info(pair)


def test_stream_info_metadata(pair: ExactPair) -> None:
    """Length, IDs, entries-added and first/last entries track adds, deletes and trims."""
    pair("XADD", "s", "1-1", "a", "1", "b", "2")
    pair("XINFO", "STREAM", "s")
    pair.fill("s", 5, "x", "y", start=2)
    pair("XDEL", "s", "3-0")
    pair("XINFO", "STREAM", "s")
    pair("XTRIM", "s", "MAXLEN", "2")
    pair("XINFO", "STREAM", "s")
    pair("XDEL", "s", "5-0", "6-0")
    pair("XINFO", "STREAM", "s")
    pair("XINFO", "STREAM", "s", "FULL")


def test_stream_full_count(pair: ExactPair) -> None:
    """FULL lists 10 entries and PEL rows by default; COUNT changes it, 0 means all."""
    pair.fill("s", 25)
    pair("XGROUP", "CREATE", "s", "g", "0")
    pair("XGROUP", "CREATE", "s", "empty", "$")
    pair(*_read("g", 15, "c1"))
    pair(*_read("g", None, "c2"))
    pair("XGROUP", "CREATECONSUMER", "s", "g", "c3")
    pair("XDEL", "s", "4-0")
    for count in [None, "0", "1", "3", "12", "100", "-1"]:
        pair("XINFO", "STREAM", "s", "FULL", *(("COUNT", count) if count else ()))


def test_consumers(pair: ExactPair) -> None:
    """XINFO CONSUMERS: name, pending and idle (masked), sorted by name."""
    pair.fill("s", 5)
    pair("XGROUP", "CREATE", "s", "g", "0")
    pair("XGROUP", "CREATECONSUMER", "s", "g", "zed")
    pair(*_read("g", 2, "bob"))
    pair(*_read("g", 1, "alice"))
    pair(*_read("g", 1, "Bob"))
    pair("XCLAIM", "s", "g", "zed", "0", "1-0")
    assert [c[1] for c in pair("XINFO", "CONSUMERS", "s", "g")] == ["Bob", "alice", "bob", "zed"]
    pair("XGROUP", "DELCONSUMER", "s", "g", "bob")
    pair("XINFO", "CONSUMERS", "s", "g")
    pair("XGROUP", "CREATE", "s", "h", "0")
    assert pair("XINFO", "CONSUMERS", "s", "h") == []


def test_groups_sorted_and_counts(pair: ExactPair) -> None:
    """XINFO GROUPS lists groups in name order with consumer and pending counts."""
    pair.fill("s", 4)
    for name in ["b", "a", "C", "aa"]:
        pair("XGROUP", "CREATE", "s", name, "0")
    pair(*_read("aa", 2, "x"))
    pair(*_read("aa", 1, "y"))
    assert [g[1] for g in pair("XINFO", "GROUPS", "s")] == ["C", "a", "aa", "b"]
    _info(pair)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], "ERR wrong number of arguments for 'xinfo' command"),
        (["FOO"], "ERR unknown subcommand 'FOO'. Try XINFO HELP."),
        (["foo", "s"], "ERR unknown subcommand 'foo'. Try XINFO HELP."),
        (["STREAM"], "ERR wrong number of arguments for 'xinfo|stream' command"),
        (["stream"], "ERR wrong number of arguments for 'xinfo|stream' command"),
        (["STREAM", "nokey"], NOKEY),
        (["STREAM", "nokey", "FULL"], NOKEY),
        (["STREAM", "s", "COUNT", "1"], STREAM_SYNTAX),
        (["STREAM", "s", "FULL", "COUNT"], STREAM_SYNTAX),
        (["STREAM", "s", "FOO"], STREAM_SYNTAX),
        (["STREAM", "s", "FULL", "FOO", "1"], STREAM_SYNTAX),
        (
            ["stream", "s", "foo"],
            "ERR unknown subcommand or wrong number of arguments for 'stream'. Try XINFO HELP.",
        ),
        (
            ["Stream", "s", "full", "count"],
            "ERR unknown subcommand or wrong number of arguments for 'Stream'. Try XINFO HELP.",
        ),
        (["STREAM", "s", "FULL", "COUNT", "abc"], "ERR value is not an integer or out of range"),
        (["GROUPS"], "ERR wrong number of arguments for 'xinfo|groups' command"),
        (["GROUPS", "s", "x"], "ERR wrong number of arguments for 'xinfo|groups' command"),
        (["GROUPS", "nokey"], NOKEY),
        (["CONSUMERS", "s"], "ERR wrong number of arguments for 'xinfo|consumers' command"),
        (
            ["CONSUMERS", "s", "g", "x"],
            "ERR wrong number of arguments for 'xinfo|consumers' command",
        ),
        (["CONSUMERS", "nokey", "g"], NOKEY),
        (["CONSUMERS", "s", "nog"], "NOGROUP No such consumer group 'nog' for key name 's'"),
        (["HELP", "x"], "ERR wrong number of arguments for 'xinfo|help' command"),
    ],
)
def test_errors(pair: ExactPair, args: list[str], expected: str) -> None:
    """XINFO's errors with Redis's exact texts."""
    pair.fill("s", 2)
    assert pair("XINFO", *args) == expected


def test_help(pair: ExactPair) -> None:
    """XINFO HELP's lines, verbatim."""
    assert len(pair("XINFO", "HELP")) == 9
    pair("xinfo", "help")


def test_stream_subcommand_case(pair: ExactPair) -> None:
    """Subcommand and FULL/COUNT keywords are case-insensitive."""
    pair.fill("s", 3)
    pair("xinfo", "stream", "s")
    pair("XINFO", "Stream", "s", "full", "count", "2")
    pair("xinfo", "groups", "s")
