"""XGROUP and its subcommands against redis-server."""

from __future__ import annotations

import pytest

from tests.differential.exact import ExactPair

NOKEY = (
    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want "
    "to use the MKSTREAM option to create an empty stream automatically."
)
INVALID = "ERR Invalid stream ID specified as stream command argument"
ENTRIESREAD = "ERR value for ENTRIESREAD must be positive or -1"
NOT_INTEGER = "ERR value is not an integer or out of range"


def _groups(pair: ExactPair, key: str = "s") -> list[list[object]]:
    pair("XINFO", "STREAM", key, "FULL")
    reply: list[list[object]] = pair("XINFO", "GROUPS", key)
    return reply


@pytest.fixture
def stream(pair: ExactPair) -> ExactPair:
    """Stream ``s`` with entries 1-0 .. 5-0."""
    pair.fill("s", 5)
    return pair


@pytest.mark.parametrize(
    "args",
    [
        ["$"],
        ["0"],
        ["0-0"],
        ["3"],
        ["3-0"],
        ["5-0"],
        ["99-0"],
        ["0", "ENTRIESREAD", "0"],
        ["0", "ENTRIESREAD", "2"],
        ["3", "ENTRIESREAD", "3"],
        ["3", "ENTRIESREAD", "-1"],
        ["$", "ENTRIESREAD", "9223372036854775807"],
        ["0", "MKSTREAM"],
        ["0", "mkstream", "entriesread", "1"],
        ["0", "ENTRIESREAD", "1", "MKSTREAM"],
    ],
)
def test_create(stream: ExactPair, args: list[str]) -> None:
    """CREATE with `$`, explicit IDs and ENTRIESREAD sets last-delivered-id and lag."""
    assert stream("XGROUP", "CREATE", "s", "g", *args) == "OK"
    _groups(stream)
    stream("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    _groups(stream)


def test_create_mkstream(pair: ExactPair) -> None:
    """Without MKSTREAM a missing key is an error; with it an empty stream appears."""
    assert pair("XGROUP", "CREATE", "s", "g", "$") == NOKEY
    assert pair("EXISTS", "s") == 0
    assert pair("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM") == "OK"
    pair("TYPE", "s")
    pair("XINFO", "STREAM", "s")
    _groups(pair)
    assert pair("XGROUP", "CREATE", "t", "g", "7-0", "MKSTREAM", "ENTRIESREAD", "3") == "OK"
    _groups(pair, "t")
    pair("XINFO", "STREAM", "t")


def test_create_busygroup(stream: ExactPair) -> None:
    """A second CREATE of the same name fails with BUSYGROUP, even with MKSTREAM."""
    stream("XGROUP", "CREATE", "s", "g", "0")
    busy = "BUSYGROUP Consumer Group name already exists"
    assert stream("XGROUP", "CREATE", "s", "g", "$") == busy
    assert stream("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM").startswith("BUSYGROUP")
    # Group names are case-sensitive.
    assert stream("XGROUP", "CREATE", "s", "G", "$") == "OK"
    _groups(stream)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["s", "g", "abc"], INVALID),
        (["s", "g", ">"], INVALID),
        (["s", "g", "-"], INVALID),
        (["s", "g", "+"], INVALID),
        (["s", "g", "1-*"], INVALID),
        (["s", "g", "*"], INVALID),
        (["s", "g", "0", "ENTRIESREAD", "-2"], ENTRIESREAD),
        (["s", "g", "0", "ENTRIESREAD", "abc"], NOT_INTEGER),
        (
            ["s", "g", "0", "FOO"],
            "ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP.",
        ),
        (
            ["s", "g", "0", "ENTRIESREAD"],
            "ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP.",
        ),
        (
            ["s", "g", "0", "MKSTREAM", "MKSTREAM", "ENTRIESREAD", "3"],
            "ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP.",
        ),
        (["s", "g"], "ERR wrong number of arguments for 'xgroup|create' command"),
        ([], "ERR wrong number of arguments for 'xgroup|create' command"),
        (["nokey", "g", "abc"], NOKEY),
        (["nokey", "g", "abc", "MKSTREAM"], INVALID),
        (["nokey", "g", "0", "ENTRIESREAD", "x"], NOT_INTEGER),
        (["nokey", "g", "0", "ENTRIESREAD", "-5", "MKSTREAM"], ENTRIESREAD),
    ],
)
def test_create_errors(stream: ExactPair, args: list[str], expected: str) -> None:
    """CREATE's argument errors, with Redis's texts; no group or key is created."""
    assert stream("XGROUP", "CREATE", *args) == expected
    stream("XINFO", "GROUPS", "s")
    stream("EXISTS", "nokey")


def test_subcommand_case_in_errors(stream: ExactPair) -> None:
    """Redis echoes the subcommand as the client typed it."""
    assert stream("XGROUP", "create", "s", "g", "0", "foo") == (
        "ERR unknown subcommand or wrong number of arguments for 'create'. Try XGROUP HELP."
    )
    assert stream("xgroup", "SetId", "s", "g") == (
        "ERR wrong number of arguments for 'xgroup|setid' command"
    )
    assert stream("XGROUP", "foo") == "ERR unknown subcommand 'foo'. Try XGROUP HELP."
    assert stream("XGROUP", "FOO", "a", "b") == "ERR unknown subcommand 'FOO'. Try XGROUP HELP."
    assert stream("XGROUP") == "ERR wrong number of arguments for 'xgroup' command"


@pytest.mark.parametrize(
    "args",
    [
        ["0"],
        ["$"],
        ["3-0"],
        ["0", "ENTRIESREAD", "0"],
        ["2", "ENTRIESREAD", "2"],
        ["2", "ENTRIESREAD", "4"],
        ["$", "ENTRIESREAD", "-1"],
        ["99", "entriesread", "7"],
    ],
)
def test_setid(stream: ExactPair, args: list[str]) -> None:
    """SETID moves last-delivered-id; without ENTRIESREAD entries-read becomes unknown."""
    stream("XGROUP", "CREATE", "s", "g", "0")
    stream("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">")
    _groups(stream)
    assert stream("XGROUP", "SETID", "s", "g", *args) == "OK"
    _groups(stream)
    stream("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    _groups(stream)
    # The PEL is kept by SETID.
    stream("XPENDING", "s", "g")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["s", "nog", "0"], "NOGROUP No such consumer group 'nog' for key name 's'"),
        (["nokey", "g", "0"], NOKEY),
        (["s", "g", "abc"], INVALID),
        (["s", "g", ">"], INVALID),
        (["s", "g", "0", "ENTRIESREAD", "-3"], ENTRIESREAD),
        (["s", "g", "0", "ENTRIESREAD", "x"], NOT_INTEGER),
        (
            ["s", "g", "0", "FOO"],
            "ERR unknown subcommand or wrong number of arguments for 'SETID'. Try XGROUP HELP.",
        ),
        (
            ["s", "g", "0", "MKSTREAM"],
            "ERR unknown subcommand or wrong number of arguments for 'SETID'. Try XGROUP HELP.",
        ),
        (["s", "g"], "ERR wrong number of arguments for 'xgroup|setid' command"),
    ],
)
def test_setid_errors(stream: ExactPair, args: list[str], expected: str) -> None:
    """SETID's errors; the group is left as it was."""
    stream("XGROUP", "CREATE", "s", "g", "2")
    assert stream("XGROUP", "SETID", *args) == expected
    _groups(stream)


def test_destroy(stream: ExactPair) -> None:
    """DESTROY replies 1 then 0, drops the PEL, and the name can be reused."""
    stream("XGROUP", "CREATE", "s", "g", "0")
    stream("XGROUP", "CREATE", "s", "h", "0")
    stream("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert stream("XGROUP", "DESTROY", "s", "g") == 1
    assert stream("XGROUP", "DESTROY", "s", "g") == 0
    assert stream("XPENDING", "s", "g").startswith("NOGROUP")
    _groups(stream)
    assert stream("XGROUP", "CREATE", "s", "g", "$") == "OK"
    stream("XPENDING", "s", "g")
    _groups(stream)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["nokey", "g"], NOKEY),
        (["s"], "ERR wrong number of arguments for 'xgroup|destroy' command"),
        (["s", "g", "x"], "ERR wrong number of arguments for 'xgroup|destroy' command"),
    ],
)
def test_destroy_errors(stream: ExactPair, args: list[str], expected: str) -> None:
    """DESTROY on a missing key, or with the wrong arity."""
    assert stream("XGROUP", "DESTROY", *args) == expected


def test_createconsumer(stream: ExactPair) -> None:
    """CREATECONSUMER replies 1 for a new consumer and 0 for an existing one."""
    stream("XGROUP", "CREATE", "s", "g", "0")
    assert stream("XGROUP", "CREATECONSUMER", "s", "g", "c1") == 1
    assert stream("XGROUP", "CREATECONSUMER", "s", "g", "c1") == 0
    assert stream("XGROUP", "CREATECONSUMER", "s", "g", "C1") == 1
    stream("XREADGROUP", "GROUP", "g", "c2", "COUNT", "1", "STREAMS", "s", ">")
    assert stream("XGROUP", "CREATECONSUMER", "s", "g", "c2") == 0
    stream("XINFO", "CONSUMERS", "s", "g")
    _groups(stream)


@pytest.mark.parametrize("sub", ["CREATECONSUMER", "DELCONSUMER"])
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["s", "nog", "c"], "NOGROUP No such consumer group 'nog' for key name 's'"),
        (["nokey", "g", "c"], NOKEY),
        (["s", "g"], "ERR wrong number of arguments for 'xgroup|{sub}' command"),
        (["s", "g", "c", "d"], "ERR wrong number of arguments for 'xgroup|{sub}' command"),
    ],
)
def test_consumer_subcommand_errors(
    stream: ExactPair, sub: str, args: list[str], expected: str
) -> None:
    """CREATECONSUMER/DELCONSUMER errors: missing group, missing key, arity."""
    stream("XGROUP", "CREATE", "s", "g", "0")
    assert stream("XGROUP", sub, *args) == expected.format(sub=sub.lower())


def test_delconsumer_returns_pending_count(stream: ExactPair) -> None:
    """DELCONSUMER replies how many pending entries the consumer had, and drops them."""
    stream("XGROUP", "CREATE", "s", "g", "0")
    stream("XREADGROUP", "GROUP", "g", "c1", "COUNT", "3", "STREAMS", "s", ">")
    stream("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", ">")
    stream("XGROUP", "CREATECONSUMER", "s", "g", "c3")
    assert stream("XGROUP", "DELCONSUMER", "s", "g", "c1") == 3
    assert stream("XGROUP", "DELCONSUMER", "s", "g", "c1") == 0
    assert stream("XGROUP", "DELCONSUMER", "s", "g", "c3") == 0
    stream("XPENDING", "s", "g")
    stream("XPENDING", "s", "g", "-", "+", "10")
    stream("XINFO", "CONSUMERS", "s", "g")
    _groups(stream)


def test_help(pair: ExactPair) -> None:
    """XGROUP HELP's lines, verbatim; it takes no arguments."""
    assert len(pair("XGROUP", "HELP")) == 17
    pair("XGROUP", "help")
    assert pair("XGROUP", "HELP", "x") == "ERR wrong number of arguments for 'xgroup|help' command"
