"""Connection cap, maximum lifetime, slow subscribers and shutdown: every way a stream ends."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from tests.api.sse.conftest import SEND_BUFFER_BYTES, SEND_TIMEOUT_MS, SSE_ENV, flushed_client
from tests.api.sse.support import add, entry_ids, open_events
from tests.conftest import Server
from tests.observe.support import parse, value
from tests.support.targets import Target
from tests.support.waiting import until_async

LIFETIME_MS = 600


@pytest.fixture(scope="module")
def capped_server(target: Target, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {**SSE_ENV, "XSTREAMS_SSE_MAX_CONNECTIONS": "2"}
    srv = target.serve(tmp_path_factory.mktemp("capped"), env=env)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def short_lived_server(
    target: Target, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    env = {**SSE_ENV, "XSTREAMS_SSE_MAX_LIFETIME_MS": str(LIFETIME_MS)}
    srv = target.serve(tmp_path_factory.mktemp("short"), env=env)
    yield srv
    srv.stop()


@pytest.fixture
async def capped(capped_server: Server) -> AsyncIterator[httpx.AsyncClient]:
    c = await flushed_client(capped_server.url)
    yield c
    await c.aclose()


@pytest.fixture
async def short_lived(short_lived_server: Server) -> AsyncIterator[httpx.AsyncClient]:
    c = await flushed_client(short_lived_server.url)
    yield c
    await c.aclose()


async def _no_stream_open(client: httpx.AsyncClient) -> bool:
    """Whether the server counts no event stream open (it saw both clients leave)."""
    samples = parse((await client.get("/metrics")).text)
    return value(samples, "xstreams_sse_subscribers") == 0


async def test_streams_beyond_the_cap_get_429(capped: httpx.AsyncClient) -> None:
    async with (
        open_events(capped, "/v1/streams/s/events"),
        open_events(capped, "/v1/events", stream=["a", "b"]),
    ):
        r = await capped.get("/v1/streams/s/events")
        assert r.status_code == 429
        assert r.headers["content-type"] == "application/problem+json"
        assert r.headers["retry-after"] == "1"
        assert (await capped.get("/healthz")).status_code == 200  # only streams are capped
    await until_async(lambda: _no_stream_open(capped), what="both streams closed")
    async with open_events(capped, "/v1/streams/s/events") as events:  # room again
        sid = await add(capped, "s", "n", "1")
        assert entry_ids(await events.take(1)) == [sid]


async def test_max_lifetime_ends_the_stream_cleanly(short_lived: httpx.AsyncClient) -> None:
    started = time.monotonic()
    async with open_events(short_lived, "/v1/streams/s/events") as events:
        sid = await add(short_lived, "s", "n", "1")
        assert entry_ids(await events.until_end(timeout=3)) == [sid]
        lived = time.monotonic() - started
    assert LIFETIME_MS / 1000 * 0.8 < lived < LIFETIME_MS / 1000 + 1.5


async def test_reconnects_across_lifetimes_lose_nothing(short_lived: httpx.AsyncClient) -> None:
    """A producer keeps appending while the server ends each stream after its lifetime;
    reconnecting with the last event ID gives every entry exactly once, in order."""
    appended: list[str] = []

    async def produce() -> None:
        for i in range(40):
            appended.append(await add(short_lived, "s", "n", str(i)))
            await asyncio.sleep(0.04)  # paced over several lifetimes

    producer = asyncio.create_task(produce())
    received: list[str] = []
    last: str | None = None
    connections = 0
    while not producer.done() or len(received) < len(appended):
        connections += 1
        async with open_events(short_lived, "/v1/streams/s/events", last, last_id="0") as ev:
            received += entry_ids(await ev.until_end(timeout=3))
            last = ev.last_event_id or last
        assert connections < 20
    await producer
    assert received == appended
    assert connections >= 2


async def test_a_stream_the_server_ends_does_not_leave_a_pooled_connection(
    short_lived: httpx.AsyncClient,
) -> None:
    """The server closes a stream's connection when the stream ends (its lifetime), so the
    head says ``connection: close`` and a pooling client sends its next requests on a new
    connection: none of them fails on the closed one."""
    await add(short_lived, "pooled", "n", "0")
    for _ in range(3):
        params = {"last_id": "0"}
        async with short_lived.stream("GET", "/v1/streams/pooled/events", params=params) as r:
            assert r.status_code == 200
            assert r.headers.get("connection") == "close"
            async for _chunk in r.aiter_bytes():  # until the server ends it
                pass
        await add(short_lived, "pooled", "n", "1")  # at once, on a pooled connection


def _stalled_reader(url: str, path: str) -> socket.socket:
    """A client that sends the request, reads the headers and then stops reading."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # little kernel buffering
    sock.connect((host, int(port)))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    return sock


def _drain(sock: socket.socket) -> bytes:
    sock.settimeout(10)
    chunks = []
    try:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except ConnectionResetError:
        pass
    sock.close()
    return b"".join(chunks)


async def test_stalled_subscriber_is_cut_off_and_resumes(
    sse_server: Server, client: httpx.AsyncClient
) -> None:
    """A subscriber that stops reading is disconnected once its socket has taken nothing
    for the send timeout (memory stays bounded meanwhile); it resumes from its last event
    ID and misses nothing."""
    sock = await asyncio.to_thread(_stalled_reader, sse_server.url, "/v1/streams/s/events")
    value = "x" * 8192
    batch = [["XADD", "s", "*", "v", value] for _ in range(100)]
    ids: list[str] = []
    for _ in range(12):  # ~10 MB: past the 64 KiB bound and every socket buffer
        r = await client.post("/pipeline", json=batch)
        ids += [x["result"] for x in r.json()]
    await asyncio.sleep(SEND_TIMEOUT_MS / 1000 * 1.5)  # time is the subject: past the send timeout
    data = await asyncio.to_thread(_drain, sock)
    got = [line[4:].decode() for line in data.split(b"\n") if line.startswith(b"id: ")]
    assert 0 < len(got) < len(ids), "the stalled subscriber was cut off"
    assert got == ids[: len(got)]
    async with open_events(client, "/v1/streams/s/events", got[-1]) as events:
        rest = entry_ids(await events.take(len(ids) - len(got), timeout=10))
    assert got + rest == ids


async def test_a_burst_past_the_buffer_reaches_a_live_subscriber(
    client: httpx.AsyncClient,
) -> None:
    """A burst bigger than the send buffer does not cost a reading subscriber its
    connection: it falls behind, reads from its own position, then follows live again."""
    value = "y" * 1024
    async with open_events(client, "/v1/streams/s/events") as events:
        r = await client.post("/pipeline", json=[["XADD", "s", "*", "v", value]] * 300)
        ids = [x["result"] for x in r.json()]
        assert 300 * len(value) > SEND_BUFFER_BYTES
        assert entry_ids(await events.take(300)) == ids
        later = await add(client, "s", "v", "later")
        assert entry_ids(await events.take(1)) == [later]


async def test_shutdown_closes_every_stream_cleanly(target: Target, tmp_path: Path) -> None:
    """On SIGTERM each stream ends with a proper end of body, at once rather than after
    uvicorn's grace period, and the process exits."""
    srv = target.serve(tmp_path, env=SSE_ENV)
    try:
        async with (
            httpx.AsyncClient(base_url=srv.url, timeout=10) as client,
            open_events(client, "/v1/streams/s/events") as a,
            open_events(client, "/v1/events", stream=["s", "t"]) as b,
        ):
            sid = await add(client, "s", "n", "1")
            assert entry_ids(await a.take(1)) == entry_ids(await b.take(1)) == [sid]
            started = time.monotonic()
            srv.proc.terminate()
            assert await a.until_end(timeout=4) == []
            assert await b.until_end(timeout=4) == []
            assert time.monotonic() - started < 2.0
        # uvicorn re-raises the SIGTERM it handled once shut down: -15 is its clean exit.
        assert await asyncio.to_thread(srv.proc.wait, 10) in (0, -15)
    finally:
        srv.stop()
