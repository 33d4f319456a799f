"""The runner's HTTP/1.1 client (app/delivery/http1.py): the outbound rules on every request,
one kept-alive connection per lane, and what it does with servers that close, stall, or
answer too much or in odd shapes. A raw asyncio server plays the receiver, so each answer is
exactly the bytes a test writes and each connection is counted."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from app.delivery.http1 import MAX_ANSWER_BYTES, AnswerError, Lane, lanes_for
from app.delivery.outbound import OutboundRules, Refused
from tests.delivery.support import Answer as ReceiverAnswer
from tests.delivery.support import receiving
from tests.delivery.test_webhooks_outbound import _certificate, resolving
from tests.support.waiting import until_async

OPEN = OutboundRules(("*",), allow_http=True)
PRIVATE_OK = OutboundRules(("*",), allow_http=True, allow_private=True)
OK = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"

# (connection number, request number on it, the request's bytes) -> bytes to write, and
# whether to close the connection after them (None: write nothing and close).
Script = Callable[[int, int, bytes], tuple[bytes | None, bool]]


@dataclass
class Raw:
    port: int = 0
    connections: int = 0
    closed: int = 0  # connections the server has closed
    requests: list[bytes] = field(default_factory=list)


@asynccontextmanager
async def raw_server(script: Script, also: tuple[str, ...] = ()) -> AsyncIterator[Raw]:
    """Serves ``script`` on 127.0.0.1 at a free port (and on the addresses ``also`` at it)."""
    raw = Raw()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn, n = raw.connections, 0
        raw.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                request = head + await reader.readexactly(length)
                raw.requests.append(request)
                out, close = script(conn, n, request)
                n += 1
                if out is None:
                    return
                writer.write(out)
                await writer.drain()
                if close:
                    return
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            raw.closed += 1

    servers = [await asyncio.start_server(serve, "127.0.0.1", 0)]
    raw.port = servers[0].sockets[0].getsockname()[1]
    servers += [await asyncio.start_server(serve, a, raw.port) for a in also]
    try:
        yield raw
    finally:
        for server in servers:
            server.close()


def one(raw: Raw, rules: OutboundRules = PRIVATE_OK) -> Lane:
    (only,) = lanes_for(rules, f"http://127.0.0.1:{raw.port}/hook?x=1", 1)
    return only


async def test_a_connection_is_kept_and_reused_and_the_request_is_whole() -> None:
    async with raw_server(lambda c, n, r: (OK, False)) as raw:
        client = one(raw)
        for _ in range(3):
            answer = await client.post(b'{"a":1}', {"webhook-id": "msg_1"})
            assert answer.status == 200
        await client.aclose()
    assert raw.connections == 1
    head, body = raw.requests[0].split(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /hook?x=1 HTTP/1.1"
    assert f"host: 127.0.0.1:{raw.port}".encode() in lines
    assert b"webhook-id: msg_1" in lines and b"content-length: 7" in lines
    assert body == b'{"a":1}'


async def test_chunked_and_sized_answers_keep_the_connection() -> None:
    answers = [
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        b"HTTP/1.1 503 No\r\nretry-after: 7\r\ncontent-length: 5\r\n\r\nlater",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
    ]
    async with raw_server(lambda c, n, r: (answers[n], False)) as raw:
        client = one(raw)
        got = [await client.post(b"{}", {}) for _ in answers]
        await client.aclose()
    assert [(a.status, a.retry_after) for a in got] == [(200, None), (503, "7"), (204, None)]
    assert raw.connections == 1


async def test_an_answer_read_to_the_close_has_its_status() -> None:
    async with raw_server(lambda c, n, r: (b"HTTP/1.1 202 A\r\n\r\nsome body", True)) as raw:
        client = one(raw)
        assert (await client.post(b"{}", {})).status == 202
        assert (await client.post(b"{}", {})).status == 202
        await client.aclose()
    assert raw.connections == 2


async def test_a_kept_connection_the_server_closed_while_idle_is_replaced() -> None:
    async with raw_server(lambda c, n, r: (OK, True)) as raw:  # answers, then closes
        client = one(raw)
        for i in range(3):
            assert (await client.post(b"{}", {})).status == 200
            # The server closes the connection while it is idle in the client's pool.
            await until_async(lambda i=i: raw.closed == i + 1, what="the server's close")
        await client.aclose()
    assert (raw.connections, len(raw.requests)) == (3, 3)


async def test_a_close_racing_a_request_on_a_kept_connection_sends_it_once_more() -> None:
    # The second request on connection 0 meets a close before any answer: it goes again, on
    # a new connection, once. A fresh connection closing the same way is a failure.
    def script(c: int, n: int, r: bytes) -> tuple[bytes | None, bool]:
        return (None, True) if (c, n) == (0, 1) else (OK, False)

    async with raw_server(script) as raw:
        client = one(raw)
        assert (await client.post(b"1", {})).status == 200
        assert (await client.post(b"2", {})).status == 200
        await client.aclose()
    assert raw.connections == 2
    assert [r.rsplit(b"\n", 1)[1] for r in raw.requests] == [b"1", b"2", b"2"]

    async with raw_server(lambda c, n, r: (None, True)) as raw:
        client = one(raw)
        with pytest.raises(ConnectionError):
            await client.post(b"1", {})
        await client.aclose()
    assert len(raw.requests) == 1


async def test_an_oversized_answer_keeps_its_status_and_closes_the_connection() -> None:
    big = b"x" * (MAX_ANSWER_BYTES * 4)
    answer = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(big), big)
    async with raw_server(lambda c, n, r: (answer, False)) as raw:
        client = one(raw)
        assert (await client.post(b"{}", {})).status == 200
        assert (await client.post(b"{}", {})).status == 200
        await client.aclose()
    assert raw.connections == 2


async def test_an_oversized_or_broken_head_is_an_answer_error() -> None:
    heads = [b"HTTP/1.1 200 OK\r\nx: " + b"y" * (128 * 1024) + b"\r\n\r\n", b"garbage\r\n\r\n"]
    for head in heads:
        async with raw_server(lambda c, n, r, head=head: (head, False)) as raw:  # type: ignore[misc]
            client = one(raw)
            with pytest.raises(AnswerError):
                await client.post(b"{}", {})
            await client.aclose()


async def test_a_timeout_closes_the_connection_so_a_late_answer_is_not_misread() -> None:
    late = asyncio.Event()

    def script(c: int, n: int, r: bytes) -> tuple[bytes | None, bool]:
        if c == 0:
            late.set()
            return b"", False  # no answer yet (the late one would be a 500)
        return OK, False

    async with raw_server(script) as raw:
        client = one(raw)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await client.post(b"{}", {})
        assert (await client.post(b"{}", {})).status == 200
        await client.aclose()
    assert raw.connections == 2


async def test_the_rules_hold_on_every_request() -> None:
    async with raw_server(lambda c, n, r: (OK, False)) as raw:
        # loopback without allow_private; a rebinding answer; a metadata address.
        with pytest.raises(Refused, match="loopback"):
            await one(raw, OPEN).post(b"{}", {})
        rebind = resolving({"hooks.test": ["93.184.215.14", "127.0.0.1"]})
        (client,) = lanes_for(OPEN, f"http://hooks.test:{raw.port}/", 1, rebind)
        with pytest.raises(Refused, match=r"127\.0\.0\.1"):
            await client.post(b"{}", {})
        (client,) = lanes_for(PRIVATE_OK, "http://169.254.169.254/latest/meta-data/", 1)
        with pytest.raises(Refused, match="metadata"):
            await client.post(b"{}", {})
        (client,) = lanes_for(OutboundRules(("*",)), f"http://127.0.0.1:{raw.port}/", 1)
        with pytest.raises(Refused, match="https"):
            await client.post(b"{}", {})
    assert raw.requests == []


async def test_the_checked_address_is_used_and_a_new_one_gets_a_new_connection() -> None:
    answers = {"hooks.test": ["127.0.0.1"]}
    calls: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        return answers[host]

    async with raw_server(lambda c, n, r: (OK, False), also=("127.0.0.2",)) as raw:
        (client,) = lanes_for(PRIVATE_OK, f"http://hooks.test:{raw.port}/h", 1, resolve)
        assert (await client.post(b"{}", {})).status == 200
        assert (await client.post(b"{}", {})).status == 200
        assert calls == ["hooks.test"]  # the checked answer is reused for a while
        client.cache.clear()  # as if it expired: the name now points at a refused address
        answers["hooks.test"] = ["10.0.0.1", "127.0.0.2"]
        with pytest.raises(Refused, match="private"):
            await lanes_for(OPEN, f"http://hooks.test:{raw.port}/h", 1, resolve)[0].post(b"", {})
        answers["hooks.test"] = ["127.0.0.2"]  # another (allowed) address: a new connection
        assert (await client.post(b"{}", {})).status == 200
        await client.aclose()
    assert raw.connections == 2
    assert all(f"host: hooks.test:{raw.port}".encode() in r for r in raw.requests)


async def test_tls_is_verified_against_the_host_name_over_the_checked_address(
    tmp_path: Path,
) -> None:
    cert, key, trust = _certificate(tmp_path, "hooks.test")
    rules = OutboundRules(("hooks.test", "other.test"), allow_private=True)
    to_loopback = resolving({"hooks.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
    with receiving(tls=(cert, key)) as r:
        port = r.url.split(":")[2].split("/")[0]
        (client,) = lanes_for(rules, f"https://hooks.test:{port}/hook", 1, to_loopback, trust)
        assert (await client.post(b"{}", {})).status == 200
        assert (await client.post(b"{}", {})).status == 200
        await client.aclose()
        (client,) = lanes_for(rules, f"https://other.test:{port}/hook", 1, to_loopback, trust)
        with pytest.raises(OSError, match=r"(?i)certificate|hostname"):
            await client.post(b"{}", {})
        await client.aclose()
    assert [h.headers["host"] for h in r.hits] == [f"hooks.test:{port}"] * 2


async def test_a_redirect_is_an_answer_not_followed() -> None:
    with receiving() as elsewhere:
        moved = receiving(lambda n, hit: ReceiverAnswer(302, (("location", elsewhere.url),)))
        with moved as r:
            (client,) = lanes_for(PRIVATE_OK, r.url, 1)
            assert (await client.post(b"{}", {})).status == 302
            await client.aclose()
    assert elsewhere.hits == []
