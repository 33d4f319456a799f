"""Consecutive XADDs in one pipeline or MULTI, which xstreams runs as one engine call
(``commands.bulk``), against the same commands sent to redis-server: every reply, every error
in the middle of a run, and the stream they leave (entries, counters, node boundaries)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import ReplyError
from tests.differential.exact import ExactPair

MAX = "18446744073709551615"
FUTURE = "99999999999999"  # milliseconds far ahead of any clock

Command = tuple[Any, ...]


def _same_stream(pair: ExactPair, key: str) -> None:
    """The stream itself, and the nodes it is kept in: ``XTRIM MAXLEN ~`` drops whole nodes
    only, so it removes the same number of entries only if the nodes split at the same
    entries."""
    pair("XLEN", key)
    pair("XRANGE", key, "-", "+")
    pair("XINFO", "STREAM", key, "FULL")
    pair("XTRIM", key, "MAXLEN", "~", "1")
    pair("XRANGE", key, "-", "+")


RUNS: dict[str, list[Command]] = {
    # `*` after an ID ahead of the clock continues its sequence, the same on both servers.
    "auto IDs across several nodes": [
        ("XADD", "s", f"{FUTURE}-0", "f", "v"),
        *[("XADD", "s", "*", "f", str(i)) for i in range(300)],  # past one fused run
    ],
    # The common shape (``bulk.auto_run_at``): the same `XADD key *` line over and over.
    "auto IDs whose values close nodes by bytes": [
        ("XADD", "s", f"{FUTURE}-0", "f", "v"),
        *[("XADD", "s", "*", "f", "v" * (30 + i % 30), "g", "w") for i in range(200)],
    ],
    "auto IDs running into the last sequence of a millisecond": [
        ("XADD", "s", f"{FUTURE}-{int(MAX) - 3}", "f", "v"),
        *[("XADD", "s", "*", "f", str(i)) for i in range(6)],
    ],
    "auto IDs with integer-looking, long and non-ASCII values": [
        ("XADD", "s", f"{FUTURE}-0", "n", "v"),
        *[
            ("XADD", "s", "*", "n", str(i * 997), "t", "é" * (i % 3), "l", "x" * 70)
            for i in range(40)
        ],
        *[("XADD", "s", "*", "f", "-5") for _ in range(30)],
    ],
    "explicit IDs, one not greater than the top in the middle": [
        ("XADD", "s", "5-1", "f", "a"),
        ("XADD", "s", "5-2", "f", "b"),
        ("XADD", "s", "5-2", "f", "c"),
        ("XADD", "s", "4-0", "f", "d"),
        ("XADD", "s", "6-0", "f", "e"),
    ],
    "0-0, ms-* and an exhausted sequence": [
        ("XADD", "s", "0-0", "f", "v"),
        ("XADD", "s", "0-*", "f", "v"),
        ("XADD", "s", "0-*", "f", "v"),
        ("XADD", "s", f"7-{MAX}", "f", "v"),
        ("XADD", "s", "7-*", "f", "v"),
        ("XADD", "s", "8-*", "f", "v"),
        ("XADD", "s", f"{FUTURE}-*", "f", "v"),
        ("XADD", "s", "*", "f", "v"),
    ],
    "the last possible ID, then more": [
        ("XADD", "s", "1-1", "f", "v"),
        ("XADD", "s", f"{MAX}-{MAX}", "f", "v"),
        ("XADD", "s", "*", "f", "v"),
        ("XADD", "s", f"{MAX}-*", "f", "v"),
    ],
    "NOMKSTREAM on a missing key, then one that creates it": [
        ("XADD", "s", "NOMKSTREAM", "*", "f", "v"),
        ("XADD", "s", "NOMKSTREAM", "1-1", "f", "v"),
        ("XADD", "s", "2-0", "f", "v"),
        ("XADD", "s", "NOMKSTREAM", "3-0", "f", "v"),
    ],
    "malformed XADDs and a trim clause break the run": [
        ("XADD", "s", "1-0", "f", "v"),
        ("XADD", "s", "2-0", "f"),
        ("XADD", "s", "2-0", "f", "v", "g"),
        ("XADD", "s", "bad-id", "f", "v"),
        ("XADD", "s", "3-0", "f", "v"),
        ("XADD", "s", "MAXLEN", "2", "4-0", "f", "v"),
        ("XADD", "s", "5-0", "f", "v"),
        ("xadd", "s", "6-0", "f", "v"),
        ("XADD", "s", "MAXLEN", "~", "1", "7-0", "f", "v"),
        ("XADD", "s", "8-0", "f", "v"),
    ],
    "other keys and commands in between": [
        ("XADD", "s", "1-0", "f", "v"),
        ("XADD", "t", "1-0", "f", "v"),
        ("XADD", "s", "2-0", "f", "v"),
        ("XLEN", "s"),
        ("XADD", "s", "3-0", "f", "v"),
        ("XADD", "t", "2-0", "g", "w", "h", "x"),
        ("XADD", "t", "3-0", "f", "v"),
        ("XDEL", "t", "2-0"),
        ("XADD", "t", "4-0", "f", "v"),
    ],
    "mixed field names and sizes split nodes as Redis does": [
        ("XADD", "s", f"{i}-0", *(("f", "v" * (i * 37 % 300)) if i % 3 else ("g", "1", "h", "2")))
        for i in range(1, 160)
    ],
}


@pytest.mark.parametrize("commands", list(RUNS.values()), ids=list(RUNS))
def test_a_pipeline_of_xadds_answers_and_stores_as_redis(
    pair: ExactPair, commands: list[Command]
) -> None:
    pair.bulk(commands)
    for key in sorted({str(c[1]) for c in commands if str(c[0]).upper() == "XADD"}):
        if pair("EXISTS", key):
            _same_stream(pair, key)


def test_auto_ids_of_a_pipeline_follow_the_top_even_ahead_of_the_clock(pair: ExactPair) -> None:
    """``*`` after an explicit ID in the future continues its sequence, entry by entry."""
    replies = pair.bulk(
        [("XADD", "s", f"{FUTURE}-5", "f", "v"), *[("XADD", "s", "*", "f", "v")] * 5]
    )
    assert replies[1:] == [f"{FUTURE}-{i}" for i in range(6, 11)]


@pytest.mark.parametrize("commands", list(RUNS.values()), ids=list(RUNS))
def test_a_multi_exec_of_xadds_answers_and_stores_as_redis(
    pair: ExactPair, commands: list[Command]
) -> None:
    """The same runs inside MULTI/EXEC (``/multi-exec``): one reply array, each XADD with its
    own reply or error, as EXEC gives them."""
    transaction = [c for c in commands if not _fails_to_queue(c)]
    expected = pair.resp.pipeline([("MULTI",), *transaction, ("EXEC",)])[-1]
    body = [[str(a) for a in c] for c in transaction]
    r = pair.xs.client.post("/multi-exec", json=body)
    assert r.status_code == 200, r.text
    actual = [ReplyError(i["error"]) if "error" in i else i["result"] for i in r.json()]
    assert len(actual) == len(expected)
    for args, exp, act in zip(transaction, expected, actual, strict=True):
        assert isinstance(act, ReplyError) == isinstance(exp, ReplyError), (args, exp, act)
        assert act == exp, (args, exp, act)
    for key in sorted({str(c[1]) for c in transaction}):
        if pair("EXISTS", key):
            _same_stream(pair, key)


def _fails_to_queue(command: Command) -> bool:
    """An arity error aborts a whole MULTI (EXECABORT): such commands are left out here."""
    return str(command[0]).upper() == "XADD" and len(command) < 5
