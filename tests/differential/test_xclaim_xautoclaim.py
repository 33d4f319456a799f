"""XCLAIM and XAUTOCLAIM against redis-server: options, deleted entries, cursors, errors."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.differential.exact import ExactPair

INVALID = "ERR Invalid stream ID specified as stream command argument"


@pytest.fixture
def pel(pair: ExactPair) -> ExactPair:
    """Stream ``s`` with 6 entries, all delivered to c1 of group g."""
    pair.fill("s", 6)
    pair("XGROUP", "CREATE", "s", "g", "0")
    pair("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">")
    return pair


def _state(pair: ExactPair) -> None:
    pair("XPENDING", "s", "g")
    pair("XPENDING", "s", "g", "-", "+", "100")
    pair("XINFO", "GROUPS", "s")
    pair("XINFO", "CONSUMERS", "s", "g")
    pair("XINFO", "STREAM", "s", "FULL")


def _delivery_times(reply: Any) -> dict[str, int]:
    """Group-level PEL delivery times from an XINFO STREAM FULL reply (unmasked)."""
    info = dict(zip(reply[::2], reply[1::2], strict=True))
    group = info["groups"][0]
    ginfo = dict(zip(group[::2], group[1::2], strict=True))
    return {row[0]: row[2] for row in ginfo["pending"]}


@pytest.mark.parametrize(
    "args",
    [
        ["c2", "0", "1-0"],
        ["c2", "0", "1-0", "3-0", "9-0"],
        ["c2", "0", "1"],
        ["c1", "0", "2-0"],
        ["c2", "999999999", "1-0"],
        ["c2", "-1", "1-0"],
        ["c2", "0", "2-0", "JUSTID"],
        ["c2", "0", "1-0", "1-0", "JUSTID"],
        ["c2", "0", "9-0", "FORCE"],
        ["c2", "999999999", "2-0", "FORCE"],
        ["c2", "0", "3-0", "IDLE", "500000", "RETRYCOUNT", "7"],
        ["c2", "0", "3-0", "IDLE", "-1"],
        ["c2", "0", "3-0", "RETRYCOUNT", "0"],
        ["c2", "0", "3-0", "RETRYCOUNT", "-1"],
        ["c2", "0", "3-0", "TIME", "1000", "JUSTID"],
        ["c2", "0", "1-0", "LASTID", "10-0"],
        ["c2", "0", "1-0", "LASTID", "2-0"],
        ["c2", "0", "1-0", "LASTID", "6-0", "JUSTID"],
        ["c2", "0", "4-0", "idle", "0", "force", "justid", "retrycount", "3", "lastid", "7"],
    ],
)
def test_xclaim(pel: ExactPair, args: list[str]) -> None:
    """Claims move entries between consumers; options set idle, count and last ID."""
    pel("XCLAIM", "s", "g", *args)
    _state(pel)


def test_xclaim_force_on_unread_entry(pair: ExactPair) -> None:
    """FORCE creates a PEL entry for a stream entry nobody read; not for a missing one."""
    pair.fill("s", 3)
    pair("XGROUP", "CREATE", "s", "g", "$")
    assert pair("XCLAIM", "s", "g", "c", "0", "2-0", "FORCE") == [["2-0", ["f", "v"]]]
    assert pair("XCLAIM", "s", "g", "c", "0", "3-0", "7-0", "FORCE", "JUSTID") == ["3-0"]
    assert pair("XCLAIM", "s", "g", "c", "0", "1-0") == []
    _state(pair)


def test_xclaim_justid_keeps_delivery_count(pel: ExactPair) -> None:
    """A normal claim increments the delivery count; JUSTID does not."""
    pel("XCLAIM", "s", "g", "c2", "0", "1-0")
    pel("XCLAIM", "s", "g", "c2", "0", "1-0")
    pel("XCLAIM", "s", "g", "c3", "0", "2-0", "JUSTID")
    rows = pel("XPENDING", "s", "g", "-", "2", "10")
    assert [(r[0], r[1], r[3]) for r in rows] == [("1-0", "c2", 3), ("2-0", "c3", 1)]


def test_xclaim_idle_and_time_set_delivery_time(pel: ExactPair) -> None:
    """IDLE and TIME set the entry's delivery time: visible through XPENDING's IDLE filter."""
    pel("XCLAIM", "s", "g", "c2", "0", "1-0", "IDLE", "500000")
    now_ms = int(time.time() * 1000)
    pel("XCLAIM", "s", "g", "c2", "0", "2-0", "TIME", str(now_ms - 800000))
    pel("XCLAIM", "s", "g", "c2", "0", "3-0", "TIME", "1000", "IDLE", "5")
    pel("XCLAIM", "s", "g", "c2", "0", "4-0", "TIME", "1000")
    assert [r[0] for r in pel("XPENDING", "s", "g", "IDLE", "400000", "-", "+", "10")] == [
        "1-0",
        "2-0",
        "4-0",
    ]
    pel("XPENDING", "s", "g", "IDLE", "700000", "-", "+", "10")
    expected, actual = pel.both("XINFO", "STREAM", "s", "FULL")
    assert _delivery_times(actual)["4-0"] == _delivery_times(expected)["4-0"] == 1000
    # Claiming (JUSTID too) resets the delivery time to now.
    pel("XCLAIM", "s", "g", "c3", "600000", "1-0", "2-0", "3-0", "4-0", "JUSTID")
    pel("XPENDING", "s", "g", "IDLE", "400000", "-", "+", "10")


def test_xclaim_deleted_entry_leaves_pel(pel: ExactPair) -> None:
    """Claiming an entry deleted from the stream drops it from the PEL and returns nothing."""
    pel("XDEL", "s", "2-0", "3-0")
    assert pel("XCLAIM", "s", "g", "c2", "0", "2-0", "1-0") == [["1-0", ["f", "v"]]]
    assert pel("XCLAIM", "s", "g", "c2", "0", "3-0", "JUSTID") == []
    _state(pel)


def test_xclaim_min_idle_time(pel: ExactPair) -> None:
    """Entries younger than min-idle-time are not claimed."""
    time.sleep(0.3)  # time is the subject: XCLAIM's min-idle (150 ms)
    pel("XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "s", "0")
    assert pel("XCLAIM", "s", "g", "c2", "150", "1-0", "2-0", "JUSTID") == ["2-0"]
    _state(pel)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["c", "0", "abc"], "ERR Unrecognized XCLAIM option 'abc'"),
        (["c", "0", "1-0", "FOO"], "ERR Unrecognized XCLAIM option 'FOO'"),
        (["c", "0", "1-0", "IDLE"], "ERR Unrecognized XCLAIM option 'IDLE'"),
        (["c", "0", "1-0", "JUSTID", "2-0"], "ERR Unrecognized XCLAIM option '2-0'"),
        (["c", "abc", "1-0"], "ERR Invalid min-idle-time argument for XCLAIM"),
        (["c", "0", "1-0", "IDLE", "abc"], "ERR Invalid IDLE option argument for XCLAIM"),
        (["c", "0", "1-0", "TIME", "abc"], "ERR Invalid TIME option argument for XCLAIM"),
        (
            ["c", "0", "1-0", "RETRYCOUNT", "abc"],
            "ERR Invalid RETRYCOUNT option argument for XCLAIM",
        ),
        (["c", "0", "1-0", "LASTID", "abc"], INVALID),
        (["c", "0", "-"], "ERR Unrecognized XCLAIM option '-'"),
        (["c", "0"], "ERR wrong number of arguments for 'xclaim' command"),
        (["c"], "ERR wrong number of arguments for 'xclaim' command"),
    ],
)
def test_xclaim_errors(pel: ExactPair, args: list[str], expected: str) -> None:
    """XCLAIM's argument errors, with Redis's texts; nothing is claimed."""
    assert pel("XCLAIM", "s", "g", *args) == expected
    _state(pel)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["s", "nog", "c", "0", "1-0"], "NOGROUP No such key 's' or consumer group 'nog'"),
        (["nokey", "g", "c", "0", "1-0"], "NOGROUP No such key 'nokey' or consumer group 'g'"),
    ],
)
def test_xclaim_nogroup(pel: ExactPair, args: list[str], expected: str) -> None:
    """A missing key or group is NOGROUP."""
    assert pel("XCLAIM", *args) == expected


# --- XAUTOCLAIM ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["c2", "0", "0"],
        ["c2", "0", "-"],
        ["c2", "0", "0-0"],
        ["c2", "0", "3"],
        ["c2", "0", "(3-0"],
        ["c2", "0", "+"],
        ["c2", "0", "99"],
        ["c2", "0", "0", "COUNT", "1"],
        ["c2", "0", "0", "COUNT", "2"],
        ["c2", "0", "2-0", "COUNT", "3"],
        ["c2", "0", "0", "COUNT", "6"],
        ["c2", "0", "0", "COUNT", "922337203685477580"],
        ["c2", "0", "0", "JUSTID"],
        ["c2", "0", "0", "COUNT", "2", "JUSTID"],
        ["c2", "0", "0", "justid", "count", "4"],
        ["c2", "-1", "0"],
        ["c2", "999999999", "0"],
        ["c1", "0", "0"],
    ],
)
def test_xautoclaim(pel: ExactPair, args: list[str]) -> None:
    """Cursor, COUNT and JUSTID: claimed entries and the next cursor equal Redis's."""
    pel("XAUTOCLAIM", "s", "g", *args)
    _state(pel)


def test_xautoclaim_deleted_entries(pel: ExactPair) -> None:
    """Deleted entries are listed in the third element and removed from the PEL."""
    pel("XDEL", "s", "2-0", "3-0", "5-0")
    reply = pel("XAUTOCLAIM", "s", "g", "c2", "0", "0", "COUNT", "2")
    assert reply[2] == ["2-0"]
    _state(pel)
    pel("XAUTOCLAIM", "s", "g", "c2", "0", reply[0], "JUSTID")
    _state(pel)
    pel("XAUTOCLAIM", "s", "g", "c3", "0", "0")
    _state(pel)


def test_xautoclaim_cursor_walk(pel: ExactPair) -> None:
    """Walking the PEL with the returned cursor, one entry per call, ends on 0-0."""
    cursor = "0-0"
    for _ in range(8):
        cursor = pel("XAUTOCLAIM", "s", "g", "c2", "0", cursor, "COUNT", "1")[0]
        if cursor == "0-0":
            break
    assert cursor == "0-0"
    _state(pel)


def test_xautoclaim_count_bounds_attempts_with_deleted(pel: ExactPair) -> None:
    """COUNT also limits how many deleted entries one call scans (COUNT*10 attempts)."""
    pel.fill("s", 40, start=7)
    pel("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">")
    pel("XDEL", "s", *[f"{i}-0" for i in range(1, 40)])
    pel("XAUTOCLAIM", "s", "g", "c2", "0", "0", "COUNT", "1")
    pel("XAUTOCLAIM", "s", "g", "c2", "0", "0", "COUNT", "2")
    _state(pel)


def test_xautoclaim_min_idle(pel: ExactPair) -> None:
    """Only entries idle at least min-idle-time are claimed."""
    time.sleep(0.3)  # time is the subject: XAUTOCLAIM's min-idle (150 ms)
    pel("XREADGROUP", "GROUP", "g", "c1", "COUNT", "2", "STREAMS", "s", "0")
    reply = pel("XAUTOCLAIM", "s", "g", "c2", "150", "0", "JUSTID")
    assert reply == ["0-0", ["3-0", "4-0", "5-0", "6-0"], []]
    _state(pel)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["c", "0", "0", "COUNT", "0"], "ERR COUNT must be > 0"),
        (["c", "0", "0", "COUNT", "-1"], "ERR COUNT must be > 0"),
        (["c", "0", "0", "COUNT", "abc"], "ERR COUNT must be > 0"),
        (["c", "0", "0", "COUNT", "922337203685477581"], "ERR COUNT must be > 0"),
        (["c", "0", "0", "COUNT", "9223372036854775807"], "ERR COUNT must be > 0"),
        (["c", "0", "0", "COUNT"], "ERR syntax error"),
        (["c", "0", "0", "FOO"], "ERR syntax error"),
        (["c", "abc", "0"], "ERR Invalid min-idle-time argument for XAUTOCLAIM"),
        (["c", "0", "abc"], INVALID),
        (["c", "0", "(abc"], INVALID),
        (["c", "0"], "ERR wrong number of arguments for 'xautoclaim' command"),
    ],
)
def test_xautoclaim_errors(pel: ExactPair, args: list[str], expected: str) -> None:
    """XAUTOCLAIM's argument errors, with Redis's texts; nothing is claimed."""
    assert pel("XAUTOCLAIM", "s", "g", *args) == expected
    _state(pel)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["s", "nog", "c", "0", "0"], "NOGROUP No such key 's' or consumer group 'nog'"),
        (["nokey", "g", "c", "0", "0"], "NOGROUP No such key 'nokey' or consumer group 'g'"),
    ],
)
def test_xautoclaim_nogroup(pel: ExactPair, args: list[str], expected: str) -> None:
    """A missing key or group is NOGROUP."""
    assert pel("XAUTOCLAIM", *args) == expected
