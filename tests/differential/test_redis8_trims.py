"""XADD and XTRIM trimming under KEEPREF, DELREF and ACKED against redis-server 8.6: MAXLEN
and MINID, exact, ``=`` and ``~``, LIMIT, with nodes of 3 entries so a trim meets several,
on streams whose groups hold entries pending, acknowledged and not yet delivered, and on
streams without groups. After each trim the whole state is compared, the node count
(radix-tree-keys) included: the engine keeps Redis's nodes one for one."""

from __future__ import annotations

import itertools

import pytest

from tests.differential.redis8 import Pair8
from tests.differential.support import NODES_COMPARED

POLICIES = ("KEEPREF", "DELREF", "ACKED")


def same_state(p: Pair8, groups: tuple[str, ...] = ("g", "h")) -> None:
    p.many(
        [
            ("XLEN", "s"),
            ("XRANGE", "s", "-", "+"),
            ("XINFO", "STREAM", "s"),
            ("XINFO", "STREAM", "s", "FULL"),
            *(("XPENDING", "s", g, "-", "+", "100") for g in groups),
            *(("XPENDING", "s", g) for g in groups),
            *(
                ("XREADGROUP", "GROUP", g, c, "STREAMS", "s", "0")
                for g, c in (("g", "alice"), ("h", "bob"))
                if g in groups
            ),
        ]
    )


def build(p: Pair8, n: int = 20, groups: bool = True) -> None:
    """Entries 1..n in nodes of 3; g delivered 1..10 (2, 4, 5 acked, 7 XDEL'd), h 1..3 (all
    acked but 2): pending, acked and undelivered entries spread over the nodes."""
    p.masked = NODES_COMPARED
    p.config(3)
    p.fill("s", n)
    if groups:
        p.run(
            ("XGROUP", "CREATE", "s", "g", "0"),
            ("XGROUP", "CREATE", "s", "h", "0"),
            ("XREADGROUP", "GROUP", "g", "alice", "COUNT", "10", "STREAMS", "s", ">"),
            ("XREADGROUP", "GROUP", "h", "bob", "COUNT", "3", "STREAMS", "s", ">"),
            ("XACK", "s", "g", "2-0", "4-0", "5-0"),
            ("XACK", "s", "h", "1-0", "3-0"),
            ("XDEL", "s", "7-0"),
        )


CLAUSES = [
    (strategy, op, limit)
    for strategy, op, limit in itertools.product(
        ("MAXLEN", "MINID"), ("", "=", "~"), ("", "LIMIT 1", "LIMIT 3", "LIMIT 7", "LIMIT 0")
    )
    if not limit or op == "~"
]


def clause(strategy: str, op: str, limit: str, threshold: str) -> list[str]:
    return [strategy, *([op] if op else []), threshold, *limit.split()]


THRESHOLDS = {"MAXLEN": ("15", "8", "2", "0"), "MINID": ("6-0", "9-0", "13-0", "25-0")}


@pytest.mark.parametrize(("strategy", "op", "limit"), CLAUSES)
@pytest.mark.parametrize("policy", POLICIES)
def test_xtrim(pair8: Pair8, policy: str, strategy: str, op: str, limit: str) -> None:
    p = pair8
    build(p)
    for threshold in THRESHOLDS[strategy]:
        p("XTRIM", "s", *clause(strategy, op, limit, threshold), policy)
        same_state(p)


@pytest.mark.parametrize(("strategy", "op", "limit"), CLAUSES)
@pytest.mark.parametrize("policy", POLICIES)
def test_xadd_trims(pair8: Pair8, policy: str, strategy: str, op: str, limit: str) -> None:
    p = pair8
    build(p)
    for i, threshold in enumerate(THRESHOLDS[strategy]):
        p("XADD", "s", *clause(strategy, op, limit, threshold), policy, f"{30 + i}-0", "f", "v")
        same_state(p)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("op", ["", "~"])
def test_trims_without_groups(pair8: Pair8, policy: str, op: str) -> None:
    p = pair8
    build(p, groups=False)
    for threshold in ("17", "11", "4"):
        p("XTRIM", "s", "MAXLEN", *([op] if op else []), threshold, policy)
        same_state(p, groups=())
    p("XADD", "s", "MINID", *([op] if op else []), "19-0", policy, "40-0", "f", "v")
    same_state(p, groups=())


@pytest.mark.parametrize("policy", POLICIES)
def test_trims_after_groups_read_everything(pair8: Pair8, policy: str) -> None:
    """Every entry delivered to both groups and acked in one: ACKED trims what the other
    acked too, DELREF clears the other's references."""
    p = pair8
    build(p, groups=False)
    p.run(
        ("XGROUP", "CREATE", "s", "g", "0"),
        ("XGROUP", "CREATE", "s", "h", "0"),
        ("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"),
        ("XREADGROUP", "GROUP", "h", "bob", "STREAMS", "s", ">"),
        ("XACK", "s", "g", *(f"{i}-0" for i in range(1, 21))),
        ("XACK", "s", "h", *(f"{i}-0" for i in range(1, 21, 2))),
    )
    p("XTRIM", "s", "MAXLEN", "~", "5", policy)
    same_state(p)
    p("XTRIM", "s", "MINID", "18-0", policy)
    same_state(p)


def test_policy_errors_and_placement(pair8: Pair8) -> None:
    """A policy given twice, with another clause, before the strategy, unknown words."""
    p = pair8
    build(p)
    for args in (
        ("XTRIM", "s", "MAXLEN", "1", "KEEPREF", "ACKED"),
        ("XTRIM", "s", "MAXLEN", "1", "ACKED", "ACKED"),
        ("XTRIM", "s", "MAXLEN", "1", "ACKED", "LIMIT", "10"),
        ("XTRIM", "s", "MAXLEN", "1", "LIMIT", "1", "DELREF"),
        ("XTRIM", "s", "ACKED"),
        ("XTRIM", "s", "MAXLEN", "1", "FOO"),
        ("XTRIM", "s", "ACKED", "MAXLEN", "~", "100"),
        ("XTRIM", "s", "MAXLEN", "~", "100", "LIMIT", "5", "ackEd"),
        ("XTRIM", "missing", "MAXLEN", "1", "DELREF"),
        ("XADD", "s", "MAXLEN", "1", "ACKED", "ACKED", "50-0", "f", "v"),
        ("XADD", "s", "MAXLEN", "1", "FOO", "50-0", "f", "v"),
        ("XADD", "s", "KEEPREF", "50-0", "f", "v"),
        ("XADD", "s", "DELREF", "NOMKSTREAM", "MAXLEN", "~", "100", "51-0", "f", "v"),
        ("XADD", "s", "ACKED", "MINID", "0", "52-0", "f", "v"),
        ("XADD", "nokey", "NOMKSTREAM", "MAXLEN", "0", "DELREF", "1-0", "f", "v"),
        ("XADD", "new", "MAXLEN", "0", "ACKED", "1-0", "f", "v"),
    ):
        p(*args)
        same_state(p)
