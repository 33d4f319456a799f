"""An event stream handed its connection (app/api/sse/hub.py), against a fake transport: the
bytes it writes, backpressure, the send watchdog, the end and the client leaving.

The end-to-end behaviour of the path (events, resumes, caps, shutdown) is the SSE suite's,
whose servers are ``xstreams serve``; here, the record's own rules, without a socket."""

from __future__ import annotations

import asyncio
from typing import Any

from app.access.principal import OPEN
from app.api.holds import Holds
from app.api.sse.hub import DetachedStream, frame
from app.api.sse.outbox import CloseReason, Outbox
from app.api.sse.registry import SseRegistry

HEAD = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"


class Transport:
    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.closed = self.aborted = False
        self.protocol: Any = None

    def write(self, data: bytes) -> None:
        self.sent.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def get_extra_info(self, name: str) -> None:
        return None  # no socket: the watchdog times paused writes


async def _open(
    source: Any = None, send_timeout_s: float = 10.0
) -> tuple[DetachedStream, Transport, set[Any], SseRegistry]:
    registry = SseRegistry(10, Holds(10))
    outbox = Outbox(1 << 20, registry.flusher)
    principal = OPEN
    assert registry.admit(outbox, principal) is None
    record = DetachedStream(outbox, registry, principal, send_timeout_s)
    transport, connections = Transport(), set[Any]()

    def detach(rec: DetachedStream) -> tuple[Any, bytes, bool, set[Any]]:
        connections.add(rec)
        transport.protocol = rec
        return transport, HEAD, False, connections

    head = record.attach(detach)
    assert head == HEAD

    async def forever(outbox: Outbox) -> None:
        await asyncio.Event().wait()

    record.start(head, b"retry: 100\n\n", source or forever, 60.0, 0, None)
    return record, transport, connections, registry


async def test_head_and_hint_in_one_write_then_events_as_chunks() -> None:
    record, transport, _, registry = await _open()
    assert transport.sent == [HEAD + frame(b"retry: 100\n\n")]
    record.outbox.push(b"data: 1\n\n")
    record.outbox.push(b"data: 2\n\n")
    await asyncio.sleep(0)  # the flusher's round
    assert transport.sent[1:] == [frame(b"data: 1\n\ndata: 2\n\n")]
    assert registry.flusher.direct_writes == 1
    record.outbox.close(CloseReason.SHUTDOWN)


async def test_a_paused_transport_holds_the_bytes_until_it_resumes() -> None:
    record, transport, _, _ = await _open()
    record.pause_writing()
    record.outbox.push(b"data: 1\n\n")
    await asyncio.sleep(0)
    assert len(transport.sent) == 1 and record.outbox.buffered > 0
    drained = asyncio.ensure_future(record.outbox.drained())
    await asyncio.sleep(0)
    assert not drained.done()
    record.resume_writing()
    await asyncio.sleep(0)
    assert transport.sent[1:] == [frame(b"data: 1\n\n")]
    await asyncio.wait_for(drained, 1)
    record.outbox.close(CloseReason.SHUTDOWN)


async def test_an_ending_stream_writes_its_rest_and_the_end_then_closes() -> None:
    record, transport, connections, registry = await _open()
    record.pause_writing()
    record.outbox.push(b"data: 1\n\n")
    record.shutdown()  # the server's graceful shutdown
    await asyncio.sleep(0)
    assert transport.sent[-1] == frame(b"data: 1\n\n") + b"0\r\n\r\n"
    assert transport.closed and not transport.aborted
    assert not registry.open and registry.closed == {"shutdown": 1}
    record.connection_lost(None)
    assert not connections


async def test_the_client_leaving_drops_everything() -> None:
    cancelled = asyncio.Event()

    async def source(outbox: Outbox) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()

    record, transport, connections, registry = await _open(source)
    await asyncio.sleep(0)
    record.outbox.push(b"data: 1\n\n")
    record.connection_lost(ConnectionResetError())
    await asyncio.wait_for(cancelled.wait(), 1)  # the source stops with it
    assert len(transport.sent) == 1  # nothing more written
    assert not connections and not registry.open
    assert registry.closed == {"disconnected": 1}


async def test_a_source_that_ends_ends_the_stream_cleanly() -> None:
    async def source(outbox: Outbox) -> None:
        outbox.push(b"data: last\n\n")

    _, transport, _, registry = await _open(source)
    for _ in range(5):
        await asyncio.sleep(0)
    assert b"".join(transport.sent).endswith(frame(b"data: last\n\n") + b"0\r\n\r\n")
    assert transport.closed and registry.closed == {"ended": 1}


async def test_a_peer_paused_past_the_send_timeout_is_cut_off() -> None:
    record, transport, _, registry = await _open(send_timeout_s=0.1)
    record.pause_writing()
    record.outbox.push(b"data: 1\n\n")
    await asyncio.sleep(0.3)  # the watchdog looks every half timeout
    assert transport.aborted and registry.closed == {"stalled": 1}
