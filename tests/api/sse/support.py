"""An event-stream reader for the SSE tests: parses ``text/event-stream`` as EventSource does.

Every wait is bounded (``TIMEOUT_S``), so a server that never sends fails the test instead
of hanging it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

TIMEOUT_S = 5.0


@dataclass
class Event:
    event: str
    data: str
    id: str | None  # None: the event had no id line

    def json(self) -> Any:
        return orjson.loads(self.data)


class StreamEnded(Exception):
    """The server closed the stream."""


class EventReader:
    """One open event stream: events in order, with comments and the retry hint noted."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.comments: list[tuple[float, str]] = []  # (monotonic time, text)
        self.retry_ms: int | None = None
        self.last_event_id: str | None = None  # as EventSource keeps it
        # Lines are read by a task of their own: timing out a wait must not cancel a read
        # in the middle (that would close httpx's line iterator for good).
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._pump = asyncio.create_task(self._read_lines())

    async def _read_lines(self) -> None:
        try:
            async for line in self.response.aiter_lines():
                self._queue.put_nowait(line)
        except (httpx.RemoteProtocolError, httpx.ReadError):
            pass
        finally:
            self._queue.put_nowait(None)

    async def close(self) -> None:
        self._pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._pump

    async def _line(self) -> str:
        line = await self._queue.get()
        if line is None:
            self._queue.put_nowait(None)  # ended for every later read too
            raise StreamEnded
        return line

    async def _next(self) -> Event:
        kind, data, event_id = "message", [], None
        while True:
            line = await self._line()
            if line == "":
                if data:
                    if event_id is not None:
                        self.last_event_id = event_id
                    return Event(kind, "\n".join(data), event_id)
                kind, event_id = "message", None
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "":
                self.comments.append((time.monotonic(), value))
            elif name == "event":
                kind = value
            elif name == "data":
                data.append(value)
            elif name == "id":
                event_id = value
            elif name == "retry":
                self.retry_ms = int(value)

    async def next(self, timeout: float = TIMEOUT_S) -> Event:
        return await asyncio.wait_for(self._next(), timeout)

    async def take(self, n: int, timeout: float = TIMEOUT_S) -> list[Event]:
        """The next ``n`` events."""
        deadline = time.monotonic() + timeout
        return [await self.next(max(deadline - time.monotonic(), 0.01)) for _ in range(n)]

    async def none_within(self, seconds: float) -> None:
        """Check that no event arrives for ``seconds`` (comments are fine)."""
        try:
            event = await asyncio.wait_for(self._next(), seconds)
        except TimeoutError:
            return
        raise AssertionError(f"unexpected event {event}")

    async def until_end(self, timeout: float = TIMEOUT_S) -> list[Event]:
        """Every event until the server closes the stream."""
        out: list[Event] = []
        deadline = time.monotonic() + timeout
        with contextlib.suppress(StreamEnded):
            while True:
                out.append(await self.next(max(deadline - time.monotonic(), 0.01)))
        return out


@contextlib.asynccontextmanager
async def open_events(
    client: httpx.AsyncClient, path: str, last_event_id: str | None = None, **params: Any
) -> AsyncIterator[EventReader]:
    """GET an event stream; fails unless it is one (200, text/event-stream). Without
    ``params``, a query written in ``path`` is kept (httpx drops it for ``params={}``)."""
    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    async with client.stream("GET", path, params=params or None, headers=headers) as r:
        if r.status_code != 200:
            await r.aread()
            raise AssertionError(f"{r.status_code}: {r.text}")
        assert r.headers["content-type"].startswith("text/event-stream")
        reader = EventReader(r)
        try:
            yield reader
        finally:
            await reader.close()


def entry_ids(events: list[Event]) -> list[str]:
    return [e.json()["id"] for e in events if e.event == "entry"]


async def add(client: httpx.AsyncClient, key: str, *fields: str, sid: str = "*") -> str:
    """XADD through the command endpoint; the new entry's ID."""
    r = await client.post("/", json=["XADD", key, sid, *fields])
    assert r.status_code == 200, r.text
    result: str = r.json()["result"]
    return result


async def command(client: httpx.AsyncClient, *args: str) -> Any:
    r = await client.post("/", json=list(args))
    assert r.status_code == 200, r.text
    return r.json()["result"]
