"""Several streams in one connection: one event ID holding every stream's position."""

from __future__ import annotations

import httpx

from tests.api.sse.support import add, open_events
from tests.support.targets import CLUSTER, Target


async def test_entries_of_every_stream_with_their_stream_named(
    client: httpx.AsyncClient, target: Target
) -> None:
    async with open_events(client, "/v1/events", stream=["a", "b"]) as events:
        a1 = await add(client, "a", "n", "1")
        b1 = await add(client, "b", "n", "2")
        first, second = await events.take(2)
    if target.name == CLUSTER and first.json()["stream"] == "b":
        # a and b live on different masters, each followed by a reader of its own: nothing
        # orders entries of two shards, and the event IDs say which arrived first.
        assert second.json() == {"stream": "a", "id": a1, "fields": {"n": "1"}}
        assert first.json() == {"stream": "b", "id": b1, "fields": {"n": "2"}}
        assert first.id == f"a=0-0&b={b1}"
        assert second.id == f"a={a1}&b={b1}"
        return
    assert first.json() == {"stream": "a", "id": a1, "fields": {"n": "1"}}
    assert second.json() == {"stream": "b", "id": b1, "fields": {"n": "2"}}
    assert first.id == f"a={a1}&b=0-0"
    assert second.id == f"a={a1}&b={b1}"


async def test_last_event_id_resumes_every_stream(client: httpx.AsyncClient) -> None:
    async with open_events(client, "/v1/events", stream=["a", "b"]) as events:
        await add(client, "a", "n", "1")
        await add(client, "b", "n", "1")
        await events.take(2)
        last = events.last_event_id
    missed = [("a", await add(client, "a", "n", "2")), ("b", await add(client, "b", "n", "2"))]
    missed.append(("a", await add(client, "a", "n", "3")))
    async with open_events(client, "/v1/events", last, stream=["a", "b"]) as events:
        got = [(e.json()["stream"], e.json()["id"]) for e in await events.take(3)]
        await events.none_within(0.3)
    # Replay goes stream by stream; each stream's own order is kept.
    assert sorted(got) == sorted(missed)
    assert [x for x in got if x[0] == "a"] == [x for x in missed if x[0] == "a"]


async def test_names_with_separators_survive_the_event_id(client: httpx.AsyncClient) -> None:
    names = ["x=1&y", "sp ace", "ü"]
    async with open_events(client, "/v1/events", stream=names) as events:
        sid = await add(client, names[0], "n", "1")
        event = await events.next()
        assert event.json()["stream"] == names[0]
        last = events.last_event_id
    later = await add(client, names[0], "n", "2")
    async with open_events(client, "/v1/events", last, stream=names, last_id="0") as events:
        assert [e.json()["id"] for e in await events.take(1)] == [later]
    assert sid < later


async def test_a_stream_missing_from_last_event_id_starts_at_last_id(
    client: httpx.AsyncClient,
) -> None:
    a = await add(client, "a", "n", "1")
    b = await add(client, "b", "n", "1")
    async with open_events(client, "/v1/events", f"a={a}", stream=["a", "b"], last_id="0") as ev:
        assert [e.json()["id"] for e in await ev.take(1)] == [b]
        await ev.none_within(0.3)


async def test_malformed_last_event_id_is_a_400_problem(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/events", params={"stream": "a"}, headers={"Last-Event-ID": "junk"})
    assert r.status_code == 400
    assert r.headers["content-type"] == "application/problem+json"
