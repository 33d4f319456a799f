"""REST and SSE on all three targets: one consumer-group life cycle, and a live tail.

append → range → create group → read as a consumer → ack → pending → claim, then an event
stream that replays from an ID and follows new entries: the same answers whichever backend
serves.
"""

from __future__ import annotations

import httpx

from tests.api.sse.support import entry_ids, open_events
from tests.conftest import Commands
from tests.support.targets import Frontend

S = "orders"
G = f"/v1/streams/{S}/groups/g"


def _add(api: httpx.Client, *values: str) -> list[str]:
    body = [{"fields": {"n": v}} for v in values]
    r = api.post(f"/v1/streams/{S}/entries", json={"entries": body} if len(body) > 1 else body[0])
    assert r.status_code == 201, r.text
    ids: list[str] = r.json()["ids"]
    return ids


def test_group_life_cycle(api: httpx.Client) -> None:
    ids = _add(api, "1") + _add(api, "2", "3")
    assert len(ids) == 3
    page = api.get(f"/v1/streams/{S}/entries").json()
    assert [e["id"] for e in page["entries"]] == ids
    assert page["entries"][0]["fields"] == {"n": "1"}
    assert api.get(f"/v1/streams/{S}").json()["length"] == 3

    r = api.post(f"/v1/streams/{S}/groups", json={"name": "g", "id": "0"})
    assert r.status_code == 201, r.text
    r = api.post(f"{G}/consumers/alice/reads", json={"count": 2})
    assert [e["id"] for e in r.json()["entries"]] == ids[:2]
    r = api.post(f"{G}/consumers/bob/reads", json={})
    assert [e["id"] for e in r.json()["entries"]] == ids[2:]

    assert api.post(f"{G}/acks", json={"ids": [ids[0]]}).json() == {"acknowledged": 1}
    summary = api.get(f"{G}/pending").json()
    assert summary["count"] == 2
    assert summary["consumers"] == [{"name": "alice", "pending": 1}, {"name": "bob", "pending": 1}]

    body = {"consumer": "carol", "min_idle_ms": 0, "ids": [ids[1]]}
    claimed = api.post(f"{G}/claims", json=body).json()
    assert claimed["ids"] == [ids[1]] and claimed["entries"][0]["fields"] == {"n": "2"}
    rows = api.get(f"{G}/pending", params={"count": 10}).json()["entries"]
    assert [(r["id"], r["consumer"]) for r in rows] == [(ids[1], "carol"), (ids[2], "bob")]

    missing = api.post("/v1/streams/nope/groups/g/acks", json={"ids": ["1-0"]})
    assert missing.status_code == 404 and missing.json()["code"] == "NOGROUP"


async def test_event_stream_replays_then_follows(front: Frontend, tx: Commands) -> None:
    first = [tx("XADD", S, "*", "n", str(i)) for i in range(3)]
    async with (
        httpx.AsyncClient(base_url=front.url, timeout=15) as client,
        open_events(client, f"/v1/streams/{S}/events", last_id="0") as events,
    ):
        assert entry_ids(await events.take(3)) == first
        later = [tx("XADD", S, "*", "n", str(i)) for i in range(3, 5)]
        got = await events.take(2)
        assert entry_ids(got) == later
        assert got[0].id == later[0]  # the event's id: resume with Last-Event-ID
