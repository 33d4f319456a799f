"""Group delivery with `claim_idle_ms` (XREADGROUP ... CLAIM, Redis 8.4): idle pending entries
of the group, and those released by XNACK, come before new ones, their events saying how
long they were idle and how often they were delivered; without it, events are as before.

On the Redis targets the claim tests are expected to fail until the Redis backend serves
CLAIM and XNACK (``pending_on_redis``)."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.api.sse.support import add, command, entry_ids, open_events
from tests.support.waiting import until_async


def path(consumer: str) -> str:
    return f"/v1/streams/s/groups/g/consumers/{consumer}/events"


async def given_to_a(client: httpx.AsyncClient, n: int) -> list[str]:
    """`n` entries in `s`, delivered to consumer `a` of `g` (pending, never acknowledged)."""
    await command(client, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    ids = [await add(client, "s", "n", str(i)) for i in range(n)]
    await command(client, "XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">")
    return ids


async def owners(client: httpx.AsyncClient) -> dict[str, str]:
    rows = await command(client, "XPENDING", "s", "g", "-", "+", "100")
    return {row[0]: row[1] for row in rows}


async def idle_past(client: httpx.AsyncClient, ms: int) -> None:
    """Wait until every pending entry of `g` has been idle more than `ms` (XPENDING's clock)."""

    async def idle() -> bool:
        rows = await command(client, "XPENDING", "s", "g", "-", "+", "100")
        return bool(rows) and all(row[2] > ms for row in rows)

    await until_async(idle, what=f"pending entries idle past {ms} ms")


async def test_idle_pending_entries_come_first_with_their_counts(
    client: httpx.AsyncClient,
) -> None:
    old = await given_to_a(client, 2)
    await idle_past(client, 100)
    async with open_events(client, path("b"), claim_idle_ms=100) as events:
        got = await events.take(2)
        assert [e.id for e in got] == old
        for e in got:
            data = e.json()
            assert data["fields"] and data["delivery_count"] == 1 and data["idle_ms"] >= 100
        new = await add(client, "s", "n", "new")
        (fresh,) = await events.take(1)
        assert fresh.id == new
        assert fresh.json() == {
            "id": new,
            "fields": {"n": "new"},
            "idle_ms": 0,
            "delivery_count": 0,
        }
    assert await owners(client) == {old[0]: "b", old[1]: "b", new: "b"}


async def test_an_entry_turning_idle_is_served_without_a_new_write(
    client: httpx.AsyncClient,
) -> None:
    """The blocked claim read is woken by time, not only by XADD."""
    (old,) = await given_to_a(client, 1)
    async with open_events(client, path("b"), claim_idle_ms=600) as events:
        started = time.monotonic()
        (e,) = await events.take(1, timeout=4)
        assert e.id == old and e.json()["delivery_count"] == 1
        assert time.monotonic() - started < 3.5  # well before the 5 s blocking read ends


async def test_entries_released_by_xnack_come_first(client: httpx.AsyncClient) -> None:
    old = await given_to_a(client, 3)
    released = await client.post(
        "/v1/streams/s/groups/g/nacks", json={"ids": [old[2]], "mode": "FAIL"}
    )
    assert released.json() == {"released": 1}
    # An hour of idle time: only the released entry qualifies, and at once.
    async with open_events(client, path("b"), claim_idle_ms=3_600_000) as events:
        (e,) = await events.take(1)
        assert e.json() == {
            "id": old[2],
            "fields": {"n": "2"},
            "idle_ms": -1,
            "delivery_count": 1,
        }
        await events.none_within(0.3)
    assert (await owners(client))[old[2]] == "b"


async def test_without_claim_events_are_as_before(client: httpx.AsyncClient) -> None:
    old = await given_to_a(client, 1)
    await idle_past(client, 50)
    async with open_events(client, path("b")) as events:
        new = await add(client, "s", "n", "new")
        (e,) = await events.take(1)
        assert e.json() == {"id": new, "fields": {"n": "new"}}  # a's idle entry stays a's
    assert (await owners(client))[old[0]] == "a"


async def test_history_comes_first_and_keeps_its_format(client: httpx.AsyncClient) -> None:
    """The consumer's own history is read as before (no CLAIM there), then the claim reads."""
    old = await given_to_a(client, 1)
    async with open_events(client, path("a"), claim_idle_ms=3_600_000) as events:
        (e,) = await events.take(1)
        assert e.json() == {"id": old[0], "fields": {"n": "0"}}
        assert entry_ids([e]) == old


@pytest.mark.parametrize("value", ["-1", "x", str(2**63)])
async def test_a_bad_claim_idle_ms_is_a_400(client: httpx.AsyncClient, value: str) -> None:
    await command(client, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    r = await client.get(path("b"), params={"claim_idle_ms": value})
    assert r.status_code == 400, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert "claim_idle_ms" in r.json()["error"]
