"""A subscriber that stops reading is cut off after the send timeout, whatever the kernel's
socket buffers hold; one that reads slowly but steadily is not.

Entries of a few KB go out while the subscriber reads nothing: they fill its small receive
buffer and the server's send buffer, and then the server has bytes outstanding that nobody
takes. Whether its connection is gone is seen from outside through the event-stream cap (set to
one): a new stream is refused with 429 while the stalled one holds the place, and admitted once
the server has dropped it; the stalled socket then reads to EOF (or a reset).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.api.sse.conftest import SEND_TIMEOUT_MS, SSE_ENV, flushed_client
from tests.conftest import Server
from tests.observe.support import parse, value
from tests.support.targets import Target
from tests.support.waiting import until_async

MARGIN_S = 4.0  # for a loaded 2-core box
VALUE = "x" * 4096
APPEND_EVERY_S = 0.02
PATH = "/v1/streams/s/events"


@pytest.fixture(scope="module")
def single_server(target: Target, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {**SSE_ENV, "XSTREAMS_SSE_MAX_CONNECTIONS": "1"}
    srv = target.serve(tmp_path_factory.mktemp("stalled"), env=env)
    yield srv
    srv.stop()


@pytest.fixture
async def client(single_server: Server) -> AsyncIterator[httpx.AsyncClient]:
    c = await flushed_client(single_server.url)
    yield c
    await c.aclose()


def _subscribe(port: int) -> socket.socket:
    """A subscriber with little kernel buffering, past its response head."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET {PATH} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    return sock


async def _append_until(client: httpx.AsyncClient, stop: asyncio.Event) -> list[str]:
    ids = []
    while not stop.is_set():
        r = await client.post("/", json=["XADD", "s", "*", "v", VALUE])
        ids.append(r.json()["result"])
        await asyncio.sleep(APPEND_EVERY_S)  # time is the subject: a steady write rate
    return ids


async def _stream_admitted(client: httpx.AsyncClient) -> bool:
    async with client.stream("GET", PATH) as r:
        assert r.status_code in (200, 429), r.status_code
        return r.status_code == 200


def _read_to_end(sock: socket.socket, timeout: float) -> bytes:
    sock.settimeout(timeout)
    chunks = []
    try:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except ConnectionResetError:
        pass
    return b"".join(chunks)


async def _stalled(client: httpx.AsyncClient) -> float:
    """Event streams cut off as stalled so far, as /metrics counts them."""
    samples = parse((await client.get("/metrics")).text)
    return value(samples, "xstreams_sse_closed_total", reason="stalled")


async def test_a_subscriber_that_reads_nothing_is_cut_off(client: httpx.AsyncClient) -> None:
    port = int(str(client.base_url).rsplit(":", 1)[1].rstrip("/"))
    stalled_before = await _stalled(client)
    sock = await asyncio.to_thread(_subscribe, port)
    try:
        stop = asyncio.Event()
        writer = asyncio.create_task(_append_until(client, stop))
        try:
            await until_async(
                lambda: _stream_admitted(client),
                SEND_TIMEOUT_MS / 1000 + MARGIN_S,
                "the stalled subscriber disconnected",
                poll_s=0.1,
            )
        finally:
            stop.set()
            ids = await writer
        # The server's side is gone: the socket reads what was buffered, then its end.
        got = _ids(await asyncio.to_thread(_read_to_end, sock, MARGIN_S))
        assert got == ids[: len(got)]
        assert await _stalled(client) == stalled_before + 1  # counted as a slow client's
    finally:
        sock.close()


async def test_a_slow_steady_subscriber_keeps_its_stream(client: httpx.AsyncClient) -> None:
    """Slower than the writer (its buffers stay full), but always taking some bytes: it
    stays connected through several send timeouts and ends with every entry, in order."""
    port = int(str(client.base_url).rsplit(":", 1)[1].rstrip("/"))
    sock = await asyncio.to_thread(_subscribe, port)
    received = bytearray()
    reading = threading.Event()
    reading.set()

    def read_slowly() -> None:
        sock.settimeout(MARGIN_S)
        while reading.is_set():
            chunk = sock.recv(2048)
            if not chunk:
                return
            received.extend(chunk)
            time.sleep(0.02)  # at most ~100 KB/s: slower than the writer

    reader = threading.Thread(target=read_slowly, daemon=True)
    reader.start()
    try:
        stop = asyncio.Event()
        writer = asyncio.create_task(_append_until(client, stop))
        await asyncio.sleep(3 * SEND_TIMEOUT_MS / 1000)  # through several send timeouts
        stop.set()
        ids = await writer
        await until_async(
            lambda: _ids(bytes(received))[-1:] == ids[-1:] or not reader.is_alive(),
            3 * MARGIN_S,
            "the slow subscriber caught up",
        )
        assert reader.is_alive(), "the slow subscriber was cut off"
        assert _ids(bytes(received)) == ids
    finally:
        reading.clear()
        await asyncio.to_thread(reader.join, MARGIN_S + 1)
        sock.close()


def _ids(data: bytes) -> list[str]:
    return [line[4:].decode() for line in data.split(b"\n") if line.startswith(b"id: ")]
