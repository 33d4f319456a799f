"""Blocked XREAD / XREADGROUP: served by later writes, in arrival order, never leaked.

The error texts and the XREAD-after-DEL behaviour were checked against redis-server 7.0.15
with a blocked ``redis-cli`` in the background.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from app.engine.blocking import Block
from app.engine.clock import ManualClock
from app.engine.errors import CommandError, NoGroup
from app.engine.ids import StreamID
from app.engine.replies import StreamRead
from app.engine.store import Store
from app.engine.waiting import ClientGone, execute, wait
from tests.engine.helpers import ids, run

SHORT_MS = 30  # a BLOCK timeout that ends quickly
LONG_MS = 5000  # a BLOCK timeout the tests never reach


async def settle() -> None:
    """Let started tasks run up to their first wait."""
    for _ in range(3):
        await asyncio.sleep(0)


async def start(store: Store, *argv: str | int) -> asyncio.Task[Any]:
    """Start a blocking command as a task and check it did block."""
    task = asyncio.ensure_future(execute(store, [str(a) for a in argv]))
    await settle()
    assert not task.done(), f"{argv} did not block"
    return task


def read_ids(reply: Sequence[StreamRead]) -> dict[str, list[str]]:
    return {r.key: ids(r.entries) for r in reply}


def xreadgroup(consumer: str, block_ms: int = LONG_MS, *extra: str) -> list[str]:
    argv = ["XREADGROUP", "GROUP", "g", consumer, "BLOCK", str(block_ms), *extra]
    return [*argv, "STREAMS", "k", ">"]


@pytest.fixture
def grouped(store: Store) -> Store:
    run(store, "XADD", "k", "1-0", "f", "v")
    run(store, "XGROUP", "CREATE", "k", "g", "$")
    return store


def test_a_read_with_nothing_returns_a_block(grouped: Store) -> None:
    reply = grouped.execute(["XREAD", "BLOCK", "100", "STREAMS", "k", "$"])
    assert isinstance(reply, Block)
    assert (reply.keys, reply.timeout_ms) == (["k"], 100)
    assert grouped.keyspace.blocked.count() == 0  # nothing waits until someone awaits it
    # without BLOCK, or inside MULTI, the same read answers nil at once
    assert grouped.execute(["XREAD", "STREAMS", "k", "$"]) is None
    assert grouped.execute(["XREAD", "BLOCK", "100", "STREAMS", "k", "$"], may_block=False) is None


async def test_xread_block_served_by_a_later_xadd(store: Store) -> None:
    run(store, "XADD", "k", "1-0", "f", "v")
    task = await start(store, "XREAD", "BLOCK", LONG_MS, "STREAMS", "k", "$")
    assert store.keyspace.blocked.count() == 1
    run(store, "XADD", "k", "2-0", "f", "w")
    # served inside the XADD's step, before the loop runs again
    assert store.keyspace.blocked.count() == 0
    reply = await task
    assert read_ids(reply) == {"k": ["2-0"]}
    assert reply[0].entries[0].fields == ("f", "w")
    assert store.keyspace.blocked.count() == 0


async def test_xread_block_on_a_missing_key(store: Store) -> None:
    task = await start(store, "XREAD", "BLOCK", 0, "STREAMS", "k", "$")
    run(store, "XADD", "k", "1-0", "f", "v")
    assert read_ids(await task) == {"k": ["1-0"]}


async def test_xread_block_several_keys(store: Store) -> None:
    run(store, "XADD", "a", "1-0", "f", "v")
    run(store, "XADD", "b", "1-0", "f", "v")
    task = await start(store, "XREAD", "BLOCK", LONG_MS, "STREAMS", "a", "b", "$", "$")
    run(store, "XADD", "b", "2-0", "f", "v")
    assert read_ids(await task) == {"b": ["2-0"]}
    assert store.keyspace.blocked.count() == 0
    # the waiter is gone from both keys: a write to the other one serves nobody
    run(store, "XADD", "a", "2-0", "f", "v")
    assert store.keyspace.blocked.by_key == {}


async def test_every_xread_waiter_gets_the_entry(store: Store) -> None:
    run(store, "XADD", "k", "1-0", "f", "v")
    tasks = [await start(store, "XREAD", "BLOCK", LONG_MS, "STREAMS", "k", "$") for _ in range(3)]
    run(store, "XADD", "k", "2-0", "f", "v")
    for task in tasks:
        assert read_ids(await task) == {"k": ["2-0"]}


async def test_xread_block_after_an_explicit_id(store: Store) -> None:
    run(store, "XADD", "k", "5-0", "f", "v")
    task = await start(store, "XREAD", "BLOCK", LONG_MS, "STREAMS", "k", "7-0")
    run(store, "XADD", "k", "6-0", "f", "v")  # not after 7-0: keep waiting
    assert not task.done()
    run(store, "XADD", "k", "8-0", "f", "v")
    assert read_ids(await task) == {"k": ["8-0"]}


async def test_xreadgroup_waiters_share_entries_in_arrival_order(grouped: Store) -> None:
    tasks = [await start(grouped, *xreadgroup(f"c{i}")) for i in range(3)]
    assert grouped.keyspace.blocked.count() == 3
    for n in range(2, 5):
        run(grouped, "XADD", "k", f"{n}-0", "f", "v")
    replies = [await task for task in tasks]
    assert [read_ids(r) for r in replies] == [{"k": ["2-0"]}, {"k": ["3-0"]}, {"k": ["4-0"]}]
    owners = {str(r.id): r.consumer for r in run(grouped, "XPENDING", "k", "g", "-", "+", "10")}
    assert owners == {"2-0": "c0", "3-0": "c1", "4-0": "c2"}
    assert grouped.keyspace.blocked.count() == 0


async def test_one_xadd_serves_one_xreadgroup_waiter(grouped: Store) -> None:
    first = await start(grouped, *xreadgroup("c1"))
    second = await start(grouped, *xreadgroup("c2"))
    run(grouped, "XADD", "k", "2-0", "f", "v")
    assert grouped.keyspace.blocked.count() == 1
    assert read_ids(await first) == {"k": ["2-0"]}
    await settle()
    assert not second.done()
    run(grouped, "XADD", "k", "3-0", "f", "v")
    assert read_ids(await second) == {"k": ["3-0"]}


async def test_multi_exec_serves_waiters_after_exec(grouped: Store) -> None:
    # checked on redis-server 7.0.15: two blocked XREADGROUP (c1 then c2); MULTI, XADD 2-0,
    # XADD 3-0, EXEC -> c1 gets [2-0, 3-0] (clients are served after EXEC), c2 stays blocked
    # until XADD 4-0.
    first = await start(grouped, *xreadgroup("c1"))
    second = await start(grouped, *xreadgroup("c2"))
    results = grouped.execute_atomic(
        [["XADD", "k", "2-0", "f", "v"], ["XADD", "k", "3-0", "f", "v"]]
    )
    assert results == [StreamID(2, 0), StreamID(3, 0)]
    assert read_ids(await first) == {"k": ["2-0", "3-0"]}
    assert not second.done()
    run(grouped, "XADD", "k", "4-0", "f", "v")
    assert read_ids(await second) == {"k": ["4-0"]}


async def test_xreadgroup_block_count(grouped: Store) -> None:
    task = await start(grouped, *xreadgroup("c1", LONG_MS, "COUNT", "1"))
    run(grouped, "XADD", "k", "2-0", "f", "v")
    assert read_ids(await task) == {"k": ["2-0"]}


async def test_xreadgroup_noack_waiter(grouped: Store) -> None:
    task = await start(grouped, *xreadgroup("c1", LONG_MS, "NOACK"))
    run(grouped, "XADD", "k", "2-0", "f", "v")
    assert read_ids(await task) == {"k": ["2-0"]}
    assert run(grouped, "XPENDING", "k", "g").count == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["XREAD", "BLOCK", str(SHORT_MS), "STREAMS", "k", "$"],
        xreadgroup("c1", SHORT_MS),
    ],
    ids=["xread", "xreadgroup"],
)
async def test_timeout_gives_none(grouped: Store, argv: list[str]) -> None:
    loop = asyncio.get_running_loop()
    began = loop.time()
    assert await asyncio.wait_for(execute(grouped, argv), 2) is None
    assert loop.time() - began >= SHORT_MS / 1000 * 0.9
    assert grouped.keyspace.blocked.count() == 0
    # nothing is handed to the reader that timed out
    run(grouped, "XADD", "k", "2-0", "f", "v")
    assert run(grouped, "XPENDING", "k", "g").count == 0


async def test_a_timed_out_waiter_does_not_hold_up_the_others(grouped: Store) -> None:
    short = await start(grouped, *xreadgroup("c1", SHORT_MS))
    long = await start(grouped, *xreadgroup("c2"))
    assert await asyncio.wait_for(short, 2) is None
    run(grouped, "XADD", "k", "2-0", "f", "v")
    assert read_ids(await long) == {"k": ["2-0"]}
    assert {c.name for c in run(grouped, "XINFO", "CONSUMERS", "k", "g")} == {"c2"}


async def test_cancelled_waiter_leaves_nothing_behind(grouped: Store) -> None:
    task = await start(grouped, *xreadgroup("c1"))
    assert grouped.keyspace.blocked.count() == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert grouped.keyspace.blocked.count() == 0
    assert grouped.keyspace.blocked.by_key == {}
    run(grouped, "XADD", "k", "2-0", "f", "v")
    assert run(grouped, "XPENDING", "k", "g").count == 0
    assert run(grouped, "XPENDING", "k", "g", "-", "+", "10") == []
    assert run(grouped, "XINFO", "CONSUMERS", "k", "g") == []
    # the entry is still new for the group
    reply = run(grouped, "XREADGROUP", "GROUP", "g", "c2", "STREAMS", "k", ">")
    assert read_ids(reply) == {"k": ["2-0"]}


async def test_cancelled_waiter_among_others(grouped: Store) -> None:
    first = await start(grouped, *xreadgroup("c1"))
    second = await start(grouped, *xreadgroup("c2"))
    first.cancel()
    await settle()
    assert grouped.keyspace.blocked.count() == 1
    run(grouped, "XADD", "k", "2-0", "f", "v")
    assert read_ids(await second) == {"k": ["2-0"]}
    assert first.cancelled()


async def test_disconnected_client_is_unregistered(grouped: Store) -> None:
    gone = asyncio.Event()
    block = grouped.execute(xreadgroup("c1"))
    assert isinstance(block, Block)
    task = asyncio.ensure_future(wait(grouped, block, gone.wait))
    await settle()
    assert grouped.keyspace.blocked.count() == 1
    gone.set()
    with pytest.raises(ClientGone):
        await asyncio.wait_for(task, 2)
    assert grouped.keyspace.blocked.count() == 0
    run(grouped, "XADD", "k", "2-0", "f", "v")
    assert run(grouped, "XPENDING", "k", "g").count == 0


async def test_xgroup_destroy_wakes_xreadgroup_with_nogroup(grouped: Store) -> None:
    task = await start(grouped, *xreadgroup("c1"))
    assert run(grouped, "XGROUP", "DESTROY", "k", "g") == 1
    with pytest.raises(NoGroup) as info:
        await task
    assert info.value.text == (
        "NOGROUP the consumer group this client was blocked on no longer exists"
    )
    assert grouped.keyspace.blocked.count() == 0


async def test_del_wakes_xreadgroup_with_unblocked(grouped: Store) -> None:
    tasks = [await start(grouped, *xreadgroup(f"c{i}")) for i in range(2)]
    assert run(grouped, "DEL", "k") == 1
    for task in tasks:
        with pytest.raises(CommandError) as info:
            await task
        assert info.value.text == "UNBLOCKED the stream key no longer exists"
    assert grouped.keyspace.blocked.count() == 0


async def test_flushdb_wakes_xreadgroup_with_unblocked(grouped: Store) -> None:
    task = await start(grouped, *xreadgroup("c1"))
    run(grouped, "FLUSHDB")
    with pytest.raises(CommandError) as info:
        await task
    assert info.value.text == "UNBLOCKED the stream key no longer exists"


async def test_xread_keeps_waiting_after_del(store: Store) -> None:
    # checked on redis-server: XREAD BLOCK on k $ (last 5-0); DEL k; XADD k 1-0 -> still
    # blocked; XADD k 6-0 -> served with 6-0 only.
    run(store, "XADD", "k", "5-0", "f", "v")
    task = await start(store, "XREAD", "BLOCK", LONG_MS, "STREAMS", "k", "$")
    assert run(store, "DEL", "k") == 1
    await settle()
    assert not task.done()
    assert store.keyspace.blocked.count() == 1
    run(store, "XADD", "k", "1-0", "f", "v")
    await settle()
    assert not task.done()
    run(store, "XADD", "k", "6-0", "f", "v")
    assert read_ids(await task) == {"k": ["6-0"]}


async def test_xread_and_xreadgroup_waiters_on_one_key(grouped: Store) -> None:
    plain = await start(grouped, "XREAD", "BLOCK", LONG_MS, "STREAMS", "k", "$")
    group = await start(grouped, *xreadgroup("c1"))
    other = await start(grouped, *xreadgroup("c2"))
    run(grouped, "XADD", "k", "2-0", "f", "v")
    assert read_ids(await plain) == {"k": ["2-0"]}
    assert read_ids(await group) == {"k": ["2-0"]}
    assert not other.done()
    other.cancel()
    with pytest.raises(asyncio.CancelledError):
        await other


async def test_unrelated_writes_do_not_wake(grouped: Store) -> None:
    task = await start(grouped, *xreadgroup("c1"))
    run(grouped, "XADD", "other", "1-0", "f", "v")
    run(grouped, "XGROUP", "CREATECONSUMER", "k", "g", "c9")
    run(grouped, "XDEL", "k", "1-0")
    await settle()
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert grouped.keyspace.blocked.count() == 0


async def test_served_waiter_is_delivered_at_serve_time(grouped: Store, clock: ManualClock) -> None:
    # checked on redis-server: a blocked XREADGROUP creates its consumer only when served
    task = await start(grouped, *xreadgroup("c1"))
    assert run(grouped, "XINFO", "CONSUMERS", "k", "g") == []
    clock.advance(100)
    run(grouped, "XADD", "k", "2-0", "f", "v")
    await task
    clock.advance(7)
    [row] = run(grouped, "XPENDING", "k", "g", "-", "+", "10")
    assert (row.consumer, row.idle_ms, row.delivery_count) == ("c1", 7, 1)
    [consumer] = run(grouped, "XINFO", "CONSUMERS", "k", "g")
    assert (consumer.name, consumer.pending, consumer.idle_ms) == ("c1", 1, 7)
