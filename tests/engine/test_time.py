"""Everything that depends on the clock, driven by a ManualClock so times are exact.

Where redis-server's behaviour is not plain from the command docs it was checked against
redis-server 7.0.15 (with sleeps, so only approximately timed) and is noted as such.
"""

from __future__ import annotations

import pytest

from app.engine.clock import ManualClock
from app.engine.ids import MIN_ID, UINT64_MAX, StreamID
from app.engine.replies import AutoClaim, ConsumerInfo, MissingEntry, PendingRow
from app.engine.store import Store
from tests.engine.helpers import T0, error, ids, run

M = UINT64_MAX
TOO_SMALL = "ERR The ID specified in XADD is equal or smaller than the target stream top item"


def pending(store: Store, *extra: str) -> list[PendingRow]:
    rows: list[PendingRow] = run(store, "XPENDING", "k", "g", *extra)
    return rows


def idles(store: Store) -> dict[str, int]:
    return {str(r.id): r.idle_ms for r in pending(store, "-", "+", "100")}


def counts(store: Store) -> dict[str, int]:
    return {str(r.id): r.delivery_count for r in pending(store, "-", "+", "100")}


def owners(store: Store) -> dict[str, str]:
    return {str(r.id): r.consumer for r in pending(store, "-", "+", "100")}


def consumers(store: Store) -> dict[str, ConsumerInfo]:
    return {c.name: c for c in run(store, "XINFO", "CONSUMERS", "k", "g")}


def add(store: Store, *id_texts: str) -> None:
    for text in id_texts:
        run(store, "XADD", "k", text, "f", "v")


def deliver(store: Store, consumer: str, count: int = 1) -> list[str]:
    reply = run(store, "XREADGROUP", "GROUP", "g", consumer, "COUNT", count, "STREAMS", "k", ">")
    return ids(reply[0].entries)


# -- XADD `*` and `ms-*` -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("moves", "expected"),
    [
        # each step: (clock change in ms, ID XADD * gives)
        ([(0, f"{T0}-0"), (0, f"{T0}-1"), (0, f"{T0}-2")], "same millisecond: seq + 1"),
        ([(0, f"{T0}-0"), (1, f"{T0 + 1}-0"), (10, f"{T0 + 11}-0")], "clock moves on"),
        ([(0, f"{T0}-0"), (-1, f"{T0}-1"), (-5000, f"{T0}-2")], "clock goes back"),
        ([(0, f"{T0}-0"), (-10, f"{T0}-1"), (10, f"{T0}-2"), (1, f"{T0 + 1}-0")], "back, forth"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_xadd_star_follows_the_clock_and_never_goes_back(
    store: Store, clock: ManualClock, moves: list[tuple[int, str]], expected: str
) -> None:
    for delta, want in moves:
        clock.advance(delta)
        assert str(run(store, "XADD", "k", "*", "f", "v")) == want, expected


def test_xadd_star_after_an_explicit_future_id(store: Store) -> None:
    add(store, f"{T0 + 1000}-5")
    assert run(store, "XADD", "k", "*", "f", "v") == StreamID(T0 + 1000, 6)


def test_xadd_star_when_the_sequence_is_exhausted(store: Store) -> None:
    add(store, f"{T0}-{M}")
    assert run(store, "XADD", "k", "*", "f", "v") == StreamID(T0 + 1, 0)


def test_xadd_star_when_every_id_is_used(store: Store) -> None:
    add(store, f"{M}-{M}")
    for text in ("*", f"{M}-*"):
        assert error(store, "XADD", "k", text, "f", "v") == (
            "ERR The stream has exhausted the last possible ID, unable to add more items"
        )


def test_xadd_star_on_a_clock_at_zero() -> None:
    store = Store(clock=ManualClock(0))
    assert run(store, "XADD", "k", "*", "f", "v") == StreamID(0, 1)  # never 0-0
    assert run(store, "XADD", "k", "*", "f", "v") == StreamID(0, 2)


def test_xadd_star_keeps_the_last_id_after_xsetid(store: Store, clock: ManualClock) -> None:
    add(store, "1-1")
    run(store, "XSETID", "k", f"{T0 + 50}-7")
    assert run(store, "XADD", "k", "*", "f", "v") == StreamID(T0 + 50, 8)
    clock.advance(51)
    assert run(store, "XADD", "k", "*", "f", "v") == StreamID(T0 + 51, 0)


@pytest.mark.parametrize(
    ("last", "text", "expected"),
    [
        (None, "0-*", "0-1"),  # checked on redis-server: empty stream, 0-* -> 0-1
        (None, "5-*", "5-0"),
        ("5-3", "5-*", "5-4"),
        ("5-3", "6-*", "6-0"),
        ("5-3", "4-*", TOO_SMALL),
        (f"5-{M - 1}", "5-*", f"5-{M}"),
        # redis-server 7.0.15: XSETID k 5-18446744073709551615; XADD k 5-* f v ->
        # "ERR Elements are too large to be stored" (streamAppendItem fails without EDOM).
        (f"5-{M}", "5-*", "ERR Elements are too large to be stored"),
    ],
)
def test_xadd_ms_star_picks_the_sequence(
    store: Store, last: str | None, text: str, expected: str
) -> None:
    if last is not None:
        add(store, last)
    if expected.startswith("ERR"):
        assert error(store, "XADD", "k", text, "f", "v") == expected
    else:
        assert str(run(store, "XADD", "k", text, "f", "v")) == expected


def test_xadd_ms_star_ignores_the_clock(store: Store, clock: ManualClock) -> None:
    clock.set(10)
    assert run(store, "XADD", "k", f"{T0}-*", "f", "v") == StreamID(T0, 0)
    assert run(store, "XADD", "k", f"{T0}-*", "f", "v") == StreamID(T0, 1)
    assert run(store, "XADD", "k", "*", "f", "v") == StreamID(T0, 2)


# -- XPENDING idle -----------------------------------------------------------------------


@pytest.fixture
def staggered(store: Store, clock: ManualClock) -> Store:
    """1-0 delivered at T0, 2-0 at T0+100, 3-0 at T0+150; the clock stops at T0+150."""
    add(store, "1-0", "2-0", "3-0")
    run(store, "XGROUP", "CREATE", "k", "g", "0")
    assert deliver(store, "c1") == ["1-0"]
    clock.advance(100)
    assert deliver(store, "c1") == ["2-0"]
    clock.advance(50)
    assert deliver(store, "c2") == ["3-0"]
    return store


def test_xpending_idle_values_are_exact(staggered: Store, clock: ManualClock) -> None:
    assert idles(staggered) == {"1-0": 150, "2-0": 50, "3-0": 0}
    clock.advance(1)
    assert idles(staggered) == {"1-0": 151, "2-0": 51, "3-0": 1}


@pytest.mark.parametrize(
    ("min_idle", "expected"),
    [
        (0, ["1-0", "2-0", "3-0"]),  # 0: no filter
        (1, ["1-0", "2-0"]),
        (50, ["1-0", "2-0"]),  # the boundary is inclusive: idle >= min-idle
        (51, ["1-0"]),
        (150, ["1-0"]),
        (151, []),
        (-5, ["1-0", "2-0", "3-0"]),
    ],
)
def test_xpending_idle_filter(staggered: Store, min_idle: int, expected: list[str]) -> None:
    rows = pending(staggered, "IDLE", str(min_idle), "-", "+", "10")
    assert ids(rows) == expected


def test_xpending_idle_filter_with_consumer_and_count(staggered: Store) -> None:
    assert ids(pending(staggered, "IDLE", "50", "-", "+", "10", "c1")) == ["1-0", "2-0"]
    assert ids(pending(staggered, "IDLE", "50", "-", "+", "10", "c2")) == []
    # COUNT counts the rows returned, not the rows looked at
    assert ids(pending(staggered, "IDLE", "100", "-", "+", "1")) == ["1-0"]
    assert ids(pending(staggered, "IDLE", "10", "(1-0", "+", "1")) == ["2-0"]


def test_xpending_idle_never_negative(staggered: Store, clock: ManualClock) -> None:
    clock.advance(-120)  # the clock goes back before the last two deliveries
    assert idles(staggered) == {"1-0": 30, "2-0": 0, "3-0": 0}
    assert consumers(staggered)["c2"].idle_ms == 0


def test_xpending_idle_requires_the_extended_form(staggered: Store) -> None:
    assert error(staggered, "XPENDING", "k", "g", "IDLE", "10", "-", "+") == "ERR syntax error"


# -- XCLAIM ------------------------------------------------------------------------------


@pytest.fixture
def claimable(store: Store, clock: ManualClock) -> Store:
    """1-0 and 2-0 delivered to c1 at T0; the clock is at T0+1000."""
    add(store, "1-0", "2-0", "3-0")
    run(store, "XGROUP", "CREATE", "k", "g", "0")
    assert deliver(store, "c1", 2) == ["1-0", "2-0"]
    clock.advance(1000)
    return store


@pytest.mark.parametrize(
    ("min_idle", "claimed"),
    [(999, True), (1000, True), (1001, False), (0, True), (-1, True)],
)
def test_xclaim_min_idle_boundary(claimable: Store, min_idle: int, claimed: bool) -> None:
    reply = run(claimable, "XCLAIM", "k", "g", "c2", str(min_idle), "1-0")
    assert ids(reply) == (["1-0"] if claimed else [])
    if claimed:
        assert reply[0].fields == ("f", "v")
        assert owners(claimable)["1-0"] == "c2"
        assert idles(claimable)["1-0"] == 0
        assert counts(claimable)["1-0"] == 2
    else:
        assert owners(claimable)["1-0"] == "c1"
        assert idles(claimable)["1-0"] == 1000
        assert counts(claimable)["1-0"] == 1
        assert "c2" not in consumers(claimable)  # redis-server creates no consumer then


@pytest.mark.parametrize(
    ("option", "idle"),
    [
        (["IDLE", "5000"], 5000),
        (["IDLE", "0"], 0),
        (["IDLE", "-10"], 0),  # a delivery time in the future is replaced by now
        (["IDLE", str(T0 + 2000)], 0),  # a negative delivery time too
        (["TIME", str(T0 - 1234)], 1000 + 1234),  # the clock is at T0 + 1000
        (["TIME", str(T0 + 1000)], 0),
        (["TIME", str(T0 + 1001)], 0),  # future: now
        (["TIME", "0"], T0 + 1000),
        (["TIME", "-1"], 0),
        (["IDLE", "5000", "TIME", str(T0)], 1000),  # the last one wins
        (["TIME", str(T0), "IDLE", "5000"], 5000),
    ],
)
def test_xclaim_idle_and_time_set_the_delivery_time(
    claimable: Store, clock: ManualClock, option: list[str], idle: int
) -> None:
    assert ids(run(claimable, "XCLAIM", "k", "g", "c2", "0", "1-0", *option)) == ["1-0"]
    assert idles(claimable)["1-0"] == idle
    assert idles(claimable)["2-0"] == 1000  # untouched
    clock.advance(7)
    assert idles(claimable)["1-0"] == idle + 7


def test_xclaim_idle_makes_the_entry_claimable_again(claimable: Store) -> None:
    run(claimable, "XCLAIM", "k", "g", "c2", "0", "1-0", "IDLE", "300")
    assert ids(run(claimable, "XCLAIM", "k", "g", "c3", "301", "1-0")) == []
    assert ids(run(claimable, "XCLAIM", "k", "g", "c3", "300", "1-0")) == ["1-0"]
    assert owners(claimable)["1-0"] == "c3"


@pytest.mark.parametrize(
    ("option", "count"),
    [
        ([], 2),
        (["RETRYCOUNT", "7"], 7),
        (["RETRYCOUNT", "0"], 0),
        (["RETRYCOUNT", "-1"], 2),  # negative: not given, so the count goes up
        (["JUSTID"], 1),  # JUSTID does not count a delivery
        (["JUSTID", "RETRYCOUNT", "9"], 9),
    ],
)
def test_xclaim_delivery_count(claimable: Store, option: list[str], count: int) -> None:
    run(claimable, "XCLAIM", "k", "g", "c2", "0", "1-0", *option)
    assert counts(claimable) == {"1-0": count, "2-0": 1}


def test_xclaim_justid_replies_ids(claimable: Store) -> None:
    reply = run(claimable, "XCLAIM", "k", "g", "c2", "0", "1-0", "2-0", "JUSTID")
    assert reply == [StreamID(1, 0), StreamID(2, 0)]
    assert idles(claimable) == {"1-0": 0, "2-0": 0}  # JUSTID still resets the idle time


def test_xclaim_force_creates_a_pel_entry(claimable: Store, clock: ManualClock) -> None:
    # 3-0 was never delivered: without FORCE nothing happens
    assert run(claimable, "XCLAIM", "k", "g", "c2", "0", "3-0") == []
    assert "3-0" not in owners(claimable)
    # FORCE ignores min-idle for the new entry (it has no owner yet)
    reply = run(claimable, "XCLAIM", "k", "g", "c2", "999999", "3-0", "FORCE")
    assert ids(reply) == ["3-0"]
    assert owners(claimable)["3-0"] == "c2"
    assert idles(claimable)["3-0"] == 0
    clock.advance(5)
    assert idles(claimable)["3-0"] == 5
    assert consumers(claimable)["c2"].pending == 1
    summary = run(claimable, "XPENDING", "k", "g")
    assert (summary.count, summary.consumers) == (3, [("c1", 2), ("c2", 1)])


@pytest.mark.parametrize(
    ("option", "count"),
    # redis-server 7.0.15 (XGROUP CREATE k g $; XCLAIM k g c 0 <id> FORCE [JUSTID]; XPENDING):
    # the new PEL entry starts with delivery count 1, then XCLAIM counts its delivery.
    [([], 2), (["JUSTID"], 1), (["RETRYCOUNT", "5"], 5)],
)
def test_xclaim_force_delivery_count(claimable: Store, option: list[str], count: int) -> None:
    run(claimable, "XCLAIM", "k", "g", "c2", "0", "3-0", "FORCE", *option)
    assert counts(claimable)["3-0"] == count


def test_xclaim_force_needs_the_stream_entry(claimable: Store) -> None:
    assert run(claimable, "XCLAIM", "k", "g", "c2", "0", "9-0", "FORCE") == []
    assert "9-0" not in owners(claimable)


def test_xclaim_force_on_a_pending_entry_keeps_min_idle(claimable: Store) -> None:
    assert run(claimable, "XCLAIM", "k", "g", "c2", "1001", "1-0", "FORCE") == []
    assert owners(claimable)["1-0"] == "c1"


def test_xclaim_of_a_deleted_entry_drops_it_from_the_pel(claimable: Store) -> None:
    run(claimable, "XDEL", "k", "1-0")
    assert ids(run(claimable, "XCLAIM", "k", "g", "c2", "0", "1-0", "2-0")) == ["2-0"]
    assert owners(claimable) == {"2-0": "c2"}
    assert consumers(claimable)["c1"].pending == 0


@pytest.mark.parametrize(
    ("lastid", "expected"),
    [
        ("5-0", StreamID(5, 0)),
        ("2-0", StreamID(2, 0)),
        ("1-0", StreamID(2, 0)),
        ("0", StreamID(2, 0)),
    ],
)
def test_xclaim_lastid_moves_the_group_forward_only(
    claimable: Store, lastid: str, expected: StreamID
) -> None:
    # the group's last-delivered ID is 2-0; LASTID applies even when nothing is claimed
    run(claimable, "XCLAIM", "k", "g", "c2", "999999", "1-0", "LASTID", lastid)
    group = run(claimable, "XINFO", "GROUPS", "k")[0]
    assert group.last_delivered_id == expected
    assert owners(claimable)["1-0"] == "c1"


def test_xclaim_lastid_changes_what_is_new(claimable: Store) -> None:
    run(claimable, "XCLAIM", "k", "g", "c2", "0", "1-0", "LASTID", "3-0")
    assert run(claimable, "XREADGROUP", "GROUP", "g", "c1", "STREAMS", "k", ">") is None


def test_xclaim_refreshes_the_claimer_only_when_it_claims(
    claimable: Store, clock: ManualClock
) -> None:
    # checked on redis-server: an XCLAIM that claims nothing leaves the consumer's idle alone
    clock.advance(500)
    run(claimable, "XCLAIM", "k", "g", "c1", "999999", "1-0")
    assert consumers(claimable)["c1"].idle_ms == 1500
    run(claimable, "XCLAIM", "k", "g", "c1", "0", "1-0")
    assert consumers(claimable)["c1"].idle_ms == 0


# -- XAUTOCLAIM --------------------------------------------------------------------------


@pytest.fixture
def many(store: Store, clock: ManualClock) -> Store:
    """25 entries 1-0 .. 25-0, all delivered to c1 at T0; the clock is at T0 + 1000."""
    add(store, *(f"{i}-0" for i in range(1, 26)))
    run(store, "XGROUP", "CREATE", "k", "g", "0")
    deliver(store, "c1", 25)
    clock.advance(1000)
    return store


def autoclaim(store: Store, min_idle: int, start: str, *extra: str) -> AutoClaim:
    reply: AutoClaim = run(store, "XAUTOCLAIM", "k", "g", "c2", str(min_idle), start, *extra)
    return reply


@pytest.mark.parametrize(("min_idle", "claimed"), [(1000, 3), (1001, 0), (999, 3), (0, 3)])
def test_xautoclaim_min_idle_boundary(many: Store, min_idle: int, claimed: int) -> None:
    reply = autoclaim(many, min_idle, "-", "COUNT", "3")
    assert len(reply.claimed) == claimed
    if claimed:
        assert ids(reply.claimed) == ["1-0", "2-0", "3-0"]
        assert reply.next_id == StreamID(4, 0)
        assert idles(many)["1-0"] == 0
        assert counts(many)["1-0"] == 2
        assert owners(many)["3-0"] == "c2"


def test_xautoclaim_pages_with_a_cursor(many: Store) -> None:
    seen: list[str] = []
    cursor = "0-0"
    pages = 0
    while True:
        reply = autoclaim(many, 0, cursor, "COUNT", "10", "JUSTID")
        seen += ids(reply.claimed)
        pages += 1
        if reply.next_id == MIN_ID:
            break
        cursor = str(reply.next_id)
    assert seen == [f"{i}-0" for i in range(1, 26)]
    assert pages == 3
    assert counts(many) == {f"{i}-0": 1 for i in range(1, 26)}  # JUSTID counts nothing


@pytest.mark.parametrize(
    ("start", "count", "next_id", "claimed"),
    [
        ("-", 2, "3-0", ["1-0", "2-0"]),
        ("24", 2, "0-0", ["24-0", "25-0"]),  # checked on redis-server: nothing after -> 0-0
        ("(23-0", 2, "0-0", ["24-0", "25-0"]),
        ("25-0", 5, "0-0", ["25-0"]),
        ("26", 5, "0-0", []),
        ("-", 25, "0-0", [f"{i}-0" for i in range(1, 26)]),
        ("-", 24, "25-0", [f"{i}-0" for i in range(1, 25)]),
    ],
)
def test_xautoclaim_cursor(
    many: Store, start: str, count: int, next_id: str, claimed: list[str]
) -> None:
    reply = autoclaim(many, 0, start, "COUNT", str(count), "JUSTID")
    assert (str(reply.next_id), ids(reply.claimed), reply.deleted) == (next_id, claimed, [])


@pytest.mark.parametrize(
    ("count", "start", "next_id"),
    [
        # checked on redis-server: 25 pending none idle enough, COUNT 2 looks at 2*10 entries
        (2, "-", "21-0"),
        (2, "21", "0-0"),
        (1, "-", "11-0"),
        (1, "11", "21-0"),
        (1, "(20-0", "0-0"),
        (3, "-", "0-0"),  # 30 attempts cover all 25
    ],
)
def test_xautoclaim_attempts_limit(many: Store, count: int, start: str, next_id: str) -> None:
    reply = autoclaim(many, 5000, start, "COUNT", str(count))
    assert (str(reply.next_id), reply.claimed, reply.deleted) == (next_id, [], [])
    assert set(owners(many).values()) == {"c1"}


def test_xautoclaim_attempts_limit_mixed(many: Store, clock: ManualClock) -> None:
    # make 15-0 the only idle-enough entry: re-deliver the others now via XCLAIM IDLE 0
    others = [f"{i}-0" for i in range(1, 26) if i != 15]
    run(many, "XCLAIM", "k", "g", "c1", "0", *others, "JUSTID")
    clock.advance(10)
    reply = autoclaim(many, 500, "-", "COUNT", "1")  # 10 attempts: 1-0 .. 10-0
    assert (str(reply.next_id), reply.claimed) == ("11-0", [])
    reply = autoclaim(many, 500, "11", "COUNT", "1")
    assert (str(reply.next_id), ids(reply.claimed)) == ("16-0", ["15-0"])
    assert idles(many)["15-0"] == 0


def test_xautoclaim_deleted_entries_use_up_count(many: Store) -> None:
    # checked on redis-server: XDEL 3-0 4-0; XAUTOCLAIM k g c2 0 3 COUNT 2 -> 5-0 [] [3-0 4-0]
    run(many, "XDEL", "k", "3-0", "4-0")
    reply = autoclaim(many, 0, "3", "COUNT", "2", "JUSTID")
    assert (str(reply.next_id), reply.claimed, ids(reply.deleted)) == ("5-0", [], ["3-0", "4-0"])
    assert "3-0" not in owners(many) and "4-0" not in owners(many)
    assert run(many, "XPENDING", "k", "g").count == 23


def test_xautoclaim_delivery_count_and_idle(many: Store, clock: ManualClock) -> None:
    autoclaim(many, 0, "-", "COUNT", "1")
    autoclaim(many, 0, "2", "COUNT", "1", "JUSTID")
    assert counts(many)["1-0"] == 2
    assert counts(many)["2-0"] == 1
    assert idles(many)["1-0"] == idles(many)["2-0"] == 0
    assert idles(many)["3-0"] == 1000
    clock.advance(3)
    assert consumers(many)["c2"].idle_ms == 3


def test_xautoclaim_creates_no_consumer_when_nothing_is_claimed(many: Store) -> None:
    autoclaim(many, 5000, "-")
    assert set(consumers(many)) == {"c1"}


# -- XINFO CONSUMERS idle ----------------------------------------------------------------


@pytest.fixture
def one_consumer(store: Store, clock: ManualClock) -> Store:
    """c1 read 1-0 at T0 (2-0 stays undelivered); the clock is at T0 + 300."""
    add(store, "1-0")
    run(store, "XGROUP", "CREATE", "k", "g", "0")
    deliver(store, "c1")
    clock.advance(300)
    return store


def test_xinfo_consumers_idle_is_exact(one_consumer: Store, clock: ManualClock) -> None:
    assert consumers(one_consumer)["c1"] == ConsumerInfo("c1", 1, 300)
    clock.advance(1)
    assert consumers(one_consumer)["c1"].idle_ms == 301


@pytest.mark.parametrize(
    ("argv", "idle"),
    [
        # all checked on redis-server 7.0.15 with a 300 ms sleep
        (["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "k", ">"], 300),  # nothing new
        (["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "k", "0"], 0),  # history, even empty
        (["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "k", "5-0"], 0),
        (["XPENDING", "k", "g", "-", "+", "10", "c1"], 300),
        (["XGROUP", "CREATECONSUMER", "k", "g", "c1"], 300),
        (["XCLAIM", "k", "g", "c1", "100000", "1-0"], 300),
        (["XCLAIM", "k", "g", "c1", "0", "1-0"], 0),
        (["XAUTOCLAIM", "k", "g", "c1", "100000", "0"], 300),
        (["XAUTOCLAIM", "k", "g", "c1", "0", "0"], 0),
        (["XACK", "k", "g", "1-0"], 300),
    ],
)
def test_what_refreshes_a_consumer(one_consumer: Store, argv: list[str], idle: int) -> None:
    run(one_consumer, *argv)
    assert consumers(one_consumer)["c1"].idle_ms == idle


def test_new_consumers_start_idle_zero(one_consumer: Store, clock: ManualClock) -> None:
    run(one_consumer, "XGROUP", "CREATECONSUMER", "k", "g", "c2")
    clock.advance(40)
    run(one_consumer, "XREADGROUP", "GROUP", "g", "c3", "STREAMS", "k", "0")
    clock.advance(2)
    assert {n: c.idle_ms for n, c in consumers(one_consumer).items()} == {
        "c1": 342,
        "c2": 42,
        "c3": 2,
    }


def test_xreadgroup_new_with_nothing_creates_no_consumer(one_consumer: Store) -> None:
    # checked on redis-server: XREADGROUP > with nothing new creates no consumer
    assert run(one_consumer, "XREADGROUP", "GROUP", "g", "c9", "STREAMS", "k", ">") is None
    assert "c9" not in consumers(one_consumer)


# -- XREADGROUP history re-delivery ------------------------------------------------------


def test_history_redelivery_bumps_count_and_resets_idle(
    one_consumer: Store, clock: ManualClock
) -> None:
    assert idles(one_consumer) == {"1-0": 300}
    reply = run(one_consumer, "XREADGROUP", "GROUP", "g", "c1", "STREAMS", "k", "0")
    assert ids(reply[0].entries) == ["1-0"]
    assert counts(one_consumer) == {"1-0": 2}
    assert idles(one_consumer) == {"1-0": 0}
    clock.advance(25)
    run(one_consumer, "XREADGROUP", "GROUP", "g", "c1", "STREAMS", "k", "0")
    assert counts(one_consumer) == {"1-0": 3}
    assert idles(one_consumer) == {"1-0": 0}


def test_history_respects_the_start_id_and_count(store: Store, clock: ManualClock) -> None:
    add(store, "1-0", "2-0", "3-0")
    run(store, "XGROUP", "CREATE", "k", "g", "0")
    deliver(store, "c1", 3)
    clock.advance(100)
    reply = run(store, "XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "k", "1-0")
    assert ids(reply[0].entries) == ["2-0"]
    assert counts(store) == {"1-0": 1, "2-0": 2, "3-0": 1}
    assert idles(store) == {"1-0": 100, "2-0": 0, "3-0": 100}


def test_history_of_a_deleted_entry(store: Store, clock: ManualClock) -> None:
    # checked on redis-server: the deleted entry comes back as [id, nil] and is not counted
    add(store, "1-0", "2-0")
    run(store, "XGROUP", "CREATE", "k", "g", "0")
    deliver(store, "c1", 2)
    clock.advance(200)
    run(store, "XDEL", "k", "1-0")
    reply = run(store, "XREADGROUP", "GROUP", "g", "c1", "STREAMS", "k", "0")
    assert reply[0].entries[0] == MissingEntry(StreamID(1, 0))
    assert ids(reply[0].entries) == ["1-0", "2-0"]
    assert counts(store) == {"1-0": 1, "2-0": 2}
    assert idles(store) == {"1-0": 200, "2-0": 0}


def test_history_only_shows_the_consumers_own_entries(staggered: Store) -> None:
    reply = run(staggered, "XREADGROUP", "GROUP", "g", "c2", "STREAMS", "k", "0")
    assert ids(reply[0].entries) == ["3-0"]
    assert counts(staggered) == {"1-0": 1, "2-0": 1, "3-0": 2}


def test_noack_delivery_leaves_no_pending_entry(store: Store) -> None:
    add(store, "1-0")
    run(store, "XGROUP", "CREATE", "k", "g", "0")
    run(store, "XREADGROUP", "GROUP", "g", "c1", "NOACK", "STREAMS", "k", ">")
    assert pending(store, "-", "+", "10") == []
    assert consumers(store)["c1"].pending == 0
