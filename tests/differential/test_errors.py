"""Errors shared by every command: unknown commands, arity, command-name case, bad numbers."""

from __future__ import annotations

import pytest

from tests.differential.exact import ExactPair


@pytest.mark.parametrize(
    "args",
    [
        ["FOO"],
        ["foo", "a", "b"],
        ["NOSUCH", "it's", 'a"b', ""],
        ["XGROUPS", "CREATE"],
        ["X ADD", "s"],
        ["", "a"],
        ["GET\u00e9", "k"],
        ["NOSUCH", "a" * 200, "b"],
        ["NOSUCH", *[f"arg{i}" for i in range(40)]],
        ["NOSUCH", "x" * 120, "yyyyyyyyyyyyyyyy", "z"],
        ["N" * 200],
        ["NOSUCH", "line\nbreak", "cr\rret"],
        ["FLUSHALL!"],
    ],
)
def test_unknown_command(pair: ExactPair, args: list[str]) -> None:
    """Redis's unknown-command text quotes the name and the first ~128 bytes of arguments."""
    assert pair.err(*args).startswith("ERR unknown command '")


ARITY = {
    "XADD": [[], ["s"], ["s", "*"], ["s", "*", "f"]],
    "XRANGE": [[], ["s"], ["s", "-"]],
    "XREVRANGE": [[], ["s"], ["s", "+"]],
    "XREAD": [[], ["STREAMS"], ["STREAMS", "s"]],
    "XREADGROUP": [[], ["GROUP", "g", "c"], ["GROUP", "g", "c", "STREAMS", "s"]],
    "XLEN": [[], ["s", "t"]],
    "XDEL": [[], ["s"]],
    "XTRIM": [[], ["s"], ["s", "MAXLEN"]],
    "XSETID": [[], ["s"]],
    "XACK": [[], ["s"], ["s", "g"]],
    "XPENDING": [[], ["s"]],
    "XCLAIM": [[], ["s", "g", "c"], ["s", "g", "c", "0"]],
    "XAUTOCLAIM": [[], ["s", "g", "c", "0"]],
    "XGROUP": [[]],
    "XINFO": [[]],
    "PING": [["a", "b"]],
    "ECHO": [[], ["a", "b"]],
    "DEL": [[]],
    "EXISTS": [[]],
    "TYPE": [[], ["a", "b"]],
    "KEYS": [[], ["a", "b"]],
    "SCAN": [[]],
    "DBSIZE": [["x"]],
}


@pytest.mark.parametrize(
    ("command", "args"),
    [(c, a) for c, cases in ARITY.items() for a in cases],
)
def test_wrong_arity(pair: ExactPair, command: str, args: list[str]) -> None:
    """Every command's arity error names it in lower case, whatever case was sent."""
    pair("XADD", "s", "1-1", "f", "v")
    expected = f"ERR wrong number of arguments for '{command.lower()}' command"
    assert pair(command, *args) == expected
    assert pair(command.lower(), *args) == expected
    assert pair(command.capitalize(), *args) == expected


@pytest.mark.parametrize(
    ("command", "sub", "args"),
    [
        ("XGROUP", "CREATE", ["s", "g"]),
        ("XGROUP", "SETID", ["s", "g"]),
        ("XGROUP", "DESTROY", ["s"]),
        ("XGROUP", "CREATECONSUMER", ["s", "g"]),
        ("XGROUP", "DELCONSUMER", ["s", "g"]),
        ("XGROUP", "HELP", ["x"]),
        ("XINFO", "STREAM", []),
        ("XINFO", "GROUPS", []),
        ("XINFO", "CONSUMERS", ["s"]),
        ("XINFO", "HELP", ["x"]),
    ],
)
def test_wrong_subcommand_arity(pair: ExactPair, command: str, sub: str, args: list[str]) -> None:
    """Subcommand arity errors name 'command|subcommand' in lower case."""
    pair("XADD", "s", "1-1", "f", "v")
    expected = f"ERR wrong number of arguments for '{command.lower()}|{sub.lower()}' command"
    assert pair(command, sub, *args) == expected
    assert pair(command, sub.lower(), *args) == expected


NOT_INTEGER = "ERR value is not an integer or out of range"


@pytest.mark.parametrize(
    "args",
    [
        ["XRANGE", "s", "-", "+", "COUNT", "x"],
        ["XRANGE", "s", "-", "+", "COUNT", "1e3"],
        ["XRANGE", "s", "-", "+", "COUNT", " 1"],
        ["XRANGE", "s", "-", "+", "COUNT", "1 "],
        ["XRANGE", "s", "-", "+", "COUNT", ""],
        ["XRANGE", "s", "-", "+", "COUNT", "0x10"],
        ["XRANGE", "s", "-", "+", "COUNT", "-9223372036854775809"],
        ["XREVRANGE", "s", "+", "-", "COUNT", "2.0"],
        ["XREAD", "COUNT", "x", "STREAMS", "s", "0"],
        ["XREADGROUP", "GROUP", "g", "c", "COUNT", "x", "STREAMS", "s", ">"],
        ["XADD", "s", "MAXLEN", "x", "*", "f", "v"],
        ["XADD", "s", "MAXLEN", "~", "1", "LIMIT", "x", "*", "f", "v"],
        ["XTRIM", "s", "MAXLEN", "1.0"],
        ["XTRIM", "s", "MAXLEN", "~", "1", "LIMIT", "1.0"],
        ["XSETID", "s", "5", "ENTRIESADDED", "x"],
        ["XGROUP", "CREATE", "s", "h", "0", "ENTRIESREAD", "x"],
        ["XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "x"],
        ["XPENDING", "s", "g", "-", "+", "x"],
        ["XPENDING", "s", "g", "IDLE", "x", "-", "+", "1"],
        ["XINFO", "STREAM", "s", "FULL", "COUNT", "x"],
        ["SCAN", "0", "COUNT", "x"],
    ],
)
def test_not_an_integer(pair: ExactPair, args: list[str]) -> None:
    """Malformed numbers (spaces, floats, hex, overflow, empty) are refused with one text."""
    pair("XADD", "s", "1-1", "f", "v")
    pair("XGROUP", "CREATE", "s", "g", "0")
    assert pair(*args) == NOT_INTEGER


@pytest.mark.parametrize(
    "args",
    [
        ["XCLAIM", "s", "g", "c", "1.5", "1-1"],
        ["XCLAIM", "s", "g", "c", "0", "1-1", "IDLE", "1.5"],
        ["XCLAIM", "s", "g", "c", "0", "1-1", "TIME", " 5"],
        ["XCLAIM", "s", "g", "c", "0", "1-1", "RETRYCOUNT", "9223372036854775808"],
        ["XAUTOCLAIM", "s", "g", "c", "1.5", "0"],
        ["XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "1.5"],
        ["XREAD", "BLOCK", "1.5", "STREAMS", "s", "0"],
        ["XREADGROUP", "GROUP", "g", "c", "BLOCK", "x", "STREAMS", "s", ">"],
    ],
)
def test_command_specific_number_errors(pair: ExactPair, args: list[str]) -> None:
    """Commands with their own number-error texts (XCLAIM, XAUTOCLAIM, BLOCK timeouts)."""
    pair("XADD", "s", "1-1", "f", "v")
    pair("XGROUP", "CREATE", "s", "g", "0")
    assert pair.err(*args).startswith("ERR ")


def test_command_names_are_case_insensitive(pair: ExactPair) -> None:
    """Command and option keywords are case-insensitive; keys and fields are not."""
    assert pair("xadd", "s", "1-1", "f", "v") == "1-1"
    assert pair("XaDd", "S", "1-1", "F", "V") == "1-1"
    pair("xrange", "s", "-", "+")
    pair("XRANGE", "S", "-", "+")
    assert pair("xlen", "s") == 1
