"""A blocked XREADGROUP ... CLAIM read is served by time as well as by writes (Redis 8.4):
when a pending entry turns idle enough, or when XNACK releases one. The cases are Redis's own
(stream-cgroups.tcl, "XREADGROUP CLAIM with two blocked clients", "messages become
claimable during block", "XNACK XREADGROUP BLOCK CLAIM wakes up on NACKed entries"), on the
system clock, with idle times short enough for a test and long enough to be seen waiting.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from app.engine.replies import ClaimedEntry, StreamRead
from app.engine.store import Store
from app.engine.waiting import execute

IDLE_MS = 150


async def blocked(store: Store, consumer: str, *options: str) -> asyncio.Task[Any]:
    argv = ["XREADGROUP", "GROUP", "g", consumer, "BLOCK", "5000", *options]
    task = asyncio.ensure_future(execute(store, [*argv, "STREAMS", "s", ">"]))
    for _ in range(3):
        await asyncio.sleep(0)
    assert not task.done(), "the read did not block"
    return task


def claimed(reply: list[StreamRead]) -> list[tuple[str, int]]:
    """Each entry's ID and the delivery count it had before this read."""
    out = []
    for read in reply:
        for e in read.entries:
            assert isinstance(e, ClaimedEntry)
            out.append((f"{e.id.ms}-{e.id.seq}", e.delivery_count))
    return out


def test_the_second_of_two_blocked_readers_claims_what_the_first_left_idle() -> None:
    """Both wait; an XADD serves the first with the new entry, which the second then claims
    once it has been idle long enough, with no further write."""

    async def scenario() -> None:
        store = Store()
        store.execute(["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
        first = await blocked(store, "c1", "CLAIM", str(IDLE_MS))
        second = await blocked(store, "c2", "CLAIM", str(IDLE_MS))
        store.execute(["XADD", "s", "1-0", "f", "v"])
        assert claimed(await first) == [("1-0", 0)]  # new: never delivered before
        started = time.monotonic()
        assert not second.done()
        assert claimed(await asyncio.wait_for(second, 2)) == [("1-0", 1)]
        assert time.monotonic() - started >= (IDLE_MS - 20) / 1000
        pending = store.execute(["XPENDING", "s", "g", "-", "+", "10"])
        assert [(r.consumer, r.delivery_count) for r in pending] == [("c2", 2)]

    asyncio.run(scenario())


def test_a_release_wakes_a_blocked_claim_at_once() -> None:
    async def scenario() -> None:
        store = Store()
        store.execute(["XADD", "s", "1-0", "f", "v"])
        store.execute(["XGROUP", "CREATE", "s", "g", "0"])
        store.execute(["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">"])
        reader = await blocked(store, "c2", "CLAIM", "60000")
        store.execute(["XNACK", "s", "g", "FAIL", "IDS", "1", "1-0"])
        reply = await asyncio.wait_for(reader, 1)
        assert [(e.id.ms, e.idle_ms) for r in reply for e in r.entries] == [(1, -1)]

    asyncio.run(scenario())


def test_a_claim_read_waits_when_only_a_deleted_entry_is_pending() -> None:
    """A pending entry gone from the stream is never claimed, so it must not wake the read
    over and over: the read times out as one with nothing to claim."""

    async def scenario() -> None:
        store = Store()
        store.execute(["XADD", "s", "1-0", "f", "v"])
        store.execute(["XGROUP", "CREATE", "s", "g", "0"])
        store.execute(["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">"])
        store.execute(["XDEL", "s", "1-0"])
        argv = ["XREADGROUP", "GROUP", "g", "c2", "BLOCK", "200", "CLAIM", "0"]
        assert await execute(store, [*argv, "STREAMS", "s", ">"]) is None

    asyncio.run(scenario())
