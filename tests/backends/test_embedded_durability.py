"""The embedded backend keeps the request protocol's durability itself, for every surface:
a write is refused before it runs while storage cannot take it, and every answer, errors
included, waits for the records behind exactly the keys it is about (docs/architecture.md,
"The request protocol")."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import pytest

from app.backends.embedded import EmbeddedBackend
from app.backends.errors import StorageUnavailable
from app.engine.commands.reads import ReadRequest
from app.engine.commands.streams import RangeArgs, XAddArgs
from app.engine.errors import CommandError, NoGroup
from app.engine.ids import MAX_ID, MIN_ID, StreamID
from app.engine.store import Store
from app.engine.waiting import ClientGone
from tests.support.waiting import parked_async, until_async


class Gate:
    """A ``Durability`` that records what each answer waited for, and holds answers back
    until ``open`` is set (a commit that has not happened yet)."""

    def __init__(self) -> None:
        self.writable = True
        self.waited: list[list[str] | None] = []
        self.open = asyncio.Event()
        self.open.set()

    def check_writable(self) -> None:
        if not self.writable:
            raise StorageUnavailable("the database is down")

    async def wait_visible(self, keys: Iterable[str] | None) -> None:
        self.waited.append(None if keys is None else sorted(keys))
        await self.open.wait()


def run(scenario: object) -> None:
    asyncio.run(scenario)  # type: ignore[arg-type]


def test_a_write_is_refused_before_it_runs_and_nothing_is_applied() -> None:
    async def scenario() -> None:
        gate = Gate()
        b = EmbeddedBackend(Store(), durability=gate)
        gate.writable = False
        with pytest.raises(StorageUnavailable):
            await b.append([XAddArgs("s", ("a", "1"), StreamID(1, 0))])
        with pytest.raises(StorageUnavailable):
            await b.command(["XADD", "s", "2-0", "a", "1"])
        with pytest.raises(StorageUnavailable):
            await b.pipeline([["XLEN", "s"], ["XADD", "s", "3-0", "a", "1"]])
        with pytest.raises(StorageUnavailable):
            await b.multi_exec([["XADD", "s", "4-0", "a", "1"]])
        with pytest.raises(StorageUnavailable):  # a group read records deliveries: a write
            await b.read(ReadRequest(["s"], [">"], group="g", consumer="c"))
        assert b.store.keyspace.get("s") is None
        # Reads still answer while storage is away (they wait for what they show).
        assert await b.command(["XLEN", "s"]) == 0
        assert await b.range(RangeArgs("s", MIN_ID, MAX_ID)) == []

    run(scenario())


def test_an_answer_waits_for_its_own_keys_only() -> None:
    async def scenario() -> None:
        gate = Gate()
        b = EmbeddedBackend(Store(), durability=gate)
        await b.append([XAddArgs("s", ("a", "1"), StreamID(1, 0))])
        await b.command(["XADD", "t", "1-0", "a", "1"])
        await b.command(["XLEN", "s"])
        await b.command(["DBSIZE"])  # the whole keyspace
        await b.stream_infos(["s", "t"])
        assert gate.waited == [["s"], ["t"], ["s"], None, ["s", "t"]]

    run(scenario())


def test_an_answer_leaves_only_once_durable_errors_included() -> None:
    async def scenario() -> None:
        gate = Gate()
        b = EmbeddedBackend(Store(), durability=gate)
        await b.append([XAddArgs("s", ("a", "1"), StreamID(5, 0))])
        gate.open.clear()  # the commit has not happened yet
        add = asyncio.create_task(b.command(["XADD", "s", "6-0", "a", "1"]))
        refused = asyncio.create_task(b.command(["XADD", "s", "1-0", "a", "1"]))
        nogroup = asyncio.create_task(b.pending_summary("s", "nope"))
        # All three reached the gate (its wait is their last step), so none may be done.
        await until_async(lambda: len(gate.waited) == 4, what="three answers at the gate")
        assert not add.done() and not refused.done() and not nogroup.done()
        assert b.store.keyspace.get("s") is not None  # applied, only not answered yet
        gate.open.set()
        assert await add == StreamID(6, 0)
        with pytest.raises(CommandError, match="equal or smaller"):
            await refused
        with pytest.raises(NoGroup):  # a 404 shows state too: it waited
            await nogroup
        assert gate.waited[-3:] == [["s"], ["s"], ["s"]]

    run(scenario())


def test_a_pipeline_waits_once_for_every_key_it_names() -> None:
    async def scenario() -> None:
        gate = Gate()
        b = EmbeddedBackend(Store(), durability=gate)
        lines = [["XADD", "s", "*", "a", "1"]] * 3 + [["XADD", "t", "*", "a", "1"], ["PING"]]
        out = await b.pipeline(lines)
        assert len(out) == 5 and out[-1] is not None
        assert gate.waited == [["s", "t"]]  # one group commit, a run on one key named once

    run(scenario())


def test_a_refused_transaction_waits_for_nothing() -> None:
    async def scenario() -> None:
        gate = Gate()
        b = EmbeddedBackend(Store(), durability=gate)
        with pytest.raises(CommandError, match="EXECABORT"):
            await b.multi_exec([["XADD", "s", "*", "a", "1"], ["NOSUCH"]])
        assert gate.waited == []
        await b.multi_exec([["XADD", "s", "*", "a", "1"], ["XLEN", "t"]])
        assert gate.waited == [["s", "t"]]

    run(scenario())


def test_a_blocked_read_whose_client_left_stops_and_waits_for_nothing() -> None:
    async def scenario() -> None:
        gate = Gate()
        b = EmbeddedBackend(Store(), durability=gate)
        left = asyncio.Event()

        async def gone() -> None:
            await left.wait()

        for call in (
            b.read(ReadRequest(["s"], ["$"], block_ms=0), gone),
            b.command(["XREAD", "BLOCK", "0", "STREAMS", "s", "$"], gone),
            b.pipeline([["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]], gone),
        ):
            task = asyncio.ensure_future(call)
            await parked_async(b.store, 1)
            left.set()
            with pytest.raises(ClientGone):
                await asyncio.wait_for(task, 1)
            left.clear()
        assert gate.waited == []
        assert b.store.keyspace.blocked.count() == 0

    run(scenario())


def test_a_read_served_by_another_write_waits_for_that_write() -> None:
    async def scenario() -> None:
        gate = Gate()
        b = EmbeddedBackend(Store(), durability=gate)
        reader = asyncio.create_task(b.command(["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]))
        await parked_async(b.store, 1)
        gate.open.clear()
        writer = asyncio.create_task(b.command(["XADD", "s", "1-0", "a", "1"]))
        # Both reached the gate (its wait is their last step), so neither may be done.
        await until_async(lambda: len(gate.waited) == 2, what="both answers at the gate")
        assert not reader.done() and not writer.done()  # served, but not durable yet
        gate.open.set()
        (read,) = await reader
        assert read.key == "s" and [e.id for e in read.entries] == [StreamID(1, 0)]
        assert await writer == StreamID(1, 0)

    run(scenario())


def test_inside_answering_calls_answer_at_once_and_leaving_waits_once() -> None:
    async def scenario() -> None:
        gate = Gate()
        b = EmbeddedBackend(Store(), durability=gate)
        gate.open.clear()
        left = False

        async def respond() -> None:
            nonlocal left
            async with b.answering():
                await b.append([XAddArgs("s", ("a", "1"), StreamID(1, 0))])
                await b.range(RangeArgs("t", MIN_ID, MAX_ID))
                assert gate.waited == []  # the calls answered without waiting
            left = True

        task = asyncio.create_task(respond())
        # Leaving reached the gate (its wait is the last step), so the block is not left.
        await until_async(lambda: len(gate.waited) == 1, what="leaving at the gate")
        assert not left  # leaving waits: the answer is not durable yet
        gate.open.set()
        await task
        assert gate.waited == [["s", "t"]]

    run(scenario())


def test_answering_waits_on_an_error_but_not_for_a_client_gone() -> None:
    async def scenario() -> None:
        gate = Gate()
        b = EmbeddedBackend(Store(), durability=gate)
        with pytest.raises(NoGroup):
            async with b.answering():
                await b.pending_summary("s", "nope")
        assert gate.waited == [["s"]]
        with pytest.raises(ClientGone):
            async with b.answering():
                await b.range(RangeArgs("u", MIN_ID, MAX_ID))
                raise ClientGone
        assert gate.waited == [["s"]]
        # A task started inside the block is not the block's: its calls wait by themselves.
        async with b.answering():
            await asyncio.create_task(b.range(RangeArgs("v", MIN_ID, MAX_ID)))
        assert gate.waited == [["s"], ["v"]]

    run(scenario())
