"""SSE in front of Redis: tails, resume, gaps and group delivery with ``RedisBackend``.

The app's backend is redis-server (the tests' own database index), and every write comes
from another Redis client, as it would from another front-end: a tail's blocked XREAD returns
because Redis served it, never because a write in this process signalled it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.api.sse.tail import READ_BATCH, Tails
from app.engine.commands.reads import ReadRequest
from app.engine.replies import StreamRead
from app.engine.store import Store
from app.main import create_app
from app.settings import Settings
from tests.api.sse.support import entry_ids, open_events
from tests.api.sse.test_cleanup import ThreadServer
from tests.conftest import REDIS_DB, REDIS_HOST, REDIS_PORT, _redis_available
from tests.support.waiting import parked_async, until_async

redis_backend = pytest.importorskip("app.backends.redis")


@pytest.fixture(scope="module")
def app() -> Iterator[FastAPI]:
    if not _redis_available():
        pytest.skip("redis-server is not reachable")
    application = create_app(Settings(sse_heartbeat_ms=200), store=Store())
    backend = redis_backend.RedisBackend.from_url(
        f"redis://{REDIS_HOST}:{REDIS_PORT}/{REDIS_DB}", block_connections=16
    )
    services = application.state.services
    services.backend = backend
    services.sse_tails = Tails(backend)
    inner = application.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(a: FastAPI) -> AsyncIterator[None]:
        async with inner(a):
            yield
        await backend.close()  # in the server's loop, where its connections live

    application.router.lifespan_context = lifespan
    srv = ThreadServer(application, "httptools")
    application.state.url = srv.url
    yield application
    srv.stop()


@pytest.fixture
async def client(app: FastAPI, real_redis: Any) -> AsyncIterator[httpx.AsyncClient]:
    # The last test's tails go once the server has noticed its clients left: a test starts
    # with none, so none follows a stream of the last test that FLUSHDB removed, and a
    # subscriber a test finds on a tail is its own.
    await until_async(
        lambda: not app.state.services.sse_tails.by_key, 3, "the last test's tails gone"
    )
    async with httpx.AsyncClient(base_url=app.state.url, timeout=10) as c:
        yield c


def path(consumer: str, group: str = "g", stream: str = "s") -> str:
    return f"/v1/streams/{stream}/groups/{group}/consumers/{consumer}/events"


def add(r: Any, n: int, key: str = "s") -> list[str]:
    return [r.xadd(key, {"n": str(i)}) for i in range(n)]


async def test_a_tail_gets_what_another_client_appends(
    client: httpx.AsyncClient, real_redis: Any
) -> None:
    async with open_events(client, "/v1/streams/s/events") as events:
        await parked_async(real_redis, 1)  # the tail's XREAD, woken by another client
        ids = add(real_redis, 3)
        got = await events.take(3)
        assert entry_ids(got) == ids and [e.id for e in got] == ids
        assert got[0].json() == {"id": ids[0], "fields": {"n": "0"}}


async def test_replay_and_join_under_writes_lose_and_repeat_nothing(
    client: httpx.AsyncClient, real_redis: Any
) -> None:
    """Subscribers open while another client keeps appending: each replays, joins the tail
    somewhere in the middle, and gets every entry once, in order."""
    history = add(real_redis, 50)
    written: list[str] = []
    opened = 0

    async def at_least(count: Callable[[], int], n: int, what: str) -> None:
        await until_async(lambda: count() >= n, what=what)

    async def writer() -> None:
        for i in range(200):
            if i % 25 == 0:  # reader k opens after 25 k writes; the writes go on as it replays
                await at_least(lambda: opened, i // 25 + 1, f"reader {i // 25} open")
            written.append(real_redis.xadd("s", {"w": str(i)}))
            await asyncio.sleep(0)  # the readers' requests run between the writes

    async def reader() -> list[str]:
        nonlocal opened
        async with open_events(client, "/v1/streams/s/events", last_id="0") as events:
            opened += 1
            return entry_ids(await events.take(250, timeout=20))

    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(writer())
        readers = []
        for k in range(8):  # staggered: each joins at another point of the writes
            await at_least(lambda: len(written), 25 * k, f"{25 * k} writes")
            readers.append(tg.create_task(reader()))
    assert task.done()
    for r in readers:
        assert r.result() == history + written


async def test_resume_by_last_event_id(client: httpx.AsyncClient, real_redis: Any) -> None:
    ids = add(real_redis, 5)
    async with open_events(client, "/v1/streams/s/events", ids[1], last_id="0") as events:
        assert entry_ids(await events.take(3)) == ids[2:]
        more = add(real_redis, 1)
        assert entry_ids(await events.take(1)) == more
        await events.none_within(0.3)


async def test_gap_when_the_resume_point_was_trimmed(
    client: httpx.AsyncClient, real_redis: Any
) -> None:
    ids = add(real_redis, 6)
    real_redis.xtrim("s", maxlen=2, approximate=False)
    async with open_events(client, "/v1/streams/s/events", ids[1]) as events:
        gap = await events.next()
        assert gap.event == "gap" and gap.json() == {"after": ids[1], "first_id": ids[4]}
        assert entry_ids(await events.take(2)) == ids[4:]


async def test_live_gap_when_a_transaction_appends_and_trims(
    app: FastAPI, client: httpx.AsyncClient, real_redis: Any
) -> None:
    """Entries appended and trimmed at once (MULTI) before the tail reads them: a gap for its
    live subscribers. (A subscriber still replaying reads past such a trim without noticing
    it when its previous read found the stream's end: see ``tail._replay``.)"""
    tails = app.state.services.sse_tails.by_key
    async with open_events(client, "/v1/streams/s/events") as events:
        await until_async(lambda: "s" in tails and bool(tails["s"].subscribers), 3, "live")
        first = add(real_redis, 1)
        assert entry_ids(await events.take(1)) == first
        tx = real_redis.pipeline(transaction=True)
        for i in range(5):
            tx.xadd("s", {"n": str(i)})
        tx.xtrim("s", maxlen=2, approximate=False)
        ids = tx.execute()[:5]
        gap = await events.next()
        assert gap.event == "gap" and gap.json() == {"after": first[0], "first_id": ids[3]}
        assert entry_ids(await events.take(2)) == ids[3:]


class HeldReplayRead:
    """The tails' backend, except that the first replay read (``READ_BATCH + 1`` entries) is
    held until ``release`` and ignores being cancelled meanwhile, as redis-py's send may on
    Python 3.11 (CPython gh-86296): the source of a stream whose client left runs on."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.taken = False
        self.held = threading.Event()
        self.cancelled = threading.Event()
        self.release = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def read(self, args: ReadRequest, gone: Any = None) -> list[StreamRead]:
        if args.block_ms is not None or args.count != READ_BATCH + 1 or self.taken:
            return await self.inner.read(args, gone)  # type: ignore[no-any-return]
        self.taken = True
        reads: list[StreamRead] = await self.inner.read(args, gone)
        self.held.set()  # the reply is in: from here on, a cancellation is dropped
        while True:
            try:
                await until_async(self.release.is_set, math.inf, "release")
                return reads
            except asyncio.CancelledError:
                self.cancelled.set()  # dropped, as asyncio.wait_for did


@pytest.fixture
def held_read(app: FastAPI, client: httpx.AsyncClient) -> Iterator[HeldReplayRead]:
    tails = app.state.services.sse_tails  # none running (``client``): new ones take the wrapper
    held = tails.backend = HeldReplayRead(tails.backend)
    yield held
    held.release.set()
    tails.backend = held.inner


async def test_a_stream_closed_while_replaying_leaves_its_tail(
    app: FastAPI, client: httpx.AsyncClient, held_read: HeldReplayRead, real_redis: Any
) -> None:
    """The client leaves while its subscriber reads, and the cancellation of its source is
    lost: the subscriber must not join the tail when the read returns (it would stay live
    there, keeping the tail, until an entry found its outbox closed; and a later test of
    the same stream took it for its own live subscriber)."""
    tails = app.state.services.sse_tails.by_key
    async with open_events(client, "/v1/streams/s/events"):
        await until_async(held_read.held.is_set, 3, "the replay read held")
    await until_async(held_read.cancelled.is_set, 3, "the server noticed, and cancelled")
    held_read.release.set()
    await until_async(lambda: not tails, 3, "a closed stream's subscriber leaves its tail")
    await until_async(lambda: not app.state.services.sse.open, 3, "no stream open")


async def test_group_history_then_new_and_pending(
    client: httpx.AsyncClient, real_redis: Any
) -> None:
    real_redis.xgroup_create("s", "g", "$", mkstream=True)
    old = add(real_redis, 2)
    real_redis.xreadgroup("g", "c", {"s": ">"})
    async with open_events(client, path("c")) as events:
        assert entry_ids(await events.take(2)) == old  # history: its pending entries
        await parked_async(real_redis, 1)
        new = add(real_redis, 3)
        assert entry_ids(await events.take(3)) == new
    pending = real_redis.xpending_range("s", "g", "-", "+", 10, "c")
    assert [p["message_id"] for p in pending] == old + new


async def test_group_max_unacked_waits_for_acks_from_another_client(
    client: httpx.AsyncClient, real_redis: Any
) -> None:
    real_redis.xgroup_create("s", "g", "$", mkstream=True)
    async with open_events(client, path("c"), max_unacked=2) as events:
        await parked_async(real_redis, 1)
        ids = add(real_redis, 4)
        assert entry_ids(await events.take(2)) == ids[:2]
        await events.none_within(0.4)
        real_redis.xack("s", "g", ids[0])
        assert entry_ids(await events.take(1, timeout=1)) == [ids[2]]


async def test_group_missing_is_404_and_destroyed_ends_with_error(
    client: httpx.AsyncClient, real_redis: Any
) -> None:
    r = await client.get(path("c", group="nope"))
    assert r.status_code == 404 and r.json()["code"] == "NOGROUP"
    real_redis.xgroup_create("s", "g", "$", mkstream=True)
    async with open_events(client, path("c")) as events:
        await parked_async(real_redis, 1)
        real_redis.xgroup_destroy("s", "g")
        event = await events.next(timeout=8)
        assert event.event == "error" and event.json()["code"] == "NOGROUP"


def _blocked_here(r: Any) -> list[dict[str, Any]]:
    return [
        c
        for c in r.client_list()
        if int(c["db"]) == REDIS_DB and c["cmd"] in ("xread", "xreadgroup") and "b" in c["flags"]
    ]


async def test_no_blocked_read_left_in_redis_after_clients_leave(
    app: FastAPI, client: httpx.AsyncClient, real_redis: Any
) -> None:
    real_redis.xgroup_create("s", "g", "$", mkstream=True)
    async with (
        open_events(client, "/v1/streams/s/events") as one,
        open_events(client, "/v1/events", stream=["s", "t"]) as multi,
        open_events(client, path("c")) as group,
    ):
        await parked_async(real_redis, 3)  # the tails of s and t, the group's `>`
        sid = add(real_redis, 1)
        for reader in (one, multi, group):
            assert entry_ids(await reader.take(1)) == sid
        assert set(app.state.services.sse_tails.by_key) == {"s", "t"}
        # The tails of s and t and the group's `>`, once each has issued its next read.
        await parked_async(real_redis, 3)
        assert len(_blocked_here(real_redis)) == 3
    await until_async(lambda: not app.state.services.sse_tails.by_key, 3, "every tail gone")
    await parked_async(real_redis, 0, 3, "no blocked read left in Redis")
    assert _blocked_here(real_redis) == []
