"""Dead letters that are dead-lettered again, and chains of dead-letter streams (issue 37).

Two groups whose policies named each other's stream as ``dead_letter_stream`` grew without
bound: each lap wrapped the entry in six more ``xs-dl-`` fields, and added an entry. Now a
policy whose chain comes back to its own stream is refused (the policy that would close the
cycle, whatever the order the others were set in), and a dead letter of a dead letter keeps
its first origin and counts its hops, at a constant size. Rules: app/engine/dead_letters.py.
"""

from __future__ import annotations

import pytest

from app.engine.clock import ManualClock
from app.engine.commands.policy import redrive, set_policy
from app.engine.dead_letters import (
    DEAD_LETTER_FIELDS,
    DEAD_LETTER_HOPS,
    MAX_DEAD_LETTER_HOPS,
    DeadLetter,
    dead_letter_fields,
    dead_letter_tail,
    split_dead_letter,
)
from app.engine.delivery import DeliveryPolicy, RedriveArgs
from app.engine.errors import Conflict, WrongArgument
from app.engine.ids import StreamID
from app.engine.store import Store
from app.engine.stream import Entry
from tests.engine.helpers import Journal, recovered, run


def groups(store: Store, *keys: str) -> None:
    for key in keys:
        run(store, "XGROUP", "CREATE", key, "g", "$", "MKSTREAM")


def dead_to(store: Store, key: str, dead: str, group: str = "g") -> None:
    store.run(set_policy, key, group, DeliveryPolicy(dead_letter_stream=dead))


def policy_of(store: Store, key: str, group: str = "g") -> DeliveryPolicy | None:
    return store.keyspace.streams[key].groups[group].policy


# --- cycles are refused ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "links",
    [
        [("a", "b"), ("b", "a")],  # two groups dead-lettering into each other
        [("a", "b"), ("b", "c"), ("c", "a")],
        [("b", "c"), ("c", "a"), ("a", "b")],  # the same cycle, closed by another link
        [("a", "b"), ("b", "c"), ("c", "d"), ("d", "b")],  # a cycle further down the chain
    ],
)
def test_the_policy_that_closes_a_cycle_is_refused(
    store: Store, journal: Journal, links: list[tuple[str, str]]
) -> None:
    groups(store, "a", "b", "c", "d")
    *first, (key, dead) = links
    for k, d in first:
        dead_to(store, k, d)
    records = len(journal.records)
    with pytest.raises(Conflict) as info:
        dead_to(store, key, dead)
    assert info.value.text == (
        f"ERR dead_letter_stream '{dead}' leads back to '{key}' through the policies of its "
        "groups: dead letters would go round for ever"
    )
    assert policy_of(store, key) is None  # nothing set, nothing journaled
    assert len(journal.records) == records


def test_a_self_loop_is_refused_as_before(store: Store) -> None:
    groups(store, "a")
    with pytest.raises(WrongArgument, match="another stream than the group's"):
        dead_to(store, "a", "a")


def test_the_chain_follows_every_group_with_a_policy_and_nothing_else(store: Store) -> None:
    groups(store, "a", "b", "c")
    run(store, "XGROUP", "CREATE", "b", "plain", "$")  # no policy: no link
    run(store, "XGROUP", "CREATE", "b", "h", "$")
    store.run(set_policy, "b", "h", DeliveryPolicy(visibility_timeout_ms=10))  # no dead letters
    dead_to(store, "a", "b")
    dead_to(store, "c", "a")  # c -> a -> b: b's groups name no dead-letter stream
    with pytest.raises(Conflict):  # b -> c -> a -> b, by b's group h
        store.run(set_policy, "b", "h", DeliveryPolicy(dead_letter_stream="c", max_deliveries=2))
    assert policy_of(store, "b", "h") == DeliveryPolicy(visibility_timeout_ms=10)


def test_a_cycle_may_be_closed_once_a_link_is_gone(store: Store) -> None:
    groups(store, "a", "b")
    dead_to(store, "a", "b")
    with pytest.raises(Conflict):
        dead_to(store, "b", "a")
    store.run(set_policy, "a", "g", None)
    dead_to(store, "b", "a")  # the link is gone: the other way round is a chain
    with pytest.raises(Conflict):
        dead_to(store, "a", "b")  # and now this one would close the cycle
    run(store, "XGROUP", "DESTROY", "b", "g")  # the policy goes with its group
    dead_to(store, "a", "b")


def test_a_dead_letter_stream_not_there_yet_is_the_end_of_the_chain(store: Store) -> None:
    groups(store, "a")
    dead_to(store, "a", "later")
    groups(store, "later")
    with pytest.raises(Conflict):
        dead_to(store, "later", "a")


# --- a dead letter of a dead letter ---------------------------------------------------------


def fatal(store: Store, key: str) -> None:
    """Deliver ``key``'s new entries, XNACK them FATAL, and read: each is dead-lettered."""
    got = run(store, "XREADGROUP", "GROUP", "g", "c", "STREAMS", key, ">")
    ids = [str(e.id) for e in got[0].entries]
    run(store, "XNACK", key, "g", "FATAL", "IDS", len(ids), *ids)
    assert run(store, "XREADGROUP", "GROUP", "g", "d", "STREAMS", key, ">") is None


def test_a_dead_letter_keeps_its_first_origin_and_counts_its_hops(
    store: Store, clock: ManualClock, journal: Journal
) -> None:
    groups(store, "a", "b", "c", "d")
    dead_to(store, "a", "b")
    dead_to(store, "b", "c")
    dead_to(store, "c", "d")
    run(store, "XADD", "a", "1-0", "n", "1")
    fatal(store, "a")
    [first] = run(store, "XRANGE", "b", "-", "+")
    assert first.fields[2::2] == DEAD_LETTER_FIELDS  # the first move: as always
    fatal(store, "b")
    [second] = run(store, "XRANGE", "c", "-", "+")
    assert second.fields == (*first.fields, DEAD_LETTER_HOPS, "2")
    fatal(store, "c")
    [third] = run(store, "XRANGE", "d", "-", "+")
    assert third.fields == (*first.fields, DEAD_LETTER_HOPS, "3")  # the same size as the second
    original, origin = split_dead_letter(third.fields) or pytest.fail("not a dead letter")
    assert original == ("n", "1")
    assert (origin.stream, origin.id, origin.group, origin.consumer) == (
        "a",
        StreamID(1, 0),
        "g",
        "c",
    )
    assert (origin.reason, origin.hops) == ("fatal", 3)
    # Redrive sends it to its first origin, without any xs-dl- field.
    done = store.run(redrive, RedriveArgs("d"))
    [(_, target, new_id)] = done.moved
    assert target == "a"
    assert run(store, "XRANGE", "a", new_id, new_id) == [Entry(new_id, ("n", "1"))]
    recovered(store, journal)


ORIGIN = DeadLetter("s", StreamID(1, 2), "g", "c", 3, "fatal")
TAIL = dead_letter_fields(("f", "v"), ORIGIN)[2:]


@pytest.mark.parametrize(
    ("fields", "want"),
    [
        (("f", "v"), None),
        (TAIL, (0, 1)),
        (("f", "v", *TAIL), (2, 1)),
        (("f", "v", *TAIL, DEAD_LETTER_HOPS, "7"), (2, 7)),
        (("f", "v", *TAIL, DEAD_LETTER_HOPS, "999999999999999"), (2, MAX_DEAD_LETTER_HOPS)),
        # not a hop count: the entry does not end with a dead letter's tail
        (("f", "v", *TAIL, DEAD_LETTER_HOPS, "0"), None),
        (("f", "v", *TAIL, DEAD_LETTER_HOPS, "07"), None),
        (("f", "v", *TAIL, DEAD_LETTER_HOPS, "+7"), None),
        (("f", "v", *TAIL, DEAD_LETTER_HOPS, "1000000000000000"), None),
        (("f", "v", *TAIL, DEAD_LETTER_HOPS, "٣"), None),  # a digit, but not 0-9
        ((DEAD_LETTER_HOPS, "2", *TAIL), (2, 1)),  # before the tail: a field of the entry
        (TAIL[2:], None),
    ],
)
def test_the_tail_of_a_dead_letter(fields: tuple[str, ...], want: tuple[int, int] | None) -> None:
    assert dead_letter_tail(fields) == want


def test_hops_stop_at_their_most_and_a_broken_count_is_wrapped_once() -> None:
    most = ("f", "v", *TAIL, DEAD_LETTER_HOPS, str(MAX_DEAD_LETTER_HOPS))
    assert dead_letter_fields(most, ORIGIN) == most
    broken = ("f", "v", *TAIL, DEAD_LETTER_HOPS, "x")
    wrapped = dead_letter_fields(broken, ORIGIN)
    assert wrapped == (*broken, *TAIL)
    assert dead_letter_fields(wrapped, ORIGIN) == (*wrapped, DEAD_LETTER_HOPS, "2")
