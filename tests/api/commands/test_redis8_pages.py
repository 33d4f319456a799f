"""Every example, and each rule stated, on the command pages of XACKDEL, XDELEX, XNACK, the
CLAIM section of XREADGROUP and the KEEPREF / DELREF / ACKED parts of XADD and XTRIM, run on
the engine and its command endpoint's reply shaping (no server). The pages' IDs are given
explicitly, so their replies are asserted as printed. XNACK is Redis 8.8, which no server
here runs: these tests are its reference; the others are also held to redis-server 8.6 by
tests/differential/test_redis8_*.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.api.commands.resp import Shaper
from app.engine.blocking import Block
from app.engine.clock import ManualClock
from app.engine.errors import CommandError
from app.engine.json_codec import decode_json, encode_json
from app.engine.store import Store

LLONG_MAX = 9223372036854775807
T0 = 1_700_000_000_000


class Cli:
    """redis-cli on a Store with a manual clock: replies as the command endpoint shapes them."""

    def __init__(self) -> None:
        self.clock = ManualClock(T0)
        self.store = Store(clock=self.clock)
        self.shaper = Shaper(False)

    def __call__(self, *argv: str | int) -> Any:
        reply = self.store.execute([str(a) for a in argv])
        assert not isinstance(reply, Block), argv
        return decode_json(encode_json({"result": self.shaper(reply)}))["result"]

    def err(self, *argv: str | int) -> str:
        with pytest.raises(CommandError) as info:
            self.store.execute([str(a) for a in argv])
        return info.value.text


@pytest.fixture
def cli() -> Cli:
    return Cli()


def info_full(cli: Cli, key: str) -> dict[str, Any]:
    reply = cli("XINFO", "STREAM", key, "FULL")
    return dict(zip(reply[::2], reply[1::2], strict=True))


def group_full(cli: Cli, key: str, group: str) -> dict[str, Any]:
    for g in info_full(cli, key)["groups"]:
        d = dict(zip(g[::2], g[1::2], strict=True))
        if d["name"] == group:
            return d
    raise AssertionError(group)


# ----------------------------------------------------------------------------- XACKDEL


def test_xackdel_page_example(cli: Cli) -> None:
    a, b = "1755870377536-0", "1755870387045-0"
    assert cli("XADD", "mystream", a, "field1", "value1") == a
    assert cli("XADD", "mystream", b, "field2", "value2") == b
    assert cli("XGROUP", "CREATE", "mystream", "mygroup", "0") == "OK"
    assert cli("XREADGROUP", "GROUP", "mygroup", "consumer1", "COUNT", "2", "STREAMS",
               "mystream", ">") == [
        ["mystream", [[a, ["field1", "value1"]], [b, ["field2", "value2"]]]]
    ]  # fmt: skip
    assert cli("XPENDING", "mystream", "mygroup") == [2, a, b, [["consumer1", "2"]]]
    assert cli("XACKDEL", "mystream", "mygroup", "KEEPREF", "IDS", "2", a, b) == [1, 1]
    assert cli("XPENDING", "mystream", "mygroup") == [0, None, None, None]
    assert cli("XRANGE", "mystream", "-", "+") == []


def test_xackdel_page_rules(cli: Cli) -> None:
    """-1 for each ID on a missing key; KEEPREF keeps other groups' references, DELREF
    drops them, ACKED deletes only what every group has read and acknowledged (2 else)."""
    assert cli("XACKDEL", "nokey", "g", "IDS", "2", "1-0", "2-0") == [-1, -1]
    for i in range(1, 7):
        cli("XADD", "s", f"{i}-0", "f", "v")
    cli("XGROUP", "CREATE", "s", "g", "0")
    cli("XGROUP", "CREATE", "s", "h", "0")
    cli("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    cli("XREADGROUP", "GROUP", "h", "d", "COUNT", "4", "STREAMS", "s", ">")
    assert cli("XACKDEL", "s", "g", "KEEPREF", "IDS", "1", "1-0") == [1]
    assert cli("XPENDING", "s", "h", "-", "+", "10")[0][0] == "1-0"
    assert cli("XACKDEL", "s", "g", "DELREF", "IDS", "1", "2-0") == [1]
    assert "2-0" not in [row[0] for row in cli("XPENDING", "s", "h", "-", "+", "10")]
    # 3-0 pending in h, 5-0 not delivered to h: kept; after h acks 3-0, deleted.
    assert cli("XACKDEL", "s", "g", "ACKED", "IDS", "2", "3-0", "5-0") == [2, 2]
    assert cli("XACKDEL", "s", "h", "ACKED", "IDS", "1", "3-0") == [1]
    assert cli("XACKDEL", "s", "g", "IDS", "1", "9-0") == [-1]  # not pending in g
    assert [e[0] for e in cli("XRANGE", "s", "-", "+")] == ["4-0", "5-0", "6-0"]


# ------------------------------------------------------------------------------ XDELEX


def test_xdelex_page_example(cli: Cli) -> None:
    ids = ["1784722083515-0", "1784722083516-0", "1784722083517-0"]
    for i, sid in enumerate(ids, 1):
        assert cli("XADD", "mystream", sid, f"field{i}", f"value{i}") == sid
    everything = [[sid, [f"field{i}", f"value{i}"]] for i, sid in enumerate(ids, 1)]
    assert cli("XRANGE", "mystream", "-", "+") == everything
    assert cli("XDELEX", "mystream", "KEEPREF", "IDS", "2", "1526919030474-55",
               "1526919030474-56") == [-1, -1]  # fmt: skip
    assert cli("XRANGE", "mystream", "-", "+") == everything


def test_xdelex_page_rules(cli: Cli) -> None:
    """The IDS block anywhere; -1 per ID on a missing key; KEEPREF is XDEL; DELREF removes
    references even of an entry no longer in the stream; ACKED deletes only what every
    group read and acknowledged. (The page adds that ACKED answers 2 "if there are no
    consumer groups": redis-server 8.6 deletes there (1), and so does xstreams.)"""
    assert cli("XDELEX", "nokey", "IDS", "1", "1-0") == [-1]
    for i in range(1, 6):
        cli("XADD", "s", f"{i}-0", "f", "v")
    assert cli("XDELEX", "s", "IDS", "1", "1-0", "KEEPREF") == [1]
    assert cli("XDELEX", "s", "ACKED", "IDS", "1", "2-0") == [1]  # no groups
    cli("XGROUP", "CREATE", "s", "g", "0")
    cli("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">")
    assert cli("XDEL", "s", "3-0") == 1
    assert cli("XPENDING", "s", "g")[0] == 2  # 3-0 dangling, 4-0 pending
    assert cli("XDELEX", "s", "DELREF", "IDS", "1", "3-0") == [-1]
    assert cli("XPENDING", "s", "g")[0] == 1
    assert cli("XDELEX", "s", "ACKED", "IDS", "2", "4-0", "5-0") == [2, 2]
    cli("XACK", "s", "g", "4-0")
    assert cli("XDELEX", "s", "ACKED", "IDS", "2", "4-0", "5-0") == [1, 2]


# ------------------------------------------------------------------------------- XNACK

A, B = "1526569498055-0", "1526569498056-0"


def nack_setup(cli: Cli) -> None:
    assert cli("XADD", "mystream", A, "field", "value1") == A
    assert cli("XADD", "mystream", B, "field", "value2") == B
    assert cli("XGROUP", "CREATE", "mystream", "mygroup", "0") == "OK"
    assert cli("XREADGROUP", "GROUP", "mygroup", "consumer1", "STREAMS", "mystream", ">") == [
        ["mystream", [[A, ["field", "value1"]], [B, ["field", "value2"]]]]
    ]


def test_xnack_page_fail_example(cli: Cli) -> None:
    nack_setup(cli)
    assert cli("XNACK", "mystream", "mygroup", "FAIL", "IDS", "2", A, B) == 2
    assert cli("XPENDING", "mystream", "mygroup", "-", "+", "10") == [
        [A, "", -1, 1],
        [B, "", -1, 1],
    ]


def test_xnack_page_silent_example(cli: Cli) -> None:
    nack_setup(cli)
    assert cli("XNACK", "mystream", "mygroup", "SILENT", "IDS", "1", A) == 1
    # The delivery is undone: 1 - 1.
    assert cli("XPENDING", "mystream", "mygroup", "-", "+", "10")[0] == [A, "", -1, 0]


def test_xnack_page_fatal_example(cli: Cli) -> None:
    nack_setup(cli)
    assert cli("XNACK", "mystream", "mygroup", "FATAL", "IDS", "1", A) == 1
    assert cli("XPENDING", "mystream", "mygroup", "-", "+", "10")[0] == [A, "", -1, LLONG_MAX]


def test_xnack_page_examples_in_sequence(cli: Cli) -> None:
    """The page's three examples one after the other on the same stream."""
    nack_setup(cli)
    assert cli("XNACK", "mystream", "mygroup", "FAIL", "IDS", "2", A, B) == 2
    assert cli("XNACK", "mystream", "mygroup", "SILENT", "IDS", "1", A) == 1
    assert cli("XNACK", "mystream", "mygroup", "FATAL", "IDS", "1", A) == 1
    assert cli("XPENDING", "mystream", "mygroup", "-", "+", "10") == [
        [A, "", -1, LLONG_MAX],
        [B, "", -1, 1],
    ]


def test_xnack_details(cli: Cli) -> None:
    """Unowned, delivery time 0 (XINFO STREAM FULL), the end of the NACKed FIFO, still in
    the PEL; only pending IDs count; XPENDING's summary counts them under no consumer."""
    nack_setup(cli)
    cli("XADD", "mystream", "1526569498057-0", "field", "value3")
    assert cli("XNACK", "mystream", "mygroup", "FAIL", "IDS", "3", B, "1526569498057-0", "9-9") == 1
    assert cli("XNACK", "mystream", "mygroup", "FAIL", "IDS", "1", A) == 1
    g = group_full(cli, "mystream", "mygroup")
    assert g["pel-count"] == 2 and g["nacked-count"] == 2
    assert g["pending"] == [[A, "", 0, 1], [B, "", 0, 1]]
    consumer = dict(zip(g["consumers"][0][::2], g["consumers"][0][1::2], strict=True))
    assert consumer["pel-count"] == 0 and consumer["pending"] == []
    assert cli("XPENDING", "mystream", "mygroup") == [2, A, B, []]
    assert cli("XINFO", "CONSUMERS", "mystream", "mygroup")[0][3] == 0
    # FIFO: B was released first, so a claim serves B, then A.
    reply = cli("XREADGROUP", "GROUP", "mygroup", "c2", "CLAIM", "1000000", "COUNT", "1",
                "STREAMS", "mystream", ">")  # fmt: skip
    assert [e[0] for e in reply[0][1]] == [B]
    # Re-releasing moves to the end of the FIFO.
    cli("XNACK", "mystream", "mygroup", "FAIL", "IDS", "1", B)
    reply = cli("XREADGROUP", "GROUP", "mygroup", "c2", "CLAIM", "1000000", "COUNT", "2",
                "STREAMS", "mystream", ">")  # fmt: skip
    assert [e[0] for e in reply[0][1]] == [A, B]


def test_xnack_retrycount_and_force(cli: Cli) -> None:
    """RETRYCOUNT overrides the mode; FORCE creates unowned entries for IDs in the stream
    (count 0, RETRYCOUNT, or LLONG_MAX under FATAL), not for IDs the stream lacks."""
    nack_setup(cli)
    c, d, e = "1526569498057-0", "1526569498058-0", "1526569498059-0"
    for sid in (c, d, e):
        cli("XADD", "mystream", sid, "field", "v")
    assert cli("XNACK", "mystream", "mygroup", "FATAL", "IDS", "1", A, "RETRYCOUNT", "5") == 1
    assert cli("XNACK", "mystream", "mygroup", "FAIL", "IDS", "2", c, "9-0", "FORCE") == 1
    assert cli("XNACK", "mystream", "mygroup", "SILENT", "FORCE", "RETRYCOUNT", "3",
               "IDS", "1", d) == 1  # fmt: skip
    assert cli("XNACK", "mystream", "mygroup", "FATAL", "IDS", "1", e, "FORCE") == 1
    assert cli("XNACK", "mystream", "mygroup", "FAIL", "IDS", "1", "1-0", "FORCE") == 0
    assert cli("XPENDING", "mystream", "mygroup", "-", "+", "10") == [
        [A, "", -1, 5],
        [B, "consumer1", 0, 1],
        [c, "", -1, 0],
        [d, "", -1, 3],
        [e, "", -1, LLONG_MAX],
    ]
    # FORCE does not move the group's last-delivered ID.
    assert group_full(cli, "mystream", "mygroup")["last-delivered-id"] == B


def test_xnack_released_entries_claimable_whatever_min_idle(cli: Cli) -> None:
    """Immediately claimable by XCLAIM, XAUTOCLAIM and CLAIM at any min-idle-time, NACKed
    ones ahead of other idle pending entries."""
    nack_setup(cli)
    cli("XADD", "mystream", "1526569498057-0", "field", "value3")
    cli("XREADGROUP", "GROUP", "mygroup", "consumer1", "STREAMS", "mystream", ">")
    cli.clock.advance(10_000)
    cli("XNACK", "mystream", "mygroup", "FAIL", "IDS", "1", B)
    assert cli("XCLAIM", "mystream", "mygroup", "c2", "3600000", B, "JUSTID") == [B]
    cli("XNACK", "mystream", "mygroup", "FAIL", "IDS", "1", "1526569498057-0")
    reply = cli("XAUTOCLAIM", "mystream", "mygroup", "c3", "5000", "0", "COUNT", "1", "JUSTID")
    assert reply[1] == ["1526569498057-0"]
    cli("XNACK", "mystream", "mygroup", "FAIL", "IDS", "1", B)
    reply = cli("XREADGROUP", "GROUP", "mygroup", "c4", "CLAIM", "5000", "STREAMS", "mystream", ">")
    # B (released) first, then A (idle 10 s); 057 was claimed by c3 just now. B's count is
    # 1: XCLAIM ... JUSTID does not count a delivery, and FAIL keeps the count.
    assert [(e[0], e[2], e[3]) for e in reply[0][1]] == [(B, -1, 1), (A, 10_000, 1)]


def test_xnack_errors(cli: Cli) -> None:
    """The texts of Redis 8.8's own XNACK tests (stream-cgroups.tcl, "XNACK argument and
    error validation"), which the page leaves out."""
    nack_setup(cli)
    g = ("XNACK", "mystream", "mygroup")
    assert cli.err(*g, "MAYBE", "IDS", "1", A) == "ERR mode must be SILENT, FAIL, or FATAL"
    assert cli.err("XNACK", "mystream", "nogroup", "FAIL", "IDS", "1", A).startswith("NOGROUP")
    assert cli.err("XNACK", "nokey", "mygroup", "FAIL", "IDS", "1", A).startswith("NOGROUP")
    unrecognized = [
        ("FAIL", "BADOPT", "IDS", "1", A),
        ("FAIL", "IDS", "1", A, "BADOPT"),
        ("FAIL", "FATAL", "IDS", "1", A),  # one mode only
        ("SILENT", "NOTIDS", "1", A),
        ("FAIL", "IDS", "1", A, "RETRYCOUNT"),  # no value: an option it does not know
        ("FAIL", "IDS", "1", A, B),  # past numids: an option too
    ]
    for args in unrecognized:
        assert cli.err(*g, *args).startswith("ERR Unrecognized XNACK option"), args
    missing_ids = cli.err(*g, "SILENT", "FORCE", "RETRYCOUNT", "5")
    assert missing_ids == "ERR syntax error, expected IDS keyword"
    for numids in ("abc", "0", "-1"):
        assert cli.err(*g, "SILENT", "IDS", numids, A) == "ERR numids must be a positive integer"
    assert cli.err(*g, "SILENT", "IDS", "2", A) == "ERR number of IDs doesn't match numids"
    assert cli.err(*g, "FAIL", "IDS", "1", A, "RETRYCOUNT", "-1") == (
        "ERR Invalid RETRYCOUNT value, must be >= 0"
    )
    assert cli.err(*g, "FAIL", "IDS", "1", A, "RETRYCOUNT", "abc") == (
        "ERR value is not an integer or out of range"
    )
    assert cli.err(*g, "FAIL", "IDS", "1", "bad").startswith("ERR Invalid stream ID")
    # Nothing changed.
    assert cli("XPENDING", "mystream", "mygroup", "-", "+", "10") == [
        [A, "consumer1", 0, 1],
        [B, "consumer1", 0, 1],
    ]


# ---------------------------------------------------------------------- XREADGROUP CLAIM


def test_claim_reply_and_order(cli: Cli) -> None:
    """Claimed entries come with idle ms and previous delivery count, released ones first,
    then by idle time (longer first), then incoming entries (count 0)."""
    for i in range(1, 6):
        cli("XADD", "s", f"{i}-0", "f", f"v{i}")
    cli("XGROUP", "CREATE", "s", "g", "0")
    cli("XREADGROUP", "GROUP", "g", "a", "COUNT", "1", "STREAMS", "s", ">")  # 1-0 at T0
    cli.clock.advance(100)
    cli("XREADGROUP", "GROUP", "g", "a", "COUNT", "2", "STREAMS", "s", ">")  # 2-0, 3-0 at +100
    cli.clock.advance(100)
    cli("XNACK", "s", "g", "FAIL", "IDS", "1", "3-0")
    reply = cli("XREADGROUP", "GROUP", "g", "b", "CLAIM", "50", "STREAMS", "s", ">")
    assert reply == [
        [
            "s",
            [
                ["3-0", ["f", "v3"], -1, 1],
                ["1-0", ["f", "v1"], 200, 1],
                ["2-0", ["f", "v2"], 100, 1],
                ["4-0", ["f", "v4"], 0, 0],
                ["5-0", ["f", "v5"], 0, 0],
            ],
        ]
    ]
    assert cli("XPENDING", "s", "g", "-", "+", "10") == [
        [f"{i}-0", "b", 0, 2 if i <= 3 else 1] for i in range(1, 6)
    ]


def test_claim_count_example(cli: Cli) -> None:
    """20 idle pending entries and 200 incoming: 220 without COUNT, 20 + 80 with COUNT 100."""
    for key in ("s", "t"):
        for i in range(1, 221):
            cli("XADD", key, f"{i}-0", "f", "v")
        cli("XGROUP", "CREATE", key, "g", "0")
        cli("XREADGROUP", "GROUP", "g", "a", "COUNT", "20", "STREAMS", key, ">")
    cli.clock.advance(1000)
    whole = cli("XREADGROUP", "GROUP", "g", "b", "CLAIM", "500", "STREAMS", "s", ">")
    assert len(whole[0][1]) == 220
    counted = cli(
        "XREADGROUP", "GROUP", "g", "b", "CLAIM", "500", "COUNT", "100", "STREAMS", "t", ">"
    )
    entries = counted[0][1]
    assert len(entries) == 100
    assert [e[3] for e in entries[:20]] == [1] * 20 and [e[3] for e in entries[20:]] == [0] * 80


def test_claim_ignored_when_id_is_not_new(cli: Cli) -> None:
    cli("XADD", "s", "1-0", "f", "v")
    cli("XGROUP", "CREATE", "s", "g", "0")
    cli("XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">")
    cli.clock.advance(1000)
    assert cli("XREADGROUP", "GROUP", "g", "a", "CLAIM", "0", "STREAMS", "s", "0") == [
        ["s", [["1-0", ["f", "v"]]]]
    ]
    assert cli("XREADGROUP", "GROUP", "g", "b", "CLAIM", "0", "STREAMS", "s", "0") == [["s", []]]
    assert cli("XPENDING", "s", "g", "-", "+", "10") == [["1-0", "a", 0, 2]]


def test_claim_noack_not_applied_to_pending_entries(cli: Cli) -> None:
    cli("XADD", "s", "1-0", "f", "v")
    cli("XGROUP", "CREATE", "s", "g", "0")
    cli("XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">")
    cli("XADD", "s", "2-0", "f", "v")
    cli.clock.advance(10)
    reply = cli("XREADGROUP", "GROUP", "g", "b", "NOACK", "CLAIM", "5", "STREAMS", "s", ">")
    assert [(e[0], e[3]) for e in reply[0][1]] == [("1-0", 1), ("2-0", 0)]
    assert cli("XPENDING", "s", "g", "-", "+", "10") == [["1-0", "b", 0, 2]]


# -------------------------------------------------------- XADD / XTRIM reference policies


def policy_setup(cli: Cli) -> None:
    """Entries 1..10; g read 1..6 and acked 1..3; h read 1..2 and acked both."""
    for i in range(1, 11):
        cli("XADD", "s", f"{i}-0", "f", "v")
    cli("XGROUP", "CREATE", "s", "g", "0")
    cli("XGROUP", "CREATE", "s", "h", "0")
    cli("XREADGROUP", "GROUP", "g", "c", "COUNT", "6", "STREAMS", "s", ">")
    cli("XREADGROUP", "GROUP", "h", "d", "COUNT", "2", "STREAMS", "s", ">")
    cli("XACK", "s", "g", "1-0", "2-0", "3-0")
    cli("XACK", "s", "h", "1-0", "2-0")


@pytest.mark.parametrize("command", ["XTRIM", "XADD"])
def test_keepref_keeps_references(cli: Cli, command: str) -> None:
    policy_setup(cli)
    trim = ("MAXLEN", "4", "KEEPREF")
    if command == "XTRIM":
        assert cli("XTRIM", "s", *trim) == 6
    else:
        cli("XADD", "s", *trim, "11-0", "f", "v")
    assert [r[0] for r in cli("XPENDING", "s", "g", "-", "+", "10")] == ["4-0", "5-0", "6-0"]
    # The consumer's history shows the trimmed ones as nil entries.
    assert cli("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")[0][1][0] == ["4-0", None]


@pytest.mark.parametrize("command", ["XTRIM", "XADD"])
def test_delref_drops_references(cli: Cli, command: str) -> None:
    policy_setup(cli)
    if command == "XTRIM":
        assert cli("XTRIM", "s", "MAXLEN", "=", "5", "DELREF") == 5
    else:  # one more entry first, then the same five go
        cli("XADD", "s", "MAXLEN", "=", "6", "DELREF", "11-0", "f", "v")
    assert [r[0] for r in cli("XPENDING", "s", "g", "-", "+", "10")] == ["6-0"]


@pytest.mark.parametrize("command", ["XTRIM", "XADD"])
def test_acked_trims_only_what_every_group_acknowledged(cli: Cli, command: str) -> None:
    """1..2 are acked by both groups; 3 by g only (h has not read it): only 1..2 go, and
    the stream never goes below MAXLEN."""
    policy_setup(cli)
    if command == "XTRIM":
        assert cli("XTRIM", "s", "MAXLEN", "0", "ACKED") == 2
    else:
        cli("XADD", "s", "MAXLEN", "0", "ACKED", "11-0", "f", "v")
    assert cli("XRANGE", "s", "-", "+")[0][0] == "3-0"
    cli("XREADGROUP", "GROUP", "h", "d", "COUNT", "3", "STREAMS", "s", ">")
    cli("XACK", "s", "h", "3-0", "4-0", "5-0")
    cli("XACK", "s", "g", "4-0", "5-0")
    # 3..5 now acked by both; MAXLEN 7 stops at the limit before all of them go.
    length = cli("XLEN", "s")
    assert cli("XTRIM", "s", "MAXLEN", str(length - 2), "ACKED") == 2
    assert cli("XRANGE", "s", "-", "+")[0][0] == "5-0"
