"""A group's delivery policy and a stream's retention, on the engine with a manual clock.

Each rule of app/engine/delivery.py: the visibility timeout returns a dead consumer's work,
back-off spaces redeliveries (after XNACK and after a timeout), max_deliveries and XNACK FATAL
move an entry to the dead-letter stream with its origin (and acknowledge it, in one record),
redrive moves it back, and a group without a policy stays exactly Redis's. Every state is
also replayed from the journal and reloaded from a snapshot, which must give the same state.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from app.engine.clock import ManualClock
from app.engine.commands.policy import enforce_retention, redrive, set_policy, set_retention
from app.engine.delivery import (
    DEAD_LETTER_FIELDS,
    DeliveryPolicy,
    RedriveArgs,
    Retention,
    split_dead_letter,
)
from app.engine.errors import NoGroup, NoSuchKey, WrongArgument
from app.engine.ids import StreamID
from app.engine.refpolicy import RefPolicy
from app.engine.store import Store
from app.engine.stream import Entry
from app.engine.waiting import execute
from tests.engine.helpers import T0, Journal, recovered, run


def ids(reply: object) -> list[str]:
    """The IDs a one-stream XREADGROUP answered ([] for nil)."""
    if reply is None:
        return []
    assert isinstance(reply, list)
    return [str(e.id) for read in reply for e in read.entries]


def read(store: Store, consumer: str, count: int = 10) -> list[str]:
    return ids(
        run(store, "XREADGROUP", "GROUP", "g", consumer, "COUNT", count, "STREAMS", "s", ">")
    )


def pending(store: Store) -> list[tuple[str, str, int]]:
    rows = run(store, "XPENDING", "s", "g", "-", "+", 1000)
    return [(str(r.id), r.consumer, r.delivery_count) for r in rows]


def setup(store: Store, policy: DeliveryPolicy, entries: int = 3) -> None:
    run(store, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    for i in range(1, entries + 1):
        run(store, "XADD", "s", f"{i}-0", "n", str(i))
    store.run(set_policy, "s", "g", policy)


def test_visibility_timeout_returns_a_dead_consumers_entries(
    store: Store, clock: ManualClock, journal: Journal
) -> None:
    setup(store, DeliveryPolicy(visibility_timeout_ms=1000))
    assert read(store, "dead") == ["1-0", "2-0", "3-0"]
    clock.advance(999)
    assert read(store, "alive") == []  # not yet: idle 999 < 1000
    clock.advance(1)
    assert read(store, "alive", count=2) == ["1-0", "2-0"]
    assert pending(store) == [("1-0", "alive", 2), ("2-0", "alive", 2), ("3-0", "dead", 1)]
    run(store, "XADD", "s", "4-0", "n", "4")
    # The rest of COUNT goes to what is due, then to new entries.
    assert read(store, "alive", count=5) == ["3-0", "4-0"]
    recovered(store, journal)


def test_backoff_spaces_redeliveries_after_xnack(
    store: Store, clock: ManualClock, journal: Journal
) -> None:
    setup(store, DeliveryPolicy(backoff_ms=(100, 500)), entries=1)
    assert read(store, "c") == ["1-0"]
    assert run(store, "XNACK", "s", "g", "FAIL", "IDS", 1, "1-0") == 1
    clock.advance(99)
    assert read(store, "c") == []
    clock.advance(1)
    assert read(store, "c") == ["1-0"]  # first redelivery: backoff_ms[0]
    run(store, "XNACK", "s", "g", "FAIL", "IDS", 1, "1-0")
    clock.advance(499)
    assert read(store, "c") == []
    clock.advance(1)
    assert read(store, "c") == ["1-0"]  # second: backoff_ms[1]
    run(store, "XNACK", "s", "g", "FAIL", "IDS", 1, "1-0")
    clock.advance(500)
    assert read(store, "c") == ["1-0"]  # the last step repeats
    assert pending(store) == [("1-0", "c", 4)]
    recovered(store, journal)


def test_backoff_after_a_visibility_timeout_waits_the_longer_of_both(
    store: Store, clock: ManualClock
) -> None:
    setup(store, DeliveryPolicy(visibility_timeout_ms=100, backoff_ms=(300,)), entries=1)
    read(store, "c")
    clock.advance(299)
    assert read(store, "d") == []
    clock.advance(1)
    assert read(store, "d") == ["1-0"]


def test_max_deliveries_dead_letters_with_the_origin_and_acknowledges(
    store: Store, clock: ManualClock, journal: Journal
) -> None:
    setup(
        store,
        DeliveryPolicy(visibility_timeout_ms=10, max_deliveries=2, dead_letter_stream="dead"),
        entries=2,
    )
    assert read(store, "c1") == ["1-0", "2-0"]
    run(store, "XACK", "s", "g", "2-0")
    clock.advance(10)
    assert read(store, "c2") == ["1-0"]  # delivery 2 of 2
    clock.advance(10)
    assert read(store, "c3") == []  # a third would pass max_deliveries: dead-lettered
    assert pending(store) == []
    (entry,) = run(store, "XRANGE", "dead", "-", "+")
    fields, origin = split_dead_letter(entry.fields) or pytest.fail("not a dead letter")
    assert fields == ("n", "1")
    assert (origin.stream, origin.id, origin.group, origin.consumer) == (
        "s",
        StreamID(1, 0),
        "g",
        "c2",
    )
    assert (origin.deliveries, origin.reason) == (2, "max_deliveries")
    assert entry.fields[2::2] == DEAD_LETTER_FIELDS
    # One record holds the dead letter and the acknowledgement: a crash keeps both or neither.
    record = journal.records[-1]
    kinds = {type(e).__name__ for e in record}
    assert {"EntryAdded", "Acked"} <= kinds
    stats = store.keyspace.streams["s"].groups["g"]
    assert (stats.redelivered, stats.dead_lettered) == (1, 1)
    recovered(store, journal)


def test_xnack_fatal_dead_letters_at_once_naming_the_consumer_that_held_it(
    store: Store, clock: ManualClock, journal: Journal
) -> None:
    setup(store, DeliveryPolicy(dead_letter_stream="dead", backoff_ms=(60_000,)), entries=2)
    read(store, "worker")
    run(store, "XNACK", "s", "g", "FATAL", "IDS", 1, "2-0")
    assert read(store, "other") == []  # moved, not delivered; no back-off waited
    (entry,) = run(store, "XRANGE", "dead", "-", "+")
    _, origin = split_dead_letter(entry.fields) or pytest.fail("not a dead letter")
    assert (origin.id, origin.consumer, origin.reason) == (StreamID(2, 0), "worker", "fatal")
    assert pending(store) == [("1-0", "worker", 1)]
    recovered(store, journal)


def test_a_group_without_a_policy_is_redis(store: Store, clock: ManualClock) -> None:
    run(store, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    run(store, "XADD", "s", "1-0", "n", "1")
    read(store, "c")
    clock.advance(10**9)
    assert read(store, "d") == []
    run(store, "XNACK", "s", "g", "FAIL", "IDS", 1, "1-0")
    assert read(store, "d") == []  # released entries wait for a claim, as in Redis 8.8
    rows = run(store, "XPENDING", "s", "g", "-", "+", 10)
    assert rows[0].consumer == ""


def test_removing_the_policy_restores_redis_behaviour(store: Store, clock: ManualClock) -> None:
    setup(store, DeliveryPolicy(visibility_timeout_ms=5), entries=1)
    read(store, "c")
    assert store.run(set_policy, "s", "g", None) is True
    clock.advance(100)
    assert read(store, "d") == []


def test_a_blocked_read_wakes_when_an_entry_turns_due() -> None:
    """On the system clock: a blocked read of a policy group is served by time alone."""

    async def scenario() -> None:
        store = Store()
        run(store, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
        run(store, "XADD", "s", "*", "f", "v")
        store.run(set_policy, "s", "g", DeliveryPolicy(visibility_timeout_ms=120))
        delivered = time.monotonic()
        read(store, "dead")
        argv = ["XREADGROUP", "GROUP", "g", "alive", "BLOCK", "5000", "STREAMS", "s", ">"]
        task = asyncio.ensure_future(execute(store, argv))
        reply = await asyncio.wait_for(task, 3)
        assert len(ids(reply)) == 1
        # Served when the entry turned due, not before (the engine counts whole ms).
        assert time.monotonic() - delivered >= 0.118

    asyncio.run(scenario())


def test_policy_checks(store: Store) -> None:
    run(store, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    with pytest.raises(WrongArgument, match="needs a dead_letter_stream"):
        DeliveryPolicy(max_deliveries=3)
    with pytest.raises(WrongArgument, match="visibility_timeout_ms"):
        DeliveryPolicy(visibility_timeout_ms=0)
    with pytest.raises(WrongArgument, match="backoff_ms"):
        DeliveryPolicy(backoff_ms=(1,) * 33)
    with pytest.raises(WrongArgument, match="another stream"):
        store.run(set_policy, "s", "g", DeliveryPolicy(dead_letter_stream="s"))
    with pytest.raises(NoGroup):
        store.run(set_policy, "s", "nope", DeliveryPolicy())
    with pytest.raises(WrongArgument, match="unknown delivery policy part"):
        DeliveryPolicy.from_json({"visibility": 1})


def test_redrive_moves_back_once(store: Store, clock: ManualClock, journal: Journal) -> None:
    setup(store, DeliveryPolicy(dead_letter_stream="dead"), entries=2)
    read(store, "c")
    run(store, "XNACK", "s", "g", "FATAL", "IDS", 2, "1-0", "2-0")
    read(store, "c")
    dead = [e.id for e in run(store, "XRANGE", "dead", "-", "+")]
    run(store, "XADD", "dead", "*", "not", "a dead letter")
    done = store.run(redrive, RedriveArgs("dead", ids=(dead[0],)))
    assert [(d, t) for d, t, _ in done.moved] == [(dead[0], "s")]
    (new_id,) = [n for _, _, n in done.moved]
    assert run(store, "XRANGE", "s", new_id, new_id) == [Entry(new_id, ("n", "1"))]
    again = store.run(redrive, RedriveArgs("dead", ids=(dead[0],)))
    assert (again.moved, again.skipped) == ([], [dead[0]])  # a retry moves nothing twice
    rest = store.run(redrive, RedriveArgs("dead", target="elsewhere"))
    assert [(d, t) for d, t, _ in rest.moved] == [(dead[1], "elsewhere")]
    assert len(rest.skipped) == 1  # the entry that was never a dead letter stays
    assert run(store, "XLEN", "dead") == 1
    with pytest.raises(NoSuchKey):
        store.run(redrive, RedriveArgs("missing"))
    recovered(store, journal)


def test_retention_by_age_length_and_bytes(
    store: Store, clock: ManualClock, journal: Journal
) -> None:
    for i in range(1000):
        run(store, "XADD", "s", f"{T0 - 100_000 + i * 100}-0", "f", "v" * 10)
    age = Retention(max_age_ms=50_000)
    store.run(set_retention, "s", age)
    removed = 0
    while step := store.run(enforce_retention, "s", age, 100):
        assert step <= 100  # bounded steps
        removed += step
    first = run(store, "XRANGE", "s", "-", "+", "COUNT", 1)[0].id
    # Exactly: every entry older than the cutoff goes, nothing younger.
    assert first.ms == T0 - 50_000
    assert removed == 1000 - run(store, "XLEN", "s")
    length = Retention(max_len=200)
    while store.run(enforce_retention, "s", length, 1000):
        pass
    assert 200 <= run(store, "XLEN", "s") < 300
    size = Retention(max_bytes=2000)
    while store.run(enforce_retention, "s", size, 1000):
        pass
    assert run(store, "XLEN", "s") <= 100
    assert store.keyspace.retention == {"s": age}
    run(store, "DEL", "s")
    assert store.keyspace.retention == {"s": age}  # kept by name
    recovered(store, journal)
    run(store, "FLUSHALL")
    assert store.keyspace.retention == {}


HOUR = 3_600_000


def quiet(store: Store) -> None:
    """Three entries, two of them two hours old, read by a group: no node of it ever fills."""
    run(store, "XGROUP", "CREATE", "s", "g", "0", "MKSTREAM")
    run(store, "XADD", "s", f"{T0 - 2 * HOUR}-0", "n", "1")
    run(store, "XADD", "s", f"{T0 - 2 * HOUR + 1}-0", "n", "2")
    run(store, "XADD", "s", f"{T0}-0", "n", "3")
    read(store, "c", count=1)


def test_retention_by_age_trims_a_quiet_stream_as_xtrim_minid_does(
    store: Store, clock: ManualClock, journal: Journal
) -> None:
    """The node holding the boundary is trimmed exactly: the two old entries go though
    their node is far from full, and the stream and its group (lag, entries read) are left
    as an exact XTRIM MINID leaves them."""
    quiet(store)
    age = Retention(max_age_ms=HOUR)
    assert store.run(enforce_retention, "s", age, 1000) == 2
    assert store.run(enforce_retention, "s", age, 1000) == 0
    assert [str(e.id) for e in run(store, "XRANGE", "s", "-", "+")] == [f"{T0}-0"]
    twin = Store(clock=ManualClock(T0))
    quiet(twin)
    assert run(twin, "XTRIM", "s", "MINID", f"{T0 - HOUR}-0") == 2
    for argv in (("XINFO", "STREAM", "s", "FULL"), ("XINFO", "GROUPS", "s")):
        assert run(store, *argv) == run(twin, *argv)
    recovered(store, journal)


def test_retention_by_age_trims_a_backlog_in_bounded_steps(
    store: Store, clock: ManualClock, journal: Journal
) -> None:
    """A step removes at most ``limit`` entries, even below a node's size (where MINID
    ``~`` LIMIT removes no whole node), and every step is journaled as an XTRIM."""
    for i in range(1000):
        run(store, "XADD", "s", f"{T0 - HOUR - 1000 + i}-0", "n", str(i))
    run(store, "XADD", "s", f"{T0}-0", "n", "new")
    age = Retention(max_age_ms=HOUR)
    steps: list[int] = []
    while True:
        before = run(store, "XLEN", "s")
        step = store.run(enforce_retention, "s", age, 30)
        assert step == before - run(store, "XLEN", "s") <= 30
        if not step:
            break
        steps.append(step)
    assert sum(steps) == 1000 and len(steps) == 34  # 33 of 30, then 10
    assert run(store, "XLEN", "s") == 1
    recovered(store, journal)


def test_retention_trims_with_its_reference_policy(store: Store) -> None:
    run(store, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    for i in range(1, 301):
        run(store, "XADD", "s", f"{i}-0", "f", "v")
    read(store, "c", count=300)
    keep = Retention(max_len=0)
    assert store.run(enforce_retention, "s", keep, 100) == 100
    assert len(pending(store)) == 300  # KEEPREF: the PEL still names trimmed entries
    delref = Retention(max_len=0, policy=RefPolicy.DELREF)
    assert Retention.from_json(delref.as_json()) == delref
    assert store.run(enforce_retention, "s", delref, 100) == 100
    assert [p[0] for p in pending(store)] == [f"{i}-0" for i in range(1, 101)] + [
        f"{i}-0" for i in range(201, 301)
    ]
    with pytest.raises(WrongArgument, match="KEEPREF, DELREF or ACKED"):
        Retention.from_json({"max_len": 1, "policy": "DROP"})
