"""Long polls: XREAD BLOCK on entries and /v1/read, XREADGROUP BLOCK on reads.

Each waits on the server (no polling): the request is answered the moment an entry arrives,
with an empty list at timeout, on every target, and a client that goes away stops waiting at
once (the in-thread server's store shows its waiter gone).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import httpx
import jwt
import pytest

from app.engine.store import Store
from tests.api.inproc import serve
from tests.api.rest.conftest import Local, add
from tests.conftest import Server
from tests.support.waiting import blocked_per_read, parked_async

WAKE_LIMIT = 1.0  # seconds: "at once" on a loaded CI box, far below the timeouts used


@dataclass
class Live:
    url: str
    client: httpx.Client
    server: Server


@pytest.fixture
def live(server: Server, api: httpx.Client) -> Live:
    """The session's server on each target (BLOCK there: Redis's, on a pooled connection),
    its keyspace flushed."""
    return Live(server.url, api, server)


async def _when_parked(
    live: Live, client: httpx.AsyncClient, path: str, n: int = 1, **kw: object
) -> float:
    """POST ``path`` once ``n`` readers are blocked at the server; returns when it was sent."""
    await parked_async(live.server, n)
    sent = time.monotonic()
    await client.post(path, **kw)  # type: ignore[arg-type]
    return sent


async def test_entries_long_poll_wakes_on_append(live: Live) -> None:
    add(live.client, "s", ("a", "0"), id="1-0")
    async with httpx.AsyncClient(base_url=live.url, timeout=30) as client:
        poll = client.get("/v1/streams/s/entries", params={"after": "$", "block_ms": 10_000})
        entry = {"id": "2-0", "fields": {"a": "1"}}
        r, sent = await asyncio.gather(
            poll, _when_parked(live, client, "/v1/streams/s/entries", json=entry)
        )
    assert time.monotonic() - sent < WAKE_LIMIT
    assert r.json() == {"entries": [{"id": "2-0", "fields": {"a": "1"}}], "next": "2-0"}


def test_long_poll_timeout_is_200_with_no_entries(live: Live) -> None:
    add(live.client, "s", ("a", "0"), id="1-0")
    started = time.monotonic()
    r = live.client.get("/v1/streams/s/entries", params={"after": "1-0", "block_ms": 200})
    assert r.status_code == 200
    assert r.json() == {"entries": [], "next": None}
    assert 0.2 <= time.monotonic() - started < 0.2 + WAKE_LIMIT


def test_after_without_block_answers_at_once(live: Live) -> None:
    for i in range(1, 4):
        add(live.client, "s", ("a", "1"), id=f"{i}-0")
    r = live.client.get("/v1/streams/s/entries", params={"after": "1-0", "count": 1})
    assert r.json() == {"entries": [{"id": "2-0", "fields": {"a": "1"}}], "next": "2-0"}
    # A stream that does not exist yet is no error for XREAD: nothing to read.
    r = live.client.get("/v1/streams/nope/entries", params={"after": "0"})
    assert r.json() == {"entries": [], "next": None}
    r = live.client.get("/v1/streams/s/entries", params={"after": ">"})
    assert r.status_code == 400
    r = live.client.get("/v1/streams/s/entries", params={"after": "0", "order": "desc"})
    assert r.status_code == 400


async def test_long_poll_waits_for_a_stream_to_be_created(live: Live) -> None:
    async with httpx.AsyncClient(base_url=live.url, timeout=30) as client:
        poll = client.get("/v1/streams/new/entries", params={"after": "$", "block_ms": 10_000})
        r, _ = await asyncio.gather(
            poll,
            _when_parked(
                live, client, "/v1/streams/new/entries", json={"id": "1-0", "fields": {"a": "1"}}
            ),
        )
    assert [e["id"] for e in r.json()["entries"]] == ["1-0"]


async def test_several_streams(live: Live) -> None:
    add(live.client, "a", ("x", "1"), id="1-0")
    add(live.client, "b", ("x", "1"), id="1-0")
    r = live.client.get("/v1/read", params=[("stream", "a"), ("stream", "b"), ("after", "0")])
    assert [(s["stream"], len(s["entries"])) for s in r.json()["streams"]] == [("a", 1), ("b", 1)]
    params = [("stream", "a"), ("stream", "b"), ("after", "$"), ("after", "0")]
    assert [s["stream"] for s in live.client.get("/v1/read", params=params).json()["streams"]] == [
        "b"
    ]
    async with httpx.AsyncClient(base_url=live.url, timeout=30) as client:
        params = [("stream", "a"), ("stream", "b"), ("after", "$"), ("block_ms", "10000")]
        poll = client.get("/v1/read", params=params)
        r, _ = await asyncio.gather(
            poll,
            _when_parked(
                live,
                client,
                "/v1/streams/b/entries",
                blocked_per_read(live.server, ["a", "b"]),  # a cluster splits it by slot
                json={"id": "2-0", "fields": {"y": "2"}},
            ),
        )
    assert r.json() == {
        "streams": [{"stream": "b", "entries": [{"id": "2-0", "fields": {"y": "2"}}]}]
    }
    r = live.client.get("/v1/read", params=[("stream", "a"), ("after", "$"), ("block_ms", "100")])
    assert r.json() == {"streams": []}
    bad = [("stream", "a"), ("stream", "b"), ("after", "0"), ("after", "0"), ("after", "0")]
    assert live.client.get("/v1/read", params=bad).status_code == 400
    assert live.client.get("/v1/read", params={"stream": "a"}).status_code == 400


async def test_each_new_entry_goes_to_exactly_one_waiting_consumer(live: Live) -> None:
    live.client.post("/v1/streams/s/groups", json={"name": "g", "id": "$", "mkstream": True})
    path = "/v1/streams/s/groups/g/consumers/{}/reads"
    async with httpx.AsyncClient(base_url=live.url, timeout=30) as client:
        waiters = [
            client.post(path.format(f"c{i}"), json={"block_ms": 2000, "count": 10})
            for i in range(3)
        ]

        async def append() -> None:
            await parked_async(live.server, 3)
            await client.post("/v1/streams/s/entries", json={"id": "1-0", "fields": {"a": "1"}})

        *replies, _ = await asyncio.gather(*waiters, append())
    got = [r.json()["entries"] for r in replies]
    assert sorted(len(x) for x in got) == [0, 0, 1]
    winner = next(i for i, x in enumerate(got) if x)
    assert got[winner] == [{"id": "1-0", "fields": {"a": "1"}}]
    pending = live.client.get("/v1/streams/s/groups/g/pending").json()
    assert pending["consumers"] == [{"name": f"c{winner}", "pending": 1}]


async def test_group_read_gets_nogroup_when_the_group_is_destroyed(live: Live) -> None:
    live.client.post("/v1/streams/s/groups", json={"name": "g", "id": "$", "mkstream": True})
    async with httpx.AsyncClient(base_url=live.url, timeout=30) as client:
        poll = client.post("/v1/streams/s/groups/g/consumers/a/reads", json={"block_ms": 10_000})

        async def destroy() -> None:
            await parked_async(live.server, 1)
            await client.delete("/v1/streams/s/groups/g")

        r, _ = await asyncio.gather(poll, destroy())
    assert r.status_code == 404
    assert r.json()["code"] == "NOGROUP"


@pytest.mark.parametrize(
    ("method", "path", "kw"),
    [
        ("GET", "/v1/streams/s/entries", {"params": {"after": "$", "block_ms": 0}}),
        ("GET", "/v1/read", {"params": {"stream": "s", "after": "$", "block_ms": 0}}),
        ("POST", "/v1/streams/s/groups/g/consumers/a/reads", {"json": {"block_ms": 0}}),
    ],
)
async def test_a_client_that_goes_away_stops_waiting(
    local: Local, method: str, path: str, kw: dict[str, object]
) -> None:
    local.client.post("/v1/streams/s/groups", json={"name": "g", "id": "$", "mkstream": True})
    async with httpx.AsyncClient(base_url=local.url, timeout=30) as client:
        task = asyncio.ensure_future(client.request(method, path, **kw))  # type: ignore[arg-type]
        await parked_async(local.store, 1, what="the request waiting")
        task.cancel()  # closes the connection
        with pytest.raises(asyncio.CancelledError):
            await task
    await parked_async(local.store, 0, WAKE_LIMIT, "the waiter gone with its client")
    # Nothing was delivered to the vanished consumer.
    add(local.client, "s", ("a", "1"), id="1-0")
    assert local.client.get("/v1/streams/s/groups/g/pending").json()["count"] == 0


CAP_SECRET = "an application secret of enough length"
CAP_TEXT = "ERR too many event streams and blocking reads for this credential"


async def test_long_polls_and_blocking_reads_count_toward_the_per_key_cap() -> None:
    """A REST long poll and XREAD / XREADGROUP BLOCK hold a connection as an event stream
    does, so they share its cap per credential (``sse_max_connections_per_key``): past it, the
    next one of any kind is refused at once (429, Retry-After), until one ends."""
    store = Store()
    grant = {"read": ["s"], "consume": ["s"]}
    token = jwt.encode({"sub": "w", "exp": int(time.time()) + 600, "xstreams": grant}, CAP_SECRET)
    who = {"Authorization": f"Bearer {token}"}
    admin = {"Authorization": "Bearer admin"}
    settings = {"token": "admin", "jwt_secret": CAP_SECRET, "sse_max_connections_per_key": 2}
    async with serve(store, **settings) as c:
        await c.post("/", json=["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"], headers=admin)
        wait = {"after": "$", "block_ms": 30_000}
        held = [
            asyncio.create_task(c.get("/v1/streams/s/entries", params=wait, headers=who)),
            asyncio.create_task(
                c.post("/", json=["XREAD", "BLOCK", "30000", "STREAMS", "s", "$"], headers=who)
            ),
        ]
        await parked_async(store, 2)
        # (Each would wait 1 s if it were let through.)
        refused = [
            await c.get("/v1/read", params={"stream": "s", "after": "$", "block_ms": 1000},
                        headers=who),
            await c.post("/v1/streams/s/groups/g/consumers/c/reads",
                         json={"id": ">", "block_ms": 1000}, headers=who),
            await c.post("/", headers=who,
                         json=["XREADGROUP", "GROUP", "g", "c", "BLOCK", "1000", "STREAMS", "s",
                               ">"]),
            await c.post("/pipeline", headers=who,
                         json=[["XREAD", "BLOCK", "1000", "STREAMS", "s", "$"]]),
        ]  # fmt: skip
        for r in refused:
            assert r.status_code == 429, (r.request.url, r.text)
            assert r.headers["retry-after"] == "1"
            body = r.json()
            text = body.get("detail") or body["error"]
            assert text.startswith(CAP_TEXT) and "sse_max_connections_per_key" in text
        assert store.keyspace.blocked.count() == 2  # none of them parked, nothing consumed
        xinfo = await c.post("/", json=["XINFO", "CONSUMERS", "s", "g"], headers=admin)
        assert xinfo.json() == {"result": []}
        # Reads that do not wait still pass; the admin token is bound by the global caps only.
        now = await c.get("/v1/streams/s/entries", params={"after": "0"}, headers=who)
        assert now.status_code == 200
        held.append(
            asyncio.create_task(
                c.post("/", json=["XREAD", "BLOCK", "30000", "STREAMS", "s", "$"], headers=admin)
            )
        )
        await parked_async(store, 3)
        # An append ends every poll; then the credential may wait again.
        await c.post("/", json=["XADD", "s", "1-1", "f", "v"], headers=admin)
        assert [r.status_code for r in await asyncio.gather(*held)] == [200, 200, 200]
        again = await c.get(
            "/v1/streams/s/entries", params={"after": "$", "block_ms": 1}, headers=who
        )
        assert again.status_code == 200
        r = await c.post("/", json=["XREAD", "BLOCK", "1", "STREAMS", "s", "$"], headers=who)
        assert r.json() == {"result": None}
