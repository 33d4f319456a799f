"""Connections that never finish a request are closed; the cap on open connections holds.

Against real ``xstreams serve`` processes with small timeouts (set through the environment):
many half-sent requests (request line only, headers without the blank line that ends them, a
body shorter than its Content-Length, nothing at all) are each closed once their timeout has
passed, while a long poll, an idle event stream and an ordinary keep-alive client that outlive
those timeouts are left alone. Past ``XSTREAMS_MAX_CONNECTIONS`` open connections a new one is
answered 503 and closed.
"""

from __future__ import annotations

import asyncio
import resource
import socket
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from app.server.connections import RESERVED_FILES, fit_open_files
from tests.api.sse.support import add, entry_ids, open_events
from tests.conftest import Server

HEADER_TIMEOUT_MS = 1000
BODY_TIMEOUT_MS = 1000
KEEPALIVE_TIMEOUT_MS = 500
ENV = {
    "XSTREAMS_HEADER_TIMEOUT_MS": str(HEADER_TIMEOUT_MS),
    "XSTREAMS_BODY_TIMEOUT_MS": str(BODY_TIMEOUT_MS),
    "XSTREAMS_KEEPALIVE_TIMEOUT_MS": str(KEEPALIVE_TIMEOUT_MS),
}
# Generous for a loaded 2-core box; far below "never".
MARGIN_S = 5.0
HALF_SENT = 200  # connections of each kind

# What each kind of half-sent connection sends before it stops.
PARTIAL = {
    "request line only": b"POST / HTTP/1.1\r\n",
    "headers without the blank line": b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n",
    "body shorter than declared": (
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 40"
        b'\r\n\r\n["PING"'
    ),
}


@pytest.fixture(scope="module")
def timed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("timeouts"), env=ENV)
    yield srv
    srv.stop()


async def _until_closed(port: int, sent: bytes, timeout: float) -> tuple[bytes, float]:
    """Open a connection, send ``sent``, then read until the server closes it; what came
    back and how long after starting to connect (the server's clock starts later).

    The connect and the send are one blocking step: with hundreds of connections opening on
    a loaded event loop, a send left to a later turn can come after the server's head
    timeout has already passed, and the server rightly takes the silence for nothing sent."""
    started = time.monotonic()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(sent)
    sock.setblocking(False)
    reader, writer = await asyncio.open_connection(sock=sock)
    try:
        try:
            data = await asyncio.wait_for(reader.read(-1), timeout)
        except ConnectionResetError:
            data = b""
        return data, time.monotonic() - started
    finally:
        writer.close()


async def test_half_sent_requests_are_closed_after_their_timeout(timed_server: Server) -> None:
    """Hundreds of connections stalled in every part of a request are all closed, each
    after its timeout: 408 when part of a request came, silently when nothing did."""
    kinds = [*PARTIAL.items(), ("nothing", b"")]
    opened = [
        (name, _until_closed(timed_server.port, sent, 2 * MARGIN_S))
        for name, sent in kinds
        for _ in range(HALF_SENT)
    ]
    results = await asyncio.gather(*(c for _, c in opened), return_exceptions=True)
    for (name, _), result in zip(opened, results, strict=True):
        assert not isinstance(result, TimeoutError), f"{name}: still open after {2 * MARGIN_S} s"
        assert isinstance(result, tuple), (name, result)
        data, waited = result
        limit_s = (BODY_TIMEOUT_MS if name.startswith("body") else HEADER_TIMEOUT_MS) / 1000
        assert waited >= limit_s * 0.9, (name, waited)
        if name == "nothing":
            assert data == b""
        else:
            assert data.startswith(b"HTTP/1.1 408 "), (name, data[:80])
            assert b"connection: close" in data.lower()


async def test_an_idle_keep_alive_connection_is_closed(timed_server: Server) -> None:
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    data, waited = await _until_closed(timed_server.port, request, MARGIN_S)
    assert data.startswith(b"HTTP/1.1 200 ")
    assert waited >= KEEPALIVE_TIMEOUT_MS / 1000 * 0.9


async def test_long_polls_streams_and_keep_alive_clients_outlive_the_timeouts(
    timed_server: Server,
) -> None:
    """A 2.5 s XREAD BLOCK on the command endpoint, a REST long poll (``block_ms``), an idle
    event stream and a keep-alive client that pauses between requests (shorter than the
    keep-alive timeout) all outlive the head and body timeouts untouched."""
    wait_ms = 2500
    assert wait_ms > 2 * max(HEADER_TIMEOUT_MS, BODY_TIMEOUT_MS)
    limits = httpx.Limits(max_connections=10)
    async with httpx.AsyncClient(base_url=timed_server.url, timeout=10, limits=limits) as client:
        assert (await client.post("/", json=["FLUSHALL"])).json() == {"result": "OK"}

        async def keep_alive_client() -> int:
            requests = 0
            deadline = time.monotonic() + wait_ms / 1000
            while time.monotonic() < deadline:
                assert (await client.get("/healthz")).status_code == 200
                requests += 1
                await asyncio.sleep(KEEPALIVE_TIMEOUT_MS / 1000 / 2)
            return requests

        async def idle_stream() -> list[str]:
            async with open_events(client, "/v1/streams/s/events") as events:
                await asyncio.sleep(wait_ms / 1000)
                sid = await add(client, "s", "n", "1")
                assert entry_ids(await events.take(1)) == [sid]
                return [sid]

        block = client.post("/", json=["XREAD", "BLOCK", str(wait_ms), "STREAMS", "t", "$"])
        poll = client.get("/v1/streams/u/entries", params={"after": "$", "block_ms": str(wait_ms)})
        started = time.monotonic()
        blocked, polled, stream, requests = await asyncio.gather(
            block, poll, idle_stream(), keep_alive_client()
        )
        assert time.monotonic() - started >= wait_ms / 1000
        assert blocked.status_code == 200 and blocked.json() == {"result": None}
        assert polled.status_code == 200 and polled.json()["entries"] == []
        assert len(stream) == 1
        assert requests >= 3


CAP = 3
CAP_ENV = {"XSTREAMS_MAX_CONNECTIONS": str(CAP), "XSTREAMS_HEADER_TIMEOUT_MS": "1500"}


@pytest.fixture
async def capped_server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Server]:
    srv = Server(tmp_path_factory.mktemp("cap"), env=CAP_ENV)
    yield srv
    srv.stop()


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
    """One GET /healthz on an open connection; the response's status line."""
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), MARGIN_S)
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    await reader.readexactly(length)
    return head.split(b"\r\n", 1)[0]


async def test_connections_past_the_cap_get_503_and_are_closed(capped_server: Server) -> None:
    """With the cap reached, a new connection's request is answered 503 and the connection
    closed, while a keep-alive connection within the cap goes on being served (uvicorn's own
    ``limit_concurrency`` would refuse it too); once connections close there is room again."""
    port = capped_server.port
    served = await asyncio.open_connection("127.0.0.1", port)
    assert await _exchange(*served) == b"HTTP/1.1 200 OK"
    idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(CAP - 1)]
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    data, _ = await _until_closed(port, request, MARGIN_S)
    assert data.startswith(b"HTTP/1.1 503 "), data[:80]
    assert b"connection: close" in data.lower()
    assert await _exchange(*served) == b"HTTP/1.1 200 OK"
    served[1].close()
    for reader, writer in idle:  # closed by the head timeout, not by the refusal
        assert await asyncio.wait_for(reader.read(-1), MARGIN_S) == b""
        writer.close()
    async with httpx.AsyncClient(base_url=capped_server.url) as client:
        assert (await client.get("/healthz")).status_code == 200


NOFILE_CASES = [
    # (soft, hard, max_connections) -> (soft after, connections served)
    ((1024, 65536, 12_000), (65536, 12_000)),
    ((20000, 20000, 12_000), (20000, 12_000)),
    ((4096, 4096, 12_000), (4096, 4096 - RESERVED_FILES)),
    ((1024, resource.RLIM_INFINITY, 12_000), (resource.RLIM_INFINITY, 12_000)),
]


@pytest.mark.parametrize(("limits", "expected"), NOFILE_CASES)
def test_the_cap_fits_the_open_file_limit(
    limits: tuple[int, int, int], expected: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The soft open-file limit is raised to the hard one; a cap that still does not fit
    beside the reserve is lowered to what does."""
    soft, hard, wanted = limits
    current = [soft, hard]
    monkeypatch.setattr(resource, "getrlimit", lambda _: tuple(current))
    monkeypatch.setattr(resource, "setrlimit", lambda _, v: current.__setitem__(0, v[0]))
    assert fit_open_files(wanted) == expected[1]
    assert current[0] == expected[0]
