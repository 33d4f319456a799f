"""Joining a stream's tail without a hole, in process, the backend's timing in the test's hands.

With an async backend (Redis) a subscriber's last replay read and its joining the tail are
not one step: while the read's empty answer is on its way back, other clients append and the
tail hands the new entries out. ``Racing`` reproduces that over the embedded engine: it holds
the answer of the subscriber's read that found nothing while the test appends (and trims) and
the tail delivers, then lets the stale answer through. Whatever happened meanwhile, every
entry must arrive exactly once and in order, and entries removed before anyone read them must
give a ``gap`` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
import pytest

from app.api.rest.schemas.entries import FieldsForm
from app.api.sse import tail as tail_module
from app.api.sse.flush import Flusher
from app.api.sse.outbox import CloseReason, Outbox
from app.api.sse.subscriber import Subscriber
from app.api.sse.tail import StreamTail, Tails, follow
from app.backends.embedded import EmbeddedBackend
from app.engine.commands.reads import ReadRequest
from app.engine.commands.streams import XAddArgs
from app.engine.errors import CommandError
from app.engine.ids import MIN_ID, StreamID, format_id
from app.engine.replies import StreamRead
from app.engine.store import Store
from app.engine.stream import TrimSpec, TrimStrategy
from tests.support.waiting import until_async

Hook = Callable[[], Awaitable[None]]


class Racing(EmbeddedBackend):
    """The embedded engine, except that once armed, the next plain read that finds nothing
    answers only after ``hook`` ran (its answer computed before, as Redis's would be); and
    blocking reads fail while ``failing`` is above 0 (counting down), as Redis's would while
    it is unreachable."""

    def __init__(self) -> None:
        super().__init__(Store())
        self.hook: Hook | None = None
        self.failing = 0

    async def read(self, request: ReadRequest, gone: Any = None) -> list[StreamRead]:
        if request.block_ms is not None and self.failing:
            self.failing -= 1
            await asyncio.sleep(0)  # a refused connection is still a round trip: yield once
            raise CommandError("ERR the Redis backend is unavailable: connection refused")
        reads = await super().read(request, gone)
        plain = request.block_ms is None and request.group is None
        if self.hook is not None and plain and not any(r.entries for r in reads):
            hook, self.hook = self.hook, None
            await hook()
        return reads


class Events:
    """A subscriber's outbox, written by a task, parsed as EventSource would."""

    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox
        self.raw = bytearray()
        self.writer = asyncio.create_task(self._write())

    async def _write(self) -> None:
        while (chunk := await self.outbox.take()) is not None:
            self.raw += chunk

    def parsed(self) -> list[tuple[str, Any]]:
        out = []
        for block in bytes(self.raw).split(b"\n\n"):
            fields = dict(line.split(b": ", 1) for line in block.split(b"\n") if line)
            if b"event" in fields:
                out.append((fields[b"event"].decode(), orjson.loads(fields[b"data"])))
        return out

    def ids(self) -> list[str]:
        return [data["id"] for kind, data in self.parsed() if kind == "entry"]


async def add(backend: EmbeddedBackend, n: int, first: int = 0) -> list[str]:
    """XADD ``n`` entries in one atomic batch (``n`` = first, first + 1 ...)."""
    ids = await backend.append([XAddArgs("s", ("n", str(first + i))) for i in range(n)])
    return [format_id(i) for i in ids if i is not None]


@contextlib.asynccontextmanager
async def subscribed(
    tails: Tails, after: StreamID = MIN_ID, limit_bytes: int = 1 << 20
) -> AsyncIterator[tuple[Subscriber, Events]]:
    outbox = Outbox(limit_bytes, Flusher())
    events = Events(outbox)
    sub = Subscriber(outbox, {"s": after}, FieldsForm.object, multi=False)
    task = asyncio.create_task(follow(tails, sub))
    try:
        yield sub, events
    finally:
        outbox.close(CloseReason.DISCONNECTED)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await events.writer


@pytest.fixture
async def backend() -> Racing:
    return Racing()


@pytest.fixture
def tails(backend: Racing) -> Tails:
    return Tails(backend)


def tail_of(tails: Tails) -> StreamTail:
    return tails.by_key["s"]


async def delivered(tails: Tails, seq: int) -> None:
    await until_async(lambda: tail_of(tails).seq >= seq)


async def sentinel(backend: EmbeddedBackend, *all_events: Events) -> str:
    """Append one more entry and wait until every subscriber got it. Entries arrive in
    order, so a repeat of anything before it would have arrived before it: the barrier for
    "nothing arrives twice"."""
    [last] = await add(backend, 1, first=-1)
    await until_async(lambda: all(e.ids()[-1:] == [last] for e in all_events), what="sentinel")
    return last


async def test_entries_handed_out_while_the_last_read_returned_arrive_once(
    backend: Racing, tails: Tails
) -> None:
    history = await add(backend, 3)
    meanwhile: list[str] = []

    async def append_and_let_the_tail_deliver() -> None:
        meanwhile.extend(await add(backend, 1))
        await delivered(tails, 1)
        meanwhile.extend(await add(backend, 2))
        await delivered(tails, 2)

    backend.hook = append_and_let_the_tail_deliver
    async with subscribed(tails) as (sub, events):
        await until_async(lambda: sub.live)
        assert len(meanwhile) == 3 and tail_of(tails).seq == 2  # handed out before it joined
        later = await add(backend, 2)
        await until_async(lambda: len(events.ids()) >= 8)
        end = await sentinel(backend, events)  # a repeat would come before it
        assert events.ids() == history + meanwhile + later + [end]
        assert [kind for kind, _ in events.parsed()] == ["entry"] * 9


async def test_a_subscriber_ahead_of_the_tail_gets_nothing_twice(
    backend: Racing, tails: Tails
) -> None:
    """One live subscriber keeps the tail busy; another replays entries the tail has not
    handed out yet, then joins: the tail's later batch repeats nothing to it."""
    async with subscribed(tails) as (first, first_events):
        await until_async(lambda: first.live)
        ids = await add(backend, 4)  # the tail has not run yet: the next replay reads them
        async with subscribed(tails) as (second, second_events):
            await until_async(lambda: second.live and len(second_events.ids()) >= 4)
            more = await add(backend, 1)
            await until_async(lambda: len(first_events.ids()) == len(second_events.ids()) == 5)
            end = await sentinel(backend, first_events, second_events)  # repeats come before it
            assert first_events.ids() == second_events.ids() == ids + more + [end]


async def test_more_handed_out_than_the_tail_keeps_makes_the_subscriber_read_on(
    backend: Racing, tails: Tails, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tail_module, "RECENT_ENTRIES", 2)
    history = await add(backend, 2)
    meanwhile: list[str] = []

    async def five_batches() -> None:
        for seq in range(1, 6):
            meanwhile.extend(await add(backend, 1))
            await delivered(tails, seq)
        assert [b.seq for b in tail_of(tails).recent] == [4, 5]  # 1 to 3 are forgotten

    backend.hook = five_batches
    async with subscribed(tails) as (sub, events):
        await until_async(lambda: sub.live)
        later = await add(backend, 1)
        await until_async(lambda: len(events.ids()) >= 8)
        end = await sentinel(backend, events)  # a repeat would come before it
        assert events.ids() == history + meanwhile + later + [end]


async def test_gap_when_trimming_outran_the_joining_subscriber(
    backend: Racing, tails: Tails
) -> None:
    """While the subscriber's last read is on its way back, a burst is appended and trimmed
    before the tail reads it: the tail hands out a gap and what is left; the joining
    subscriber gets the same, once, after its history."""
    history = await add(backend, 3)
    burst: list[str] = []

    async def burst_then_trim() -> None:
        for i in range(5):  # five XADDs (as a pipeline runs them), then XTRIM, no pause
            burst.extend(await add(backend, 1, first=i))
        await backend.trim("s", TrimSpec(TrimStrategy.MAXLEN, maxlen=2))
        await delivered(tails, 1)

    backend.hook = burst_then_trim
    async with subscribed(tails) as (sub, events):
        await until_async(lambda: sub.live)
        later = await add(backend, 1)
        await until_async(lambda: len(events.ids()) >= 6)
        await sentinel(backend, events)  # a repeat would come before it
        assert events.parsed()[:-1] == [
            *(("entry", {"id": i, "fields": {"n": str(n)}}) for n, i in enumerate(history)),
            ("gap", {"after": history[-1], "first_id": burst[3]}),
            ("entry", {"id": burst[3], "fields": {"n": "3"}}),
            ("entry", {"id": burst[4], "fields": {"n": "4"}}),
            ("entry", {"id": later[0], "fields": {"n": "0"}}),
        ]
        batch = tail_of(tails).recent[0]
        assert batch.gap and [format_id(e.entry.id) for e in batch.entries] == burst[3:]


async def test_the_tail_stops_with_its_last_connection(backend: Racing, tails: Tails) -> None:
    async with subscribed(tails) as (sub, _):
        await until_async(lambda: sub.live)
        task = tail_of(tails).task
        assert backend.store.keyspace.blocked.count() == 1  # the tail's one blocked XREAD
    await until_async(task.done)
    assert not tails.by_key
    assert backend.store.keyspace.blocked.count() == 0


async def test_joining_with_a_small_outbox_loses_and_repeats_nothing(
    backend: Racing, tails: Tails
) -> None:
    """What the tail handed out before the join is pushed like a replay batch, whatever the
    outbox's bound (refused, the subscriber would read again, find nothing, and try again
    without ever letting the socket drain); live entries past the bound make the subscriber
    replay: all arrive once."""
    history = await add(backend, 3)
    meanwhile: list[str] = []

    async def burst() -> None:
        meanwhile.extend(await add(backend, 20))
        await delivered(tails, 1)
        # Gone from the stream: only the tail's memory of them is left for the subscriber.
        await backend.trim("s", TrimSpec(TrimStrategy.MAXLEN, maxlen=0))

    backend.hook = burst
    async with subscribed(tails, limit_bytes=200) as (sub, events):
        await until_async(lambda: sub.live)
        later = [i for _ in range(10) for i in await add(backend, 5)]
        await until_async(lambda: len(events.ids()) >= 73)
        end = await sentinel(backend, events)  # a repeat would come before it
        assert events.ids() == history + meanwhile + later + [end]


async def test_a_tail_rides_out_failing_reads_and_gives_up_with_an_error(
    backend: Racing, tails: Tails, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tail_module, "TAIL_RETRY_MS", 1)
    async with subscribed(tails) as (sub, events):
        await until_async(lambda: sub.live)
        # The parked read gets the first entry; the next TAIL_RETRIES reads fail: it carries on.
        backend.failing = tail_module.TAIL_RETRIES
        first = await add(backend, 1)
        await until_async(lambda: backend.failing == 0)
        ids = first + await add(backend, 2)
        await until_async(lambda: len(events.ids()) == 3)
        assert events.ids() == ids and sub.outbox.reason is None
        backend.failing = tail_module.TAIL_RETRIES + 1  # one more: it gives up
        await add(backend, 1)  # wakes its parked read; the next ones fail
        await until_async(lambda: sub.outbox.reason is not None)
        await events.writer  # what was pushed before the close is written, then it stops
        assert events.parsed()[-1][0] == "error"
        assert "unavailable" in events.parsed()[-1][1]["error"]


async def test_gaps_are_counted_again_after_the_stream_is_created_anew(
    backend: Racing, tails: Tails
) -> None:
    """A stream deleted and created again under a live tail starts its count afresh: a burst
    trimmed before the tail reads it is still a gap."""
    async with subscribed(tails) as (sub, events):
        await until_async(lambda: sub.live)
        old = await add(backend, 3)
        await until_async(lambda: len(events.ids()) == 3)
        await backend.delete_stream("s")
        # IDs past the old ones (a tail's cursor only goes up): the clock past their millisecond
        await until_async(lambda: time.time() * 1000 > int(old[-1].split("-")[0]), what="clock")
        anew = await add(backend, 1)
        await until_async(lambda: len(events.ids()) == 4)
        burst = [i for n in range(5) for i in await add(backend, 1, first=n)]
        await backend.trim("s", TrimSpec(TrimStrategy.MAXLEN, maxlen=2))
        await until_async(lambda: len(events.ids()) == 6)
        end = await sentinel(backend, events)  # a repeat would come before it
        assert events.ids() == old + anew + burst[3:] + [end]
        assert events.parsed()[4] == ("gap", {"after": anew[0], "first_id": burst[3]})
