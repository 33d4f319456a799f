"""XADD IDMP / IDMPAUTO and XCFGSET against redis-server 8.6: repeats, IDMPAUTO's derived
iid, the size limit, XCFGSET's clearing rule, what trims, XDEL, RENAME and DEL leave, and
every error text in its order. XINFO STREAM (and FULL) is compared with the IDMP fields.

IDMP takes only ``*`` IDs, which come from the clock; so each stream starts with an entry
far in the future (``FUTURE``), after which both servers give ``*`` the same IDs (the last
ID plus one), and no iid expires while a test runs (its entry is never old)."""

from __future__ import annotations

import random

import pytest

from tests.differential.redis8 import Pair8

FUTURE = "9999999999999-0"


def same(p: Pair8, key: str = "s") -> None:
    p.many([("XRANGE", key, "-", "+"), ("XINFO", "STREAM", key), ("XINFO", "STREAM", key, "FULL")])


def start(p: Pair8, key: str = "s") -> None:
    p("XADD", key, FUTURE, "f", "v")


def test_repeats_answer_the_first_id(pair8: Pair8) -> None:
    p = pair8
    start(p)
    p.run(
        ("XADD", "s", "IDMP", "p", "i1", "*", "f", "1"),
        ("XADD", "s", "IDMP", "p", "i1", "*", "f", "2"),
        ("XADD", "s", "IDMP", "q", "i1", "*", "f", "1"),
        ("XADD", "s", "idmp", "p", "i2", "MAXLEN", "1", "*", "f", "1"),
        ("XADD", "s", "MAXLEN", "0", "IDMP", "p", "i2", "*", "f", "1"),  # no trim
        ("XADD", "s", "NOMKSTREAM", "IDMP", "p", "i1", "*", "f", "1"),
    )
    same(p)


def test_idmpauto_iid_follows_the_pairs(pair8: Pair8) -> None:
    p = pair8
    start(p)
    for fields in (
        ("a", "1", "b", "2"),
        ("b", "2", "a", "1"),
        ("ab", "1"),
        ("a", "b1"),
        ("x", "1", "x", "1"),
        ("y", "2", "y", "2"),
        ("a", "1"),
        ("a", "1", "a", "1", "a", "1"),
        ("c", "3", "b", "2", "a", "1"),
        ("a", "1", "c", "3", "b", "2"),
        ("1", "a"),
        ("a1", ""),
        ("", "a1"),
    ):
        p("XADD", "s", "IDMPAUTO", "p", "*", *fields)
    p("XADD", "s", "IDMPAUTO", "q", "*", "a", "1", "b", "2")
    same(p)


def test_maxsize_evicts_and_xcfgset_clears_on_change(pair8: Pair8) -> None:
    p = pair8
    start(p)
    p("XCFGSET", "s", "IDMP-MAXSIZE", "2", "IDMP-DURATION", "300")
    for iid in ("i1", "i2", "i3"):
        p("XADD", "s", "IDMP", "p", iid, "*", "f", "v")
    p.run(
        ("XADD", "s", "IDMP", "q", "i1", "*", "f", "v"),
        ("XADD", "s", "IDMP", "p", "i1", "*", "f", "v"),
        ("XADD", "s", "IDMP", "p", "i3", "*", "f", "v"),
    )
    same(p)
    p("XCFGSET", "s", "IDMP-MAXSIZE", "2")  # unchanged: keeps the iids
    same(p)
    p("XCFGSET", "s", "IDMP-DURATION", "300", "IDMP-MAXSIZE", "3")  # changed: forgets them
    same(p)
    p("XADD", "s", "IDMP", "p", "i3", "*", "f", "v")
    same(p)


def test_what_trims_deletes_and_renames_leave(pair8: Pair8) -> None:
    p = pair8
    start(p)
    p("XADD", "s", "IDMP", "p", "i", "*", "f", "v")
    p("XDEL", "s", "9999999999999-1")
    p("XADD", "s", "IDMP", "p", "i", "*", "f", "v")
    p("XTRIM", "s", "MAXLEN", "0")
    p("XADD", "s", "IDMP", "p", "i", "*", "f", "v")
    same(p)
    p("RENAME", "s", "t")
    p("XADD", "t", "IDMP", "p", "i", "*", "f", "v")
    same(p, "t")
    p("DEL", "t")
    start(p, "t")
    same(p, "t")  # a new stream: no IDMP fields on xstreams, so they are not compared


@pytest.mark.parametrize(
    "argv",
    [
        ("XADD", "s", "IDMP", "p", "i1", "1-1", "f", "v"),
        ("XADD", "s", "IDMP", "p", "i1", "1-*", "f", "v"),
        ("XADD", "s", "IDMPAUTO", "p", "0-0", "f", "v"),
        ("XADD", "s", "IDMP", "p", "", "*", "f", "v"),
        ("XADD", "s", "IDMP", "", "i", "*", "f", "v"),
        ("XADD", "s", "IDMPAUTO", "", "*", "f", "v"),
        ("XADD", "s", "IDMP", "p", "i", "*", "f"),
        ("XADD", "s", "IDMP", "p", "i", "*"),
        ("XADD", "s", "IDMP", "p"),
        ("XADD", "s", "NOMKSTREAM", "IDMP", "p"),
        ("XADD", "s", "IDMP", "p", "*", "f", "v"),
        ("XADD", "s", "IDMP", "p", "i1", "IDMP", "p", "i2", "*", "f", "v"),
        ("XADD", "s", "IDMPAUTO", "p", "IDMP", "p", "i2", "*", "f", "v"),
        ("XADD", "s", "IDMP", "p", "", "IDMP", "p", "i", "*", "f", "v"),
        ("XADD", "s", "IDMP", "p", "i", "IDMP", "p", "", "*", "f", "v"),
        ("XADD", "s", "LIMIT", "5", "IDMP", "p", "i", "1-1", "f", "v"),
        ("XADD", "s", "IDMP", "p", "i", "MAXLEN", "1", "MINID", "1", "*", "f", "v"),
        ("XADD", "s", "MAXLEN", "~", "x", "IDMP", "p", "", "*", "f", "v"),
        ("XCFGSET", "s"),
        ("XCFGSET", "s", "foo"),
        ("XCFGSET", "s", "IDMP-DURATION"),
        ("XCFGSET", "s", "IDMP-DURATION", "0"),
        ("XCFGSET", "s", "IDMP-DURATION", "86401"),
        ("XCFGSET", "s", "IDMP-DURATION", "-1"),
        ("XCFGSET", "s", "IDMP-DURATION", "x"),
        ("XCFGSET", "s", "IDMP-DURATION", "99999999999999999999"),
        ("XCFGSET", "s", "IDMP-MAXSIZE", "0"),
        ("XCFGSET", "s", "IDMP-MAXSIZE", "10001"),
        ("XCFGSET", "s", "IDMP-MAXSIZE", "2", "IDMP-MAXSIZE", "3"),
        ("XCFGSET", "s", "idmp-duration", "5", "IDMP-DURATION", "6"),
        ("XCFGSET", "s", "IDMP-MAXSIZE", "5", "IDMP-DURATION", "0"),
        ("XCFGSET", "s", "IDMP-MAXSIZE", "0", "IDMP-DURATION", "0"),
        ("XCFGSET", "s", "IDMP-DURATION", "5", "foo"),
        ("XCFGSET", "nokey", "IDMP-DURATION", "0"),
        ("XCFGSET", "nokey"),
        ("XCFGSET",),
        ("XIDMPRECORD", "s", "p", "i"),
        ("XIDMPRECORD", "s", "p", "i", FUTURE, "extra"),
        ("XIDMPRECORD", "nokey", "", "", "bad"),
        ("XIDMPRECORD", "nokey", "", "i", FUTURE),
        ("XIDMPRECORD", "nokey", "p", "", FUTURE),
        ("XIDMPRECORD", "nokey", "p", "i", FUTURE),
        ("XIDMPRECORD", "s", "", "i", "bad"),
        ("XIDMPRECORD", "s", "p", "", "9-9"),
        ("XIDMPRECORD", "s", "p", "i", "9-9"),
        ("XIDMPRECORD", "s", "p", "i", "0-0"),
        ("XIDMPRECORD", "s", "p", "i", "-"),
        ("XIDMPRECORD", "s", "p", "i", "+"),
        ("XIDMPRECORD", "s", "p", "i", "*"),
        ("XIDMPRECORD", "s", "p", "i", "9999999999999-*"),
        ("XIDMPRECORD", "s", "p", "i", "9999999999999"),
        ("XIDMPRECORD", "s", "p", "i", "9999999999999-1"),
        ("XIDMPRECORD", "s", "p", "i", FUTURE),
    ],
    ids=lambda a: " ".join(a)[:60],
)
def test_errors(pair8: Pair8, argv: tuple[str, ...]) -> None:
    p = pair8
    start(p)
    p(*argv)
    same(p)


def test_xcfgset_limits_are_accepted(pair8: Pair8) -> None:
    p = pair8
    start(p)
    p.run(
        ("XCFGSET", "s", "IDMP-DURATION", "86400", "IDMP-MAXSIZE", "10000"),
        ("XCFGSET", "s", "IDMP-DURATION", "1"),
        ("XCFGSET", "s", "IDMP-MAXSIZE", "1"),
    )
    same(p)


@pytest.mark.parametrize("seed", range(6))
def test_random_idmp_sequences(pair8: Pair8, seed: int) -> None:
    """Random IDMP / IDMPAUTO appends, XCFGSET, trims and deletes, every reply compared."""
    rnd = random.Random(seed)
    p = pair8
    start(p)
    for _ in range(60):
        producer = rnd.choice("pqr")
        choice = rnd.random()
        if choice < 0.45:
            p("XADD", "s", "IDMP", producer, str(rnd.randint(0, 8)), "*", "f", "v")
        elif choice < 0.7:
            pairs = [x for _ in range(rnd.randint(1, 2)) for x in rnd.choice(["a1", "b2", "c3"])]
            trim = ["MAXLEN", str(rnd.randint(0, 5))] if rnd.random() < 0.3 else []
            p("XADD", "s", "IDMPAUTO", producer, *trim, "*", *pairs)
        elif choice < 0.8:
            p("XCFGSET", "s", "IDMP-MAXSIZE", str(rnd.randint(1, 4)))
        elif choice < 0.9:
            p("XTRIM", "s", "MAXLEN", str(rnd.randint(0, 4)))
        else:
            p("XADD", "s", "*", "plain", "entry")
    same(p)


def test_xidmprecord_pairs_answer_later_appends(pair8: Pair8) -> None:
    """XIDMPRECORD (8.6.2): a recorded pair answers its entry's ID to XADD IDMP; recording it
    again is OK, for another entry refused; eviction past IDMP-MAXSIZE, the counters, and
    what XDEL and XCFGSET leave, as 8.6 answers."""
    p = pair8
    start(p)
    p("XADD", "s", "9999999999999-1", "f", "v")
    p("XADD", "s", "9999999999999-2", "f", "v")
    same(p)  # no IDMP state yet on either side's comparison
    p.run(
        ("XIDMPRECORD", "s", "p", "i", "9999999999999-1"),
        ("XIDMPRECORD", "s", "p", "i", "9999999999999-1"),
        ("XIDMPRECORD", "s", "p", "i", "9999999999999-2"),
        ("XIDMPRECORD", "s", "p", "i2", "9999999999999-1"),
        ("XIDMPRECORD", "s", "q", "i", "9999999999999-2"),
        ("XIDMPRECORD", "s", "q", "\x00\xff", FUTURE),
    )
    same(p)
    p.run(
        ("XADD", "s", "IDMP", "p", "i", "*", "f", "w"),
        ("XADD", "s", "IDMP", "q", "i", "*", "f", "w"),
        ("XADD", "s", "IDMP", "q", "i3", "*", "f", "w"),
        ("XDEL", "s", "9999999999999-1"),
        ("XIDMPRECORD", "s", "p", "i", "9999999999999-1"),
        ("XADD", "s", "IDMP", "p", "i2", "*", "f", "w"),
        ("XCFGSET", "s", "IDMP-MAXSIZE", "2"),
        ("XIDMPRECORD", "s", "p", "a", "9999999999999-2"),
        ("XIDMPRECORD", "s", "p", "b", "9999999999999-2"),
        ("XIDMPRECORD", "s", "p", "c", "9999999999999-2"),
        ("XADD", "s", "IDMP", "p", "a", "*", "f", "w"),
        ("XADD", "s", "IDMP", "p", "c", "*", "f", "w"),
    )
    same(p)


def glob_config(p: Pair8) -> None:
    """CONFIG GET of a glob, as pairs: Redis lists them in its hash table's order, which
    changes from one server process to the next."""
    expected, actual = p.both("CONFIG", "GET", "stream-*")
    assert dict(zip(actual[::2], actual[1::2], strict=True)) == dict(
        zip(expected[::2], expected[1::2], strict=True)
    )
    assert len(actual) == len(expected)


def test_config_stream_idmp_defaults(pair8: Pair8) -> None:
    """CONFIG GET / SET stream-idmp-duration and stream-idmp-maxsize (8.6): Redis's words for
    refused values, and a stream that gets IDMP state afterwards starts with the values."""
    p = pair8
    try:
        p.run(
            ("CONFIG", "GET", "stream-idmp-duration"),
            ("CONFIG", "GET", "STREAM-IDMP-MAXSIZE"),
            ("CONFIG", "SET", "stream-idmp-duration", "0"),
            ("CONFIG", "SET", "stream-idmp-duration", "86401"),
            ("CONFIG", "SET", "stream-idmp-duration", "-1"),
            ("CONFIG", "SET", "stream-idmp-duration", "abc"),
            ("CONFIG", "SET", "stream-idmp-duration", "05"),
            ("CONFIG", "SET", "stream-idmp-maxsize", "0"),
            ("CONFIG", "SET", "stream-idmp-maxsize", "10001"),
            ("CONFIG", "SET", "stream-idmp-maxsize", "1kb"),
            ("CONFIG", "SET", "stream-idmp-maxsize", "5", "stream-idmp-duration", "0"),
            ("CONFIG", "GET", "stream-idmp-duration"),
            ("CONFIG", "SET", "stream-idmp-duration", "86400", "stream-idmp-maxsize", "10000"),
        )
        glob_config(p)
        p("CONFIG", "SET", "stream-idmp-duration", "50", "stream-idmp-maxsize", "3")
        glob_config(p)
        for key in ("s", "t"):
            start(p, key)
        p("XADD", "s", "IDMP", "p", "i", "*", "f", "v")
        p("XCFGSET", "t", "IDMP-DURATION", "20")
        for iid in ("a", "b", "c", "d"):
            p("XADD", "s", "IDMP", "p", iid, "*", "f", "v")
        p("XADD", "s", "IDMP", "p", "a", "*", "f", "v")  # evicted past 3: a new entry
        same(p, "s")
        same(p, "t")
    finally:
        p("CONFIG", "SET", "stream-idmp-duration", "100", "stream-idmp-maxsize", "100")
