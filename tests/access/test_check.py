"""The one permission decision: every command in the table, against grants of each shape."""

from __future__ import annotations

import pytest

from app.access import (
    ADMIN,
    Grant,
    GrantError,
    Kind,
    NoPerm,
    Principal,
    Verb,
    check_command,
    readable,
)
from app.engine.commands import COMMANDS, lookup
from app.engine.commands.table import Access

NO_CMD = "NOPERM this user has no permissions to run the '{}' command"
NO_KEY = "NOPERM this user has no permissions to access one of the keys used as arguments"

READER = Grant.of(read=["orders*"])
WORKER = Grant.of(consume=["orders*"])
PRODUCER = Grant.of(write=["orders*"])

# (command line, the verb it needs) — one line per command the service answers.
LINES: list[tuple[list[str], str]] = [
    (["PING"], "none"),
    (["ECHO", "x"], "none"),
    (["XGROUP", "HELP"], "none"),
    (["XINFO", "HELP"], "none"),
    (["XRANGE", "orders", "-", "+"], "read"),
    (["XREVRANGE", "orders", "+", "-"], "read"),
    (["XLEN", "orders"], "read"),
    (["XREAD", "STREAMS", "orders", "0"], "read"),
    (["XINFO", "STREAM", "orders"], "read"),
    (["XINFO", "GROUPS", "orders"], "read"),
    (["XINFO", "CONSUMERS", "orders", "g"], "read"),
    (["EXISTS", "orders"], "read"),
    (["TYPE", "orders"], "read"),
    (["XREADGROUP", "GROUP", "g", "c", "STREAMS", "orders", ">"], "consume"),
    (["XACK", "orders", "g", "1-1"], "consume"),
    (["XPENDING", "orders", "g"], "consume"),
    (["XCLAIM", "orders", "g", "c", "0", "1-1"], "consume"),
    (["XAUTOCLAIM", "orders", "g", "c", "0", "0"], "consume"),
    (["XNACK", "orders", "g", "FAIL", "IDS", "1", "1-1"], "consume"),
    (["XACKDEL", "orders", "g", "IDS", "1", "1-1"], "consume+write"),
    (["XDELEX", "orders", "IDS", "1", "1-1"], "write"),
    (["XADD", "orders", "*", "f", "v"], "write"),
    (["XDEL", "orders", "1-1"], "write"),
    (["XTRIM", "orders", "MAXLEN", "0"], "write"),
    (["XSETID", "orders", "1-1"], "write"),
    (["XCFGSET", "orders", "IDMP-MAXSIZE", "5"], "write"),
    (["XIDMPRECORD", "orders", "p", "i", "1-1"], "write"),
    (["XADD", "orders", "IDMP", "p", "i", "*", "f", "v"], "write"),
    (["DEL", "orders"], "write"),
    (["XGROUP", "CREATE", "orders", "g", "$"], "write"),
    (["XGROUP", "SETID", "orders", "g", "$"], "write"),
    (["XGROUP", "DESTROY", "orders", "g"], "write"),
    (["XGROUP", "CREATECONSUMER", "orders", "g", "c"], "write"),
    (["XGROUP", "DELCONSUMER", "orders", "g", "c"], "write"),
    (["KEYS", "*"], "admin"),
    (["DBSIZE"], "admin"),
    (["FLUSHDB"], "admin"),
    (["FLUSHALL"], "admin"),
    (["SCAN", "0"], "list"),
    (["RENAME", "orders", "orders2"], "write"),
    (["RENAMENX", "orders", "orders2"], "write"),
    (["DUMP", "orders"], "read"),
    (["RESTORE", "orders", "0", "payload"], "write"),
    (["INFO"], "admin"),
    (["CONFIG", "GET", "*"], "admin"),
    (["CONFIG", "SET", "stream-node-max-entries", "10"], "admin"),
    (["CONFIG", "RESETSTAT"], "admin"),
    (["CONFIG", "HELP"], "none"),
]
GRANTS = {"read": READER, "consume": WORKER, "write": PRODUCER}


def who(grant: Grant) -> Principal:
    """A caller holding ``grant`` through a credential it sent (a header, the query)."""
    return Principal("caller", grant, Kind.KEY)


def test_every_command_is_in_the_table_of_cases() -> None:
    names = {n for n, c in COMMANDS.items() if not c.subcommands}
    names |= {s.name for c in COMMANDS.values() for s in c.subcommands.values()}
    covered = {lookup(argv).name for argv, _ in LINES}
    assert names == covered


@pytest.mark.parametrize(("argv", "needs"), LINES, ids=lambda x: str(x))
def test_each_verb_reaches_exactly_its_commands(argv: list[str], needs: str) -> None:
    cmd = lookup(argv)
    assert cmd.access is Access(needs)
    check_command(who(ADMIN), cmd, argv)  # admin runs everything
    if needs == "consume+write":  # XACKDEL both acknowledges and deletes
        check_command(who(Grant.of(consume=["orders*"], write=["orders*"])), cmd, argv)
    for verb, grant in GRANTS.items():
        if needs in ("none",) or needs == verb or (needs == "list" and verb == "read"):
            check_command(who(grant), cmd, argv)
        else:
            with pytest.raises(NoPerm) as e:
                check_command(who(grant), cmd, argv)
            assert e.value.text == NO_CMD.format(cmd.name)


@pytest.mark.parametrize(
    ("grant", "argv"),
    [
        (READER, ["XRANGE", "payments", "-", "+"]),
        (READER, ["XREAD", "STREAMS", "orders", "payments", "0", "0"]),  # every key, not one
        (WORKER, ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "orders", "other", ">", ">"]),
        (PRODUCER, ["XADD", "order", "*", "f", "v"]),  # "orders*" needs the s
        (PRODUCER, ["DEL", "orders-1", "x"]),
        # XACKDEL needs both verbs on the key: consume here, write only elsewhere.
        (
            Grant.of(consume=["orders*"], write=["other*"]),
            ["XACKDEL", "orders", "g", "IDS", "1", "1-1"],
        ),
    ],
)
def test_a_verb_held_elsewhere_refuses_the_key(grant: Grant, argv: list[str]) -> None:
    with pytest.raises(NoPerm) as e:
        check_command(who(grant), lookup(argv), argv)
    assert e.value.text == NO_KEY


def test_globs_are_redis_globs() -> None:
    g = Grant.of(read=["a[0-9]", "b?", r"c\*"])
    for key, ok in [("a1", True), ("a10", False), ("bx", True), ("c*", True), ("cx", False)]:
        argv = ["XLEN", key]
        if ok:
            check_command(who(g), lookup(argv), argv)
        else:
            with pytest.raises(NoPerm):
                check_command(who(g), lookup(argv), argv)


def test_scan_lists_only_what_may_be_read() -> None:
    assert readable(READER, ["orders", "payments", "orders-2"]) == ["orders", "orders-2"]
    assert readable(ADMIN, ["x", "y"]) == ["x", "y"]
    assert readable(PRODUCER, ["orders"]) == []


@pytest.mark.parametrize(
    "doc",
    [
        None,
        [],
        {"read": "x", "delete": ["y"]},
        {"read": [1]},
        {"read": [""]},
        {"admin": "yes"},
        {"metrics": 1},
        {"write": {"a": 1}},
    ],
)
def test_a_malformed_grant_is_refused(doc: object) -> None:
    with pytest.raises(GrantError):
        Grant.from_json(doc)


def test_a_grant_round_trips_through_json() -> None:
    g = Grant.of(read=["a*"], consume=["b"], write=["c", "d"], admin=False)
    assert Grant.from_json(g.to_json()) == g
    assert Grant.from_json({"read": "a*"}) == Grant.of(read=["a*"])
    watcher = Grant.of(metrics=True)
    assert Grant.from_json(watcher.to_json()) == watcher == Grant.from_json({"metrics": True})


def test_metrics_is_held_or_not_and_reaches_no_stream() -> None:
    watcher = Grant.of(metrics=True)
    assert watcher.has(Verb.METRICS) and ADMIN.has(Verb.METRICS)
    assert not READER.has(Verb.METRICS)
    assert not any(watcher.has(v) for v in (Verb.READ, Verb.CONSUME, Verb.WRITE))
    assert not watcher.allows(Verb.READ, "orders")
