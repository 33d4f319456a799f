"""XREADGROUP ... CLAIM min-idle-time against redis-server 8.6: which pending entries a read
claims and in what order, COUNT over claimed and new entries, NOACK, pending entries whose
stream entry is gone, several streams, history reads (which ignore CLAIM), the errors, and a
blocked read served when an entry turns idle. Idle times are masked (``redis8``); delivery
counts, owners and order are compared, and after each read XPENDING and XINFO too.

Deliveries that must be told apart by age are spaced by ``GAP`` seconds, so both servers see
the same order of delivery times whatever the few milliseconds between their two copies of a
command.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.differential.redis8 import Pair8

GAP = 0.03

# ``precreated``: a read that serves nothing creates its consumer on redis-server 7.2 and
# later, not on 7.0, whose XREADGROUP xstreams keeps (CLAIM or not). Tests whose reads may
# serve nothing create their consumers first.


def same_state(p: Pair8, keys: tuple[str, ...] = ("s",)) -> None:
    reads: list[tuple[str, ...]] = []
    for key in keys:
        reads += [
            ("XRANGE", key, "-", "+"),
            ("XPENDING", key, "g", "-", "+", "100"),
            ("XPENDING", key, "g"),
            ("XINFO", "STREAM", key, "FULL"),
            ("XINFO", "CONSUMERS", key, "g"),
        ]
    p.many(reads)


def staggered(p: Pair8, key: str = "s", n: int = 6) -> None:
    """Entries 1..n+2 with group g; alice is given 1-2 first, then 3, then 4-5, then 6 ...
    (each delivery GAP later), so the pending entries have distinct ages; n+1.. stay new."""
    p.fill(key, n + 2)
    p("XGROUP", "CREATE", key, "g", "0")
    for count in (2, 1, 2, 1)[: max(1, n // 2)]:
        p("XREADGROUP", "GROUP", "g", "alice", "COUNT", str(count), "STREAMS", key, ">")
        time.sleep(GAP)  # time is the subject: distinct delivery ages for CLAIM's order


def test_claims_oldest_first_then_new(pair8: Pair8) -> None:
    p = pair8
    staggered(p)
    reply = p("XREADGROUP", "GROUP", "g", "bob", "CLAIM", "0", "COUNT", "3", "STREAMS", "s", ">")
    assert [e[0] for e in reply[0][1]] == ["1-0", "2-0", "3-0"]
    same_state(p)
    time.sleep(GAP)  # time is the subject: 1-3's claim is younger than 4-5's delivery
    # 4-5 (alice's oldest), then 1-2-3 claimed a moment ago, then the new ones.
    reply = p("XREADGROUP", "GROUP", "g", "carol", "CLAIM", "0", "STREAMS", "s", ">")
    assert [e[0] for e in reply[0][1]] == ["4-0", "5-0", "1-0", "2-0", "3-0", "6-0", "7-0", "8-0"]
    same_state(p)


@pytest.mark.parametrize("count", ["1", "2", "5", "6", "7", "100", "0"])
def test_count_covers_claimed_and_new(pair8: Pair8, count: str) -> None:
    p = pair8
    staggered(p)
    p("XREADGROUP", "GROUP", "g", "bob", "CLAIM", "0", "COUNT", count, "STREAMS", "s", ">")
    same_state(p)


def test_min_idle_time_threshold(pair8: Pair8) -> None:
    """Only entries idle at least min-idle-time are claimed; the others stay with alice."""
    p = pair8
    p.fill("s", 4)
    p("XGROUP", "CREATE", "s", "g", "0")
    p("XGROUP", "CREATECONSUMER", "s", "g", "bob")  # (see ``precreated``)
    p("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
    time.sleep(0.4)  # time is the subject: 1-2 idle past the 200 ms min-idle, 3 not
    p("XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">")
    reply = p("XREADGROUP", "GROUP", "g", "bob", "CLAIM", "200", "COUNT", "2", "STREAMS", "s", ">")
    assert [e[0] for e in reply[0][1]] == ["1-0", "2-0"]
    same_state(p)
    # Nothing idle enough and nothing new: nil; then only the new entry.
    p("XREADGROUP", "GROUP", "g", "bob", "CLAIM", "200", "COUNT", "2", "STREAMS", "s", ">")
    p("XREADGROUP", "GROUP", "g", "bob", "CLAIM", "200", "STREAMS", "s", ">")
    p("XREADGROUP", "GROUP", "g", "bob", "CLAIM", "200", "STREAMS", "s", ">")
    same_state(p)


def test_noack_applies_to_new_entries_only(pair8: Pair8) -> None:
    p = pair8
    staggered(p)
    p("XREADGROUP", "GROUP", "g", "bob", "NOACK", "CLAIM", "0", "STREAMS", "s", ">")
    same_state(p)
    p("XADD", "s", "20-0", "f", "v")
    p("XREADGROUP", "GROUP", "g", "carol", "CLAIM", "0", "COUNT", "2", "NOACK", "STREAMS", "s", ">")
    same_state(p)


def test_deleted_pending_entries_are_skipped(pair8: Pair8) -> None:
    """A pending entry gone from the stream is passed over, stays pending with its owner
    and count; COUNT counts only what is returned."""
    p = pair8
    staggered(p)
    p("XDEL", "s", "1-0", "3-0")
    p("XDELEX", "s", "KEEPREF", "IDS", "1", "5-0")
    p("XREADGROUP", "GROUP", "g", "bob", "CLAIM", "0", "COUNT", "2", "STREAMS", "s", ">")
    same_state(p)
    p("XREADGROUP", "GROUP", "g", "bob", "CLAIM", "0", "STREAMS", "s", ">")
    same_state(p)
    # History reads show the gone ones as nil entries, and ignore CLAIM.
    p("XREADGROUP", "GROUP", "g", "alice", "CLAIM", "0", "STREAMS", "s", "0")
    p("XREADGROUP", "GROUP", "g", "bob", "CLAIM", "0", "STREAMS", "s", "0-0")
    same_state(p)


def test_several_streams(pair8: Pair8) -> None:
    """COUNT applies per stream; each stream claims from its own group PEL."""
    p = pair8
    staggered(p, "s")
    staggered(p, "t", 2)
    p("XADD", "u", "1-0", "f", "v")
    p("XGROUP", "CREATE", "u", "g", "0")
    p(
        "XREADGROUP",
        "GROUP",
        "g",
        "bob",
        "CLAIM",
        "0",
        "COUNT",
        "3",
        "STREAMS",
        "s",
        "t",
        "u",
        ">",
        ">",
        ">",
    )
    same_state(p, ("s", "t", "u"))
    time.sleep(GAP)  # time is the subject: the claims just made are the youngest
    p("XREADGROUP", "GROUP", "g", "carol", "CLAIM", "0", "STREAMS", "t", "s", ">", ">")
    same_state(p, ("s", "t", "u"))
    # A history read of one stream beside a new read of another: CLAIM only on ``>``.
    p("XREADGROUP", "GROUP", "g", "alice", "CLAIM", "0", "STREAMS", "s", "t", ">", "0")
    same_state(p, ("s", "t", "u"))
    # After a history read, the ``>`` streams are read without CLAIM: nothing is claimed,
    # new entries come in 2 items (redis-server 8.6).
    p("XADD", "s", "30-0", "f", "v")
    p("XREADGROUP", "GROUP", "g", "bob", "CLAIM", "0", "STREAMS", "t", "s", "u", "0", ">", ">")
    same_state(p, ("s", "t", "u"))
    p("XREADGROUP", "GROUP", "g", "bob", "CLAIM", "0", "STREAMS", "u", "t", "s", ">", "0", ">")
    same_state(p, ("s", "t", "u"))


def test_history_reads_ignore_claim(pair8: Pair8) -> None:
    p = pair8
    staggered(p)
    for sid in ("0", "2-0", "9-0"):
        p("XREADGROUP", "GROUP", "g", "alice", "CLAIM", "0", "STREAMS", "s", sid)
        p("XREADGROUP", "GROUP", "g", "bob", "CLAIM", "0", "COUNT", "1", "STREAMS", "s", sid)
        same_state(p)


def test_claim_with_xclaim_state(pair8: Pair8) -> None:
    """Counts and idle times set by XCLAIM (RETRYCOUNT, IDLE, FORCE) carry into CLAIM."""
    p = pair8
    staggered(p)
    p("XCLAIM", "s", "g", "bob", "0", "2-0", "RETRYCOUNT", "7", "IDLE", "100000")
    p("XCLAIM", "s", "g", "bob", "0", "8-0", "FORCE", "RETRYCOUNT", "0")
    reply = p("XREADGROUP", "GROUP", "g", "carol", "CLAIM", "50000", "STREAMS", "s", ">")
    assert [e[0] for e in reply[0][1]] == ["2-0", "6-0", "7-0", "8-0"]
    same_state(p)


CLAIM_ERRORS = [
    ("XREADGROUP", "GROUP", "g", "c", "CLAIM", "-1", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "CLAIM", "x", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "CLAIM", "1.5", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "CLAIM", "9223372036854775808", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "CLAIM", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "CLAIM", "-1", "STREAMS", "s", "0"),
    ("XREADGROUP", "GROUP", "nog", "c", "CLAIM", "0", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "CLAIM", "0", "STREAMS", "missing", ">"),
    ("XREADGROUP", "CLAIM", "0", "STREAMS", "s", ">"),
    ("XREAD", "CLAIM", "0", "STREAMS", "s", "0"),
    ("XREAD", "COUNT", "1", "CLAIM", "-1", "STREAMS", "s", "0"),
    ("XREADGROUP", "GROUP", "g", "c", "CLAIM", "0", "BLOCK", "-1", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "CLAIM", "-5", "COUNT", "x", "STREAMS", "s", ">"),
]


@pytest.mark.parametrize("args", CLAIM_ERRORS, ids=[" ".join(a[1:]) for a in CLAIM_ERRORS])
def test_errors(pair8: Pair8, args: tuple[str, ...]) -> None:
    p = pair8
    staggered(p)
    p.err(*args)
    same_state(p)


def test_accepted_edge_values(pair8: Pair8) -> None:
    p = pair8
    staggered(p)
    for args in (
        ("XREADGROUP", "GROUP", "g", "c", "CLAIM", "9223372036854775807", "STREAMS", "s", ">"),
        (
            "XREADGROUP",
            "GROUP",
            "g",
            "c",
            "CLAIM",
            "5",
            "CLAIM",
            "0",
            "COUNT",
            "1",
            "STREAMS",
            "s",
            ">",
        ),
        ("XREADGROUP", "GROUP", "g", "c", "claim", "0", "COUNT", "-1", "STREAMS", "s", ">"),
    ):
        p(*args)
        same_state(p)


def test_ties_in_the_order_delivery_times_were_given(pair8: Pair8) -> None:
    """Entries of one delivery time (XCLAIM ... TIME) come in the order they were given
    it, not by ID: redis-server 8.6 answers 3-0 1-0 4-0 2-0 below."""
    p = pair8
    p.fill("s", 5)
    p("XGROUP", "CREATE", "s", "g", "0")
    p("XREADGROUP", "GROUP", "g", "alice", "COUNT", "4", "STREAMS", "s", ">")
    p("XCLAIM", "s", "g", "bob", "0", "3-0", "2-0", "1-0", "TIME", "1000", "JUSTID")
    p("XCLAIM", "s", "g", "carol", "0", "4-0", "TIME", "1000", "JUSTID")
    p("XCLAIM", "s", "g", "bob", "0", "2-0", "TIME", "1000", "JUSTID")
    p("XCLAIM", "s", "g", "bob", "0", "2-0", "TIME", "900", "JUSTID")
    p("XCLAIM", "s", "g", "bob", "0", "2-0", "TIME", "1000", "JUSTID")
    reply = p("XREADGROUP", "GROUP", "g", "dave", "CLAIM", "0", "COUNT", "3", "STREAMS", "s", ">")
    assert [e[0] for e in reply[0][1]] == ["3-0", "1-0", "4-0"]
    same_state(p)
    # A read of a consumer's history gives its entries a new delivery time, in ID order.
    p("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "0")
    p("XCLAIM", "s", "g", "erin", "0", "1-0", "2-0", "3-0", "4-0", "TIME", "1000", "JUSTID")
    p("XCLAIM", "s", "g", "erin", "0", "2-0", "TIME", "1000", "JUSTID")
    p("XREADGROUP", "GROUP", "g", "dave", "CLAIM", "0", "STREAMS", "s", ">")
    same_state(p)


def _blocked(send: Any, args: tuple[str, ...], out: dict[str, Any], name: str) -> None:
    start = time.monotonic()
    out[name] = send(*args)
    out[name + "-s"] = time.monotonic() - start


def test_block_served_when_an_entry_turns_idle(pair8: Pair8) -> None:
    """Nothing new and nothing idle enough: a blocked CLAIM read is served, with no write,
    once an entry has been idle min-idle-time."""
    p = pair8
    p.fill("s", 2)
    p("XGROUP", "CREATE", "s", "g", "0")
    p("XGROUP", "CREATECONSUMER", "s", "g", "bob")
    p("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    args = ("XREADGROUP", "GROUP", "g", "bob", "CLAIM", "300", "BLOCK", "5000", "STREAMS", "s", ">")
    out: dict[str, Any] = {}
    threads = [
        threading.Thread(target=_blocked, args=(p.resp, args, out, "redis")),
        threading.Thread(target=_blocked, args=(p.xs, args, out, "xs")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    p.compare(args, out["redis"], out["xs"])
    assert [e[0] for e in out["xs"][0][1]] == ["1-0", "2-0"]
    assert 0.2 < out["xs-s"] < 4, out
    same_state(p)


def test_block_times_out_when_nothing_turns_idle(pair8: Pair8) -> None:
    p = pair8
    p.fill("s", 1)
    p("XGROUP", "CREATE", "s", "g", "0")
    p("XGROUP", "CREATECONSUMER", "s", "g", "bob")  # (see ``precreated``)
    p("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    args = (
        "XREADGROUP",
        "GROUP",
        "g",
        "bob",
        "CLAIM",
        "60000",
        "BLOCK",
        "300",
        "STREAMS",
        "s",
        ">",
    )
    out: dict[str, Any] = {}
    threads = [
        threading.Thread(target=_blocked, args=(p.resp, args, out, "redis")),
        threading.Thread(target=_blocked, args=(p.xs, args, out, "xs")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert out["redis"] is None and out["xs"] is None, out
    same_state(p)
