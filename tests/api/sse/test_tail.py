"""Live tails over SSE: the event format, start positions, exact resume, gaps, heartbeats."""

from __future__ import annotations

import asyncio
import itertools
import time

import httpx

from tests.api.sse.conftest import HEARTBEAT_MS, RETRY_MS
from tests.api.sse.support import add, command, entry_ids, open_events
from tests.support.waiting import until_async


async def test_headers_retry_hint_and_entry_event(client: httpx.AsyncClient) -> None:
    """The stream opens with the retry hint and anti-buffering headers; an entry appended
    afterwards is one `entry` event whose `id:` is the entry ID."""
    async with open_events(client, "/v1/streams/s/events") as events:
        headers = events.response.headers
        assert headers["cache-control"] == "no-store"
        assert headers["x-accel-buffering"] == "no"
        sid = await add(client, "s", "f", "v", "g", "w")
        event = await events.next()
        assert (event.event, event.id) == ("entry", sid)
        assert event.json() == {"id": sid, "fields": {"f": "v", "g": "w"}}
        assert events.retry_ms == RETRY_MS


async def test_dollar_skips_history_and_zero_replays_it(client: httpx.AsyncClient) -> None:
    old = [await add(client, "s", "n", str(i)) for i in range(3)]
    async with (
        open_events(client, "/v1/streams/s/events") as live,
        open_events(client, "/v1/streams/s/events", last_id="0") as replay,
    ):
        new = await add(client, "s", "n", "3")
        assert entry_ids(await live.take(1)) == [new]
        assert entry_ids(await replay.take(4)) == [*old, new]
        await live.none_within(0.3)


async def test_last_id_starts_after_that_id(client: httpx.AsyncClient) -> None:
    ids = [await add(client, "s", "n", str(i)) for i in range(4)]
    async with open_events(client, "/v1/streams/s/events", last_id=ids[1]) as events:
        assert entry_ids(await events.take(2)) == ids[2:]
        await events.none_within(0.3)


async def test_fields_as_pairs_keep_repeats_and_order(client: httpx.AsyncClient) -> None:
    sid = await add(client, "s", "b", "1", "a", "2", "b", "3")
    async with open_events(client, "/v1/streams/s/events", last_id="0", fields="pairs") as ev:
        assert (await ev.next()).json() == {
            "id": sid,
            "fields": [["b", "1"], ["a", "2"], ["b", "3"]],
        }


async def test_last_event_id_wins_over_last_id(client: httpx.AsyncClient) -> None:
    ids = [await add(client, "s", "n", str(i)) for i in range(5)]
    async with open_events(client, "/v1/streams/s/events", ids[2], last_id="0") as events:
        assert entry_ids(await events.take(2)) == ids[3:]
        await events.none_within(0.3)


async def test_resume_after_each_server_drop_loses_and_repeats_nothing(
    client: httpx.AsyncClient,
) -> None:
    """Entries appended while nobody is connected, and while connected, arrive exactly once
    across reconnects with the last event ID, as EventSource does it."""
    appended: list[str] = []
    received: list[str] = []
    last: str | None = None
    for round_ in range(3):
        appended += [await add(client, "s", "r", str(round_)) for _ in range(3)]
        async with open_events(client, "/v1/streams/s/events", last, last_id="0") as events:
            received += entry_ids(await events.take(3))
            appended.append(await add(client, "s", "live", str(round_)))
            received += entry_ids(await events.take(1))
            last = events.last_event_id
    assert received == appended


async def test_heartbeat_comments_on_an_idle_stream(client: httpx.AsyncClient) -> None:
    async with open_events(client, "/v1/streams/s/events") as events:
        await events.none_within(HEARTBEAT_MS * 3.5 / 1000)
        beats = [t for t, text in events.comments if text == "ping"]
        assert len(beats) >= 3, events.comments
        gaps = [b - a for a, b in itertools.pairwise(beats)]
        assert all(g < HEARTBEAT_MS * 2 / 1000 for g in gaps), gaps


async def test_gap_event_when_the_resume_point_was_trimmed(client: httpx.AsyncClient) -> None:
    """A resume point older than the first entry left says so before going on."""
    ids = [await add(client, "s", "n", str(i)) for i in range(6)]
    await command(client, "XTRIM", "s", "MAXLEN", "2")
    async with open_events(client, "/v1/streams/s/events", ids[1]) as events:
        gap = await events.next()
        assert gap.event == "gap" and gap.id is None
        assert gap.json() == {"after": ids[1], "first_id": ids[4]}
        assert entry_ids(await events.take(2)) == ids[4:]


async def test_no_gap_when_nothing_was_removed(client: httpx.AsyncClient) -> None:
    ids = [await add(client, "s", "n", str(i)) for i in range(3)]
    async with open_events(client, "/v1/streams/s/events", last_id="0") as events:
        assert [e.event for e in await events.take(3)] == ["entry"] * 3
    await command(client, "XTRIM", "s", "MAXLEN", "1")
    # Resuming from the last entry (still there) is no gap either.
    async with open_events(client, "/v1/streams/s/events", ids[2]) as events:
        await events.none_within(0.3)


async def test_live_gap_when_a_burst_is_trimmed_before_it_is_read(
    client: httpx.AsyncClient,
) -> None:
    """A transaction that appends and trims removes entries before the tail can read them:
    subscribers get a gap, then what is left. (A transaction, not a pipeline: in front of a
    Redis Cluster a pipeline runs command by command, and the tail may read between them.)"""
    async with open_events(client, "/v1/streams/s/events") as events:
        first = await add(client, "s", "n", "first")
        assert entry_ids(await events.take(1)) == [first]
        burst = [["XADD", "s", "*", "n", str(i)] for i in range(5)]
        r = await client.post("/multi-exec", json=[*burst, ["XTRIM", "s", "MAXLEN", "2"]])
        ids = [x["result"] for x in r.json()[:5]]
        gap = await events.next()
        assert gap.event == "gap"
        assert gap.json() == {"after": first, "first_id": ids[3]}
        assert entry_ids(await events.take(2)) == ids[3:]


async def test_many_subscribers_get_the_same_events_in_order(client: httpx.AsyncClient) -> None:
    """Twenty subscribers opened at once, then twenty appends: each gets all of them. A
    stream's start (``$``) is fixed before its response begins, so the appends wait until
    every response has begun, however long twenty connections take on a loaded box."""
    opened: list[None] = []
    async with asyncio.TaskGroup() as tg:
        readers = [tg.create_task(_collect(client, 20, opened)) for _ in range(20)]
        await until_async(lambda: len(opened) == 20, what="20 event streams open")
        ids = [await add(client, "s", "n", str(i)) for i in range(20)]
    assert all(r.result() == ids for r in readers)


async def _collect(client: httpx.AsyncClient, n: int, opened: list[None]) -> list[str]:
    async with open_events(client, "/v1/streams/s/events") as events:
        opened.append(None)
        return entry_ids(await events.take(n))


async def test_history_longer_than_one_read_batch(client: httpx.AsyncClient) -> None:
    """Replay in several batches (512 entries each) with entries appended meanwhile."""
    r = await client.post("/pipeline", json=[["XADD", "s", "*", "n", str(i)] for i in range(1200)])
    ids = [x["result"] for x in r.json()]
    async with open_events(client, "/v1/streams/s/events", last_id="0") as events:
        got = entry_ids(await events.take(600))
        ids.append(await add(client, "s", "n", "late"))
        got += entry_ids(await events.take(601))
    assert got == ids


async def test_entries_appear_within_milliseconds(client: httpx.AsyncClient) -> None:
    async with open_events(client, "/v1/streams/s/events") as events:
        start = time.monotonic()
        await add(client, "s", "n", "1")
        await events.next()
        assert time.monotonic() - start < 1.0
