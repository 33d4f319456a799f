"""A response's head and body leave in one write (app/server/connections.py ``OneWrite``), and a
head nothing follows at once (an event stream, a 204) still leaves: at the end of the loop's
turn, or before the connection closes. Order is always the order written."""

from __future__ import annotations

import asyncio
from typing import Any

from app.server.connections import OneWrite

HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n"


class Recorder:
    """A transport that keeps every call that sends bytes, one entry per system call."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: bytes) -> None:
        self.sent.append(bytes(data))

    def writelines(self, parts: Any) -> None:
        self.sent.append(b"".join(parts))

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def is_closing(self) -> bool:
        return self.closed


async def test_a_head_goes_out_with_its_body_in_one_call() -> None:
    raw = Recorder()
    t = OneWrite(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    t.write(HEAD)
    assert raw.sent == []
    t.write(b"ok")
    assert raw.sent == [HEAD + b"ok"]
    await asyncio.sleep(0)  # the turn's end finds nothing held
    assert raw.sent == [HEAD + b"ok"]


async def test_a_head_alone_leaves_at_the_end_of_the_turn_then_chunks_in_order() -> None:
    raw = Recorder()
    t = OneWrite(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    t.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n")
    await asyncio.sleep(0)
    assert raw.sent == [b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n"]
    t.write(b"data: 1\n\n")
    t.write(b"data: 2\n\n")
    assert raw.sent[1:] == [b"data: 1\n\n", b"data: 2\n\n"]


async def test_close_sends_a_held_head_first_and_abort_drops_it() -> None:
    raw = Recorder()
    t = OneWrite(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    t.write(HEAD)
    t.close()
    assert raw.sent == [HEAD] and raw.closed
    assert t.is_closing()  # everything else is the transport's own
    dropped = Recorder()
    d = OneWrite(dropped, asyncio.get_running_loop())  # type: ignore[arg-type]
    d.write(HEAD)
    d.abort()
    await asyncio.sleep(0)
    assert dropped.sent == [] and dropped.aborted


async def test_a_100_continue_and_its_response_keep_their_order() -> None:
    raw = Recorder()
    t = OneWrite(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    t.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    t.write(HEAD)
    t.write(b"ok")
    await asyncio.sleep(0)
    assert b"".join(raw.sent) == b"HTTP/1.1 100 Continue\r\n\r\n" + HEAD + b"ok"
