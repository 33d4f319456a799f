"""Names holding ``/`` (and ``%``, spaces) on the SSE paths, on the three targets: a tail and
a consumer's delivery name the stream, group and consumer with ``%2F`` (app/api/raw_paths.py),
and a tail of several streams resumes them by an event ID that quotes their names."""

from __future__ import annotations

from urllib.parse import quote

import httpx
import pytest

from tests.api.sse.support import add, command, entry_ids, open_events

NAMES = ["v1/stream/orders", "50% off/%2F a b"]


def seg(name: str) -> str:
    return quote(name, safe="")


@pytest.mark.parametrize("name", NAMES)
async def test_a_tail_names_the_stream_with_escaped_slashes(
    client: httpx.AsyncClient, name: str
) -> None:
    old = await add(client, name, "n", "0")
    async with open_events(client, f"/v1/streams/{seg(name)}/events", last_id="0") as events:
        new = await add(client, name, "n", "1")
        assert entry_ids(await events.take(2)) == [old, new]
    assert await command(client, "KEYS", "*") == [name]


@pytest.mark.parametrize("name", NAMES)
async def test_group_delivery_names_stream_group_and_consumer_with_escaped_slashes(
    client: httpx.AsyncClient, name: str
) -> None:
    group, consumer = "billing/eu", "alice/1 %"
    await command(client, "XGROUP", "CREATE", name, group, "$", "MKSTREAM")
    path = f"/v1/streams/{seg(name)}/groups/{seg(group)}/consumers/{seg(consumer)}/events"
    async with open_events(client, path) as events:
        sid = await add(client, name, "n", "1")
        assert entry_ids(await events.take(1)) == [sid]
    rows = await command(client, "XPENDING", name, group, "-", "+", "10")
    assert [(r[0], r[1]) for r in rows] == [(sid, consumer)]
    acked = await client.post(f"/v1/streams/{seg(name)}/groups/{seg(group)}/acks",
                              json={"ids": [sid]})  # fmt: skip
    assert acked.json() == {"acknowledged": 1}


async def test_a_missing_group_of_a_stream_holding_a_slash_is_404(
    client: httpx.AsyncClient,
) -> None:
    await add(client, "v1/stream/orders", "n", "1")
    r = await client.get("/v1/streams/v1%2Fstream%2Forders/groups/nope/consumers/c/events")
    assert r.status_code == 404, r.text
    assert r.json()["code"] == "NOGROUP"


async def test_a_literal_slash_in_a_tail_path_is_no_route(client: httpx.AsyncClient) -> None:
    await add(client, "v1", "n", "1")
    r = await client.get("/v1/streams/v1/stream/orders/events")
    assert r.status_code == 404, r.text
    assert r.json()["error"] == "ERR not found"


async def test_several_streams_resume_by_an_id_that_quotes_their_names(
    client: httpx.AsyncClient,
) -> None:
    a, b = NAMES
    params = {"stream": [a, b], "last_id": "0"}
    first = [await add(client, a, "n", "1"), await add(client, b, "n", "1")]
    async with open_events(client, "/v1/events", **params) as events:
        got = await events.take(2)
        assert sorted(entry_ids(got)) == sorted(first)
        assert {e.json()["stream"] for e in got} == {a, b}
        resume = got[-1].id
    assert resume is not None and seg(a) in resume and seg(b) in resume
    later = await add(client, a, "n", "2")
    async with open_events(client, "/v1/events", resume, **params) as events:
        assert entry_ids(await events.take(1)) == [later]
