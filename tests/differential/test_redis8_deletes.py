"""XDELEX and XACKDEL against redis-server 8.6: every policy and status code, every error
text and the order in which they are checked, missing keys and groups, repeated IDS blocks
and repeated IDs. After each write the whole state is compared (``same_state``)."""

from __future__ import annotations

import pytest

from tests.conftest import ReplyError
from tests.differential.redis8 import Pair8

POLICIES = ("KEEPREF", "DELREF", "ACKED")
INVALID_ID = "ERR Invalid stream ID specified as stream command argument"
NUMIDS = "ERR Number of IDs must be a positive integer"
MISMATCH = "ERR The `numids` parameter must match the number of arguments"
SYNTAX = "ERR syntax error"


def same_state(p: Pair8, key: str = "s", groups: tuple[str, ...] = ("g", "h")) -> None:
    """Everything a client can read of ``key`` is equal on both servers."""
    p.many(
        [
            ("XRANGE", key, "-", "+"),
            ("XINFO", "STREAM", key, "FULL"),
            ("XINFO", "GROUPS", key),
            *(("XPENDING", key, g, "-", "+", "100") for g in groups),
            *(("XPENDING", key, g) for g in groups),
        ]
    )


def two_groups(p: Pair8, n: int = 8) -> None:
    """Entries 1..n; group g delivered 1..4 to alice (1 acked), group h delivered 1..2 to
    bob: entries pending in one group, in both, in none, undelivered to one or both."""
    p.fill("s", n)
    p.run(
        ("XGROUP", "CREATE", "s", "g", "0"),
        ("XGROUP", "CREATE", "s", "h", "0"),
        ("XREADGROUP", "GROUP", "g", "alice", "COUNT", "4", "STREAMS", "s", ">"),
        ("XREADGROUP", "GROUP", "h", "bob", "COUNT", "2", "STREAMS", "s", ">"),
        ("XACK", "s", "g", "1-0"),
    )


@pytest.mark.parametrize("policy", [*POLICIES, None])
def test_xdelex_each_policy_codes(pair8: Pair8, policy: str | None) -> None:
    """Each ID alone, so each code is seen for an entry pending in both groups, in one,
    acked in one and undelivered to the other, undelivered to all, and absent."""
    p = pair8
    two_groups(p)
    opt = [policy] if policy else []
    for sid in ("1-0", "2-0", "3-0", "6-0", "9-0", "8-0"):
        p("XDELEX", "s", *opt, "IDS", "1", sid)
        same_state(p)


@pytest.mark.parametrize("policy", POLICIES)
def test_xdelex_many_ids_and_duplicates(pair8: Pair8, policy: str) -> None:
    p = pair8
    two_groups(p)
    p("XDELEX", "s", policy, "IDS", "6", "2-0", "2-0", "5-0", "7-0", "100-0", "5-0")
    same_state(p)
    p("XDELEX", "s", "IDS", "3", "3-0", "3-0", "3-0")
    same_state(p)


@pytest.mark.parametrize("policy", POLICIES)
def test_delref_on_entries_already_gone(pair8: Pair8, policy: str) -> None:
    """An entry deleted with XDEL stays pending; DELREF then clears the references (-1)."""
    p = pair8
    two_groups(p)
    p("XDEL", "s", "2-0", "3-0")
    same_state(p)
    p("XDELEX", "s", policy, "IDS", "2", "2-0", "3-0")
    same_state(p)


def test_xdelex_without_groups(pair8: Pair8) -> None:
    p = pair8
    p.fill("s", 5)
    for policy in POLICIES:
        p("XDELEX", "s", policy, "IDS", "2", f"{POLICIES.index(policy) + 1}-0", "9-0")
        same_state(p, groups=())


@pytest.mark.parametrize("policy", [*POLICIES, None])
def test_xackdel_each_policy_codes(pair8: Pair8, policy: str | None) -> None:
    """XACKDEL in g of: pending in both groups, pending in g only, acked already, not
    delivered, absent; then in h of what is left."""
    p = pair8
    two_groups(p)
    opt = [policy] if policy else []
    for sid in ("2-0", "3-0", "1-0", "6-0", "9-0", "4-0"):
        p("XACKDEL", "s", "g", *opt, "IDS", "1", sid)
        same_state(p)
    for sid in ("1-0", "2-0"):
        p("XACKDEL", "s", "h", *opt, "IDS", "1", sid)
        same_state(p)


@pytest.mark.parametrize("policy", POLICIES)
def test_xackdel_many_ids_and_duplicates(pair8: Pair8, policy: str) -> None:
    p = pair8
    two_groups(p)
    p("XACKDEL", "s", "g", policy, "IDS", "5", "2-0", "2-0", "4-0", "7-0", "4-0")
    same_state(p)


@pytest.mark.parametrize("policy", POLICIES)
def test_xackdel_of_pending_entry_deleted(pair8: Pair8, policy: str) -> None:
    """A pending entry whose stream entry is gone: acknowledged, code of the deletion."""
    p = pair8
    two_groups(p)
    p("XDEL", "s", "3-0")
    p("XACKDEL", "s", "g", policy, "IDS", "2", "3-0", "2-0")
    same_state(p)
    p("XACKDEL", "s", "h", policy, "IDS", "2", "2-0", "1-0")
    same_state(p)


def test_xackdel_missing_key_or_group(pair8: Pair8) -> None:
    p = pair8
    two_groups(p)
    assert p("XACKDEL", "s", "nogroup", "IDS", "2", "1-0", "2-0") == [-1, -1]
    assert p("XACKDEL", "nokey", "g", "IDS", "2", "1-0", "2-0") == [-1, -1]
    assert p("XDELEX", "nokey", "ACKED", "IDS", "1", "1-0") == [-1]
    same_state(p)


def test_missing_key_does_not_validate_ids(pair8: Pair8) -> None:
    """On a missing key (or group) each ID answers -1, even one that is no ID."""
    p = pair8
    assert p("XDELEX", "nokey", "IDS", "2", "bad", "1-0") == [-1, -1]
    assert p("XACKDEL", "nokey", "g", "IDS", "1", "bad") == [-1]
    p.fill("s", 2)
    p("XGROUP", "CREATE", "s", "g", "0")
    assert p("XACKDEL", "s", "nogroup", "IDS", "2", "bad", "1-0") == [-1, -1]
    assert p.err("XACKDEL", "s", "g", "IDS", "2", "1-0", "bad") == INVALID_ID


@pytest.mark.parametrize("command", [("XDELEX", "s"), ("XACKDEL", "s", "g")])
def test_repeated_ids_blocks(pair8: Pair8, command: tuple[str, ...]) -> None:
    """A later IDS block replaces an earlier one: only its IDs are touched."""
    p = pair8
    two_groups(p)
    p(*command, "IDS", "2", "1-0", "2-0", "IDS", "1", "3-0")
    same_state(p)
    p(*command, "ids", "1", "4-0", "ACKED", "IDS", "2", "5-0", "2-0")
    same_state(p)
    # The earlier block's count is checked as it is read; its IDs are not (it is replaced).
    assert p.err(*command, "IDS", "0", "IDS", "1", "6-0") == NUMIDS
    p(*command, "IDS", "1", "bad", "IDS", "1", "6-0")
    same_state(p)


ERRORS: list[tuple[tuple[str, ...], str]] = [
    (("IDS", "0", "1-0"), NUMIDS),
    (("IDS", "-1", "1-0"), NUMIDS),
    (("IDS", "x", "1-0"), NUMIDS),
    (("IDS", "1.5", "1-0"), NUMIDS),
    (("IDS", "9223372036854775808", "1-0"), NUMIDS),
    (("IDS", "3", "1-0"), MISMATCH),
    (("IDS", "2", "1-0"), MISMATCH),
    (("IDS", "1", "1-0", "2-0"), SYNTAX),
    (("IDS", "1", "1-0", "KEEPREF", "DELREF"), SYNTAX),
    (("KEEPREF", "DELREF", "IDS", "1", "1-0"), SYNTAX),
    (("ACKED", "ACKED", "IDS", "1", "1-0"), SYNTAX),
    (("FOO", "IDS", "1", "1-0"), SYNTAX),
    (("ACKED", "1-0", "2-0"), SYNTAX),
    (("KEEPREF", "ACKED", "IDS"), SYNTAX),
    (("IDS", "1", "bad"), INVALID_ID),
    (("IDS", "2", "1-0", "bad"), INVALID_ID),
    (("IDS", "2", "bad", "1-0"), INVALID_ID),
    (("IDS", "1", "+"), INVALID_ID),
    (("IDS", "1", "-"), INVALID_ID),
    (("IDS", "1", "1-*"), INVALID_ID),
    (("IDS", "1", "18446744073709551616-0"), INVALID_ID),
    # The order of checks: an option error before an ID error, the count before the IDs.
    (("IDS", "1", "bad", "FOO"), SYNTAX),
    (("IDS", "2", "bad"), MISMATCH),
    (("IDS", "0", "bad", "FOO"), NUMIDS),
    (("FOO", "IDS", "0"), SYNTAX),
    (("DELREF", "IDS", "1", "bad", "DELREF"), SYNTAX),
]


@pytest.mark.parametrize(("tail", "text"), ERRORS, ids=[" ".join(t) for t, _ in ERRORS])
@pytest.mark.parametrize("command", [("XDELEX", "s"), ("XACKDEL", "s", "g")])
def test_errors_change_nothing(
    pair8: Pair8, command: tuple[str, ...], tail: tuple[str, ...], text: str
) -> None:
    p = pair8
    two_groups(p)
    assert p.err(*command, *tail) == text
    same_state(p)


@pytest.mark.parametrize("command", [("XDELEX", "s"), ("XACKDEL", "s", "g")])
def test_option_errors_on_a_missing_key(pair8: Pair8, command: tuple[str, ...]) -> None:
    """Options are parsed before the key is looked up; the IDs are not."""
    p = pair8
    missing = ("XDELEX", "nokey") if command[0] == "XDELEX" else ("XACKDEL", "nokey", "g")
    assert p.err(*missing, "IDS", "0", "1-0") == NUMIDS
    assert p.err(*missing, "IDS", "2", "1-0") == MISMATCH
    assert p.err(*missing, "FOO", "IDS", "1", "1-0") == SYNTAX
    assert p(*missing, "IDS", "1", "bad") == [-1]


@pytest.mark.parametrize(
    "args",
    [
        ("XDELEX",),
        ("XDELEX", "s"),
        ("XDELEX", "s", "IDS"),
        ("XDELEX", "s", "IDS", "1"),
        ("XACKDEL", "s", "g"),
        ("XACKDEL", "s", "g", "IDS"),
        ("XACKDEL", "s", "g", "IDS", "1"),
    ],
)
def test_arity(pair8: Pair8, args: tuple[str, ...]) -> None:
    p = pair8
    p.fill("s", 1)
    assert str(p.err(*args)).startswith("ERR wrong number of arguments")


def test_lowercase_options(pair8: Pair8) -> None:
    p = pair8
    two_groups(p)
    p("xdelex", "s", "acked", "ids", "2", "5-0", "6-0")
    p("xackdel", "s", "g", "delref", "ids", "1", "2-0")
    same_state(p)
    assert not isinstance(p("XLEN", "s"), ReplyError)
