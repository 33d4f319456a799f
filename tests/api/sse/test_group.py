"""Consumer-group delivery over SSE: history then `>`, sharing, max_unacked, noack, 404s,
consumers created as XREADGROUP creates them."""

from __future__ import annotations

import contextlib

import httpx
import pytest

from tests.api.sse.support import add, command, entry_ids, open_events
from tests.conftest import Server
from tests.support.waiting import parked_async


def path(consumer: str, group: str = "g", stream: str = "s") -> str:
    return f"/v1/streams/{stream}/groups/{group}/consumers/{consumer}/events"


async def make_group(client: httpx.AsyncClient, *consumers: str) -> None:
    await command(client, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    for c in consumers:
        await command(client, "XGROUP", "CREATECONSUMER", "s", "g", c)


async def pending_of(client: httpx.AsyncClient, consumer: str) -> list[str]:
    rows = await command(client, "XPENDING", "s", "g", "-", "+", "100", consumer)
    return [row[0] for row in rows]


async def test_new_entries_become_pending_for_the_consumer(client: httpx.AsyncClient) -> None:
    await make_group(client, "c")
    async with open_events(client, path("c")) as events:
        ids = [await add(client, "s", "n", str(i)) for i in range(3)]
        assert entry_ids(await events.take(3)) == ids
    assert await pending_of(client, "c") == ids


async def test_history_first_then_new(client: httpx.AsyncClient) -> None:
    await make_group(client, "c")
    old = [await add(client, "s", "n", str(i)) for i in range(3)]
    await command(client, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    await command(client, "XACK", "s", "g", old[1])
    async with open_events(client, path("c")) as events:
        new = await add(client, "s", "n", "new")
        got = await events.take(3)
        assert entry_ids(got) == [old[0], old[2], new]
        assert got[0].id == old[0]


async def test_last_event_id_skips_history_already_received(client: httpx.AsyncClient) -> None:
    await make_group(client, "c")
    old = [await add(client, "s", "n", str(i)) for i in range(3)]
    await command(client, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    async with open_events(client, path("c"), old[1]) as events:
        assert entry_ids(await events.take(1)) == [old[2]]
        await events.none_within(0.3)


async def test_two_subscribers_share_entries_none_twice(
    client: httpx.AsyncClient, sse_server: Server
) -> None:
    await make_group(client, "c1", "c2")
    async with (
        open_events(client, path("c1")) as one,
        open_events(client, path("c2")) as two,
    ):
        await parked_async(sse_server, 2)  # both blocked in XREADGROUP: served in turn
        ids = [await add(client, "s", "n", str(i)) for i in range(20)]
        got_one: list[str] = []
        got_two: list[str] = []
        while len(got_one) + len(got_two) < 20:
            for reader, got in ((one, got_one), (two, got_two)):
                with contextlib.suppress(TimeoutError):
                    got += entry_ids([await reader.next(0.2)])
        await one.none_within(0.2)
        await two.none_within(0.2)
    assert sorted(got_one + got_two) == ids
    assert not set(got_one) & set(got_two)
    assert got_one and got_two, "waiting subscribers are served in turn"
    assert await pending_of(client, "c1") == got_one
    assert await pending_of(client, "c2") == got_two


async def test_max_unacked_pauses_until_acks_arrive(client: httpx.AsyncClient) -> None:
    await make_group(client, "c")
    async with open_events(client, path("c"), max_unacked=2) as events:
        ids = [await add(client, "s", "n", str(i)) for i in range(5)]
        assert entry_ids(await events.take(2)) == ids[:2]
        await events.none_within(0.5)
        assert await pending_of(client, "c") == ids[:2]
        # The REST acks resource; well within the 1 s re-check: the ack itself wakes it.
        r = await client.post("/v1/streams/s/groups/g/acks", json={"ids": [ids[0]]})
        assert r.json() == {"acknowledged": 1}
        assert entry_ids(await events.take(1, timeout=0.4)) == [ids[2]]
        await events.none_within(0.3)
        await command(client, "XACK", "s", "g", ids[1], ids[2])  # the command endpoint too
        assert entry_ids(await events.take(2, timeout=0.4)) == ids[3:]


async def test_held_back_entries_go_to_another_subscriber(
    client: httpx.AsyncClient, sse_server: Server
) -> None:
    """A consumer paused by max_unacked takes nothing, so the group's others get it."""
    await make_group(client, "slow", "other")
    async with open_events(client, path("slow"), max_unacked=1) as slow:
        first = await add(client, "s", "n", "0")
        assert entry_ids(await slow.take(1)) == [first]
        async with open_events(client, path("other")) as other:
            await parked_async(sse_server, 1)  # other; slow, held back, blocks in nothing
            rest = [await add(client, "s", "n", str(i)) for i in range(1, 4)]
            assert entry_ids(await other.take(3)) == rest
        await slow.none_within(0.2)


async def test_noack_records_nothing_pending(client: httpx.AsyncClient) -> None:
    await make_group(client, "c")
    async with open_events(client, path("c"), noack="true") as events:
        ids = [await add(client, "s", "n", str(i)) for i in range(2)]
        assert entry_ids(await events.take(2)) == ids
    assert await pending_of(client, "c") == []


@pytest.mark.parametrize(("stream", "group"), [("s", "nope"), ("nostream", "g")])
async def test_missing_group_is_a_404_problem(
    client: httpx.AsyncClient, stream: str, group: str
) -> None:
    await make_group(client, "c")
    r = await client.get(path("c", group, stream))
    assert r.status_code == 404
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["code"] == "NOGROUP"
    consumers = await command(client, "XINFO", "CONSUMERS", "s", "g")
    assert [c[1] for c in consumers] == ["c"]  # nothing created


async def test_a_new_consumer_is_created_as_xreadgroup_creates_it(
    client: httpx.AsyncClient,
) -> None:
    """An EventSource pointed at a consumer nobody created gets its events (a 404 would make
    EventSource give up for good): the first read creates the consumer, as XREADGROUP does."""
    await make_group(client)
    assert await command(client, "XINFO", "CONSUMERS", "s", "g") == []
    async with open_events(client, path("newcomer")) as events:
        ids = [await add(client, "s", "n", str(i)) for i in range(2)]
        assert entry_ids(await events.take(2)) == ids
    consumers = await command(client, "XINFO", "CONSUMERS", "s", "g")
    assert [(c[1], c[3]) for c in consumers] == [("newcomer", 2)]
    assert await pending_of(client, "newcomer") == ids


async def test_group_destroyed_while_streaming_ends_with_an_error_event(
    client: httpx.AsyncClient, sse_server: Server
) -> None:
    await make_group(client, "c")
    async with open_events(client, path("c")) as events:
        await parked_async(sse_server, 1)  # DESTROY wakes the blocked read
        await command(client, "XGROUP", "DESTROY", "s", "g")
        event = await events.next()
        assert event.event == "error"
        assert event.json()["code"] == "NOGROUP"
        assert await events.until_end() == []


async def test_departed_subscriber_leaves_no_waiter(
    client: httpx.AsyncClient, sse_server: Server
) -> None:
    """After a subscriber disconnects, new entries are not assigned to it: they go to the
    live one (a leftover waiter ahead in the queue would take them)."""
    await make_group(client, "gone", "live")
    async with open_events(client, path("gone")) as events:
        await events.none_within(0.2)
    await parked_async(sse_server, 0)  # the server noticed the closed connection
    async with open_events(client, path("live")) as events:
        await parked_async(sse_server, 1)
        ids = [await add(client, "s", "n", str(i)) for i in range(3)]
        assert entry_ids(await events.take(3)) == ids
    assert await pending_of(client, "gone") == []
