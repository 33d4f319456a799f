"""Entries and names holding bytes that are not UTF-8, over SSE: delivered as ``\\udcNN``.

Such an entry once ended every subscriber of its stream (and each reconnect at once), and a
group subscriber recorded it pending without ever sending it. Here it is an event like any
other, on a tail, a multi-stream tail and a group, and resuming after it works.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.api.sse.support import Event, command, open_events

STREAM = "s%FF"  # the stream b"s\xff", as a path segment
VALUE = "%FF%00%C3%A9"  # b"\xff\x00\xc3\xa9": a stray byte, a NUL, é
FIELDS = {"f\udcfe": "\udcff\x00é"}  # what FIELD=f%FE, VALUE read as in the representation


async def add_raw(client: httpx.AsyncClient, stream: str = STREAM) -> str:
    """XADD path style: field f%FE, value VALUE (bytes that are not UTF-8)."""
    r = await client.get(f"/xadd/{stream}/*/f%FE/{VALUE}")
    assert r.status_code == 200, r.text
    result: str = r.json()["result"]
    return result


async def add_plain(client: httpx.AsyncClient, stream: str = STREAM) -> str:
    r = await client.get(f"/xadd/{stream}/*/n/1")
    assert r.status_code == 200, r.text
    result: str = r.json()["result"]
    return result


def data(event: Event) -> Any:
    """The event's JSON, read by a JSON library that takes ``\\udcNN`` (as browsers' does)."""
    assert event.event == "entry", event
    return json.loads(event.data)


async def test_tail_delivers_such_an_entry_and_goes_on(client: httpx.AsyncClient) -> None:
    async with open_events(client, f"/v1/streams/{STREAM}/events") as events:
        await events.none_within(0.2)  # subscribed before the entries are added
        raw, plain = await add_raw(client), await add_plain(client)
        first, second = await events.take(2)
        assert data(first) == {"id": raw, "fields": FIELDS}
        assert first.id == raw
        assert '"\\udcff\\u0000\xe9"' in first.data  # é stays é, the stray byte is escaped
        assert data(second)["id"] == plain
        last = await add_plain(client)
        assert data(await events.next())["id"] == last


async def test_pairs_form_and_replay_from_an_id(client: httpx.AsyncClient) -> None:
    raw = await add_raw(client)
    path = f"/v1/streams/{STREAM}/events?last_id=0&fields=pairs"
    async with open_events(client, path) as events:
        assert data(await events.next()) == {"id": raw, "fields": [["f\udcfe", "\udcff\x00é"]]}


async def test_reconnect_after_such_an_entry_resumes(client: httpx.AsyncClient) -> None:
    before = await add_plain(client)
    raw = await add_raw(client)
    after = await add_plain(client)
    path = f"/v1/streams/{STREAM}/events?last_id=0"
    async with open_events(client, path, last_event_id=before) as events:
        got = await events.take(2)
        assert [data(e)["id"] for e in got] == [raw, after]
    async with open_events(client, path, last_event_id=raw) as events:
        assert data(await events.next())["id"] == after
        newer = await add_raw(client)
        assert data(await events.next()) == {"id": newer, "fields": FIELDS}


async def test_multi_stream_names_and_resume(client: httpx.AsyncClient) -> None:
    raw = await add_raw(client)
    other = await add_raw(client, "t%FE")
    path = f"/v1/events?stream={STREAM}&stream=t%FE&last_id=0"
    async with open_events(client, path) as events:
        got = await events.take(2)
        assert [(data(e)["stream"], data(e)["id"]) for e in got] == [
            ("s\udcff", raw),
            ("t\udcfe", other),
        ]
        assert got[1].id == f"s%FF={raw}&t%FE={other}"  # ASCII, names as %NN
        assert data(got[0])["fields"] == FIELDS
    newer = await add_raw(client, "t%FE")
    async with open_events(client, path, last_event_id=got[1].id) as events:
        assert (data(await events.next())["stream"], events.last_event_id) == (
            "t\udcfe",
            f"s%FF={raw}&t%FE={newer}",
        )


async def test_group_delivers_such_an_entry_and_records_it_pending(
    client: httpx.AsyncClient,
) -> None:
    for path in (f"create/{STREAM}/g%FE/$/mkstream", f"createconsumer/{STREAM}/g%FE/c%FD"):
        assert (await client.get("/xgroup/" + path)).status_code == 200
    path = f"/v1/streams/{STREAM}/groups/g%FE/consumers/c%FD/events"
    async with open_events(client, path) as events:
        await events.none_within(0.2)
        raw, plain = await add_raw(client), await add_plain(client)
        first, second = await events.take(2)
        assert data(first) == {"id": raw, "fields": FIELDS}
        assert data(second)["id"] == plain
    pending = await client.get(f"/v1/streams/{STREAM}/groups/g%FE/pending?count=10")
    assert [(e["id"], e["consumer"]) for e in pending.json()["entries"]] == [
        (raw, "c\udcfd"),
        (plain, "c\udcfd"),
    ]
    # Reconnecting, the history (pending entries) comes first: the entry again, not an end.
    async with open_events(client, path) as events:
        assert [data(e)["id"] for e in await events.take(2)] == [raw, plain]
    async with open_events(client, path, last_event_id=raw) as events:
        assert data(await events.next())["id"] == plain
    await command(client, "XLEN", "s")  # the server is still fine
