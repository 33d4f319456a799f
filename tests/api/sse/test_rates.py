"""Entries read per credential over event streams (app/api/meter.py): a consumer-group stream
past its budget pauses until the rate allows and sends every entry, rather than closing;
what it sent is spent, so the credential's next read is refused."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.api.sse.conftest import SSE_ENV, flushed_client
from tests.api.sse.support import add, command, entry_ids, open_events
from tests.conftest import Server
from tests.support.polling import until_async
from tests.support.targets import Target


@pytest.fixture(scope="module")
def rated_server(target: Target, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # An open service: its one caller is held to rate_entries_admin.
    env = {**SSE_ENV, "XSTREAMS_RATE_ENTRIES_ADMIN": "2/s:2"}  # 500 ms an entry, 2 at once
    srv = target.serve(tmp_path_factory.mktemp("rated"), env=env)
    yield srv
    srv.stop()


@pytest.fixture
async def rated(rated_server: Server) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the rated server once its budget is whole (a test before may owe)."""
    c = await flushed_client(rated_server.url)

    async def whole() -> bool:
        (entries,) = (await c.get("/v1/whoami")).json()["limits"]
        return bool(entries["remaining"] == 2)

    await until_async(whole, what="the entries budget whole again")
    yield c
    await c.aclose()


async def test_a_group_stream_past_its_budget_pauses_and_drops_nothing(
    rated: httpx.AsyncClient,
) -> None:
    await command(rated, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    first = [await add(rated, "s", "n", str(i)) for i in range(6)]
    async with open_events(rated, "/v1/streams/s/groups/g/consumers/c/events") as events:
        assert entry_ids(await events.take(6)) == first  # served whole: 4 owed past the burst
        later = [await add(rated, "s", "n", str(i)) for i in range(6, 8)]
        # The stream waits out the debt (about 2 s) instead of closing, then sends them.
        got = await events.take(2)
        assert entry_ids(got) == later
    # What it sent was spent: a read now is refused until the rate has repaid it.
    refused = await rated.post("/", json=["XRANGE", "s", "-", "+"])
    assert refused.status_code == 429, refused.text
    assert refused.json()["error"].startswith("ERR too many entries read")
    assert refused.headers["ratelimit-policy"] == '"entries";q=2;w=1'


async def test_a_live_tail_past_its_budget_pauses_and_drops_nothing(
    rated: httpx.AsyncClient,
) -> None:
    await command(rated, "XADD", "t", "*", "n", "start")
    async with open_events(rated, "/v1/streams/t/events") as events:
        added = [await add(rated, "t", "n", str(i)) for i in range(6)]
        # Two fit the burst; the tail then goes behind and replays as the rate allows.
        assert entry_ids(await events.take(6)) == added
    refused = await rated.post("/", json=["XRANGE", "t", "-", "+"])
    assert refused.status_code == 429, refused.text
