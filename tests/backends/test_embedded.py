"""The embedded backend honours the Backend protocol: the same operations the command endpoint
runs, with the same replies and errors."""

from __future__ import annotations

import asyncio

import pytest

from app.backends import Backend
from app.backends.embedded import EmbeddedBackend
from app.engine.commands.reads import ReadRequest
from app.engine.commands.streams import RangeArgs, XAddArgs
from app.engine.errors import CommandError, NoGroup, NotFound
from app.engine.ids import MAX_ID, MIN_ID, StreamID
from app.engine.store import Store


def test_it_is_a_backend() -> None:
    assert isinstance(EmbeddedBackend(Store()), Backend)


def test_typed_operations_and_the_command_path_agree() -> None:
    async def scenario() -> None:
        b = EmbeddedBackend(Store())
        ids = await b.append([XAddArgs("s", ("a", "1"), StreamID(5, 0))])
        assert ids == [StreamID(5, 0)]
        assert await b.command(["XADD", "s", "6-0", "b", "2"]) == StreamID(6, 0)
        found = await b.range(RangeArgs("s", MIN_ID, MAX_ID))
        assert [e.id for e in found] == [StreamID(5, 0), StreamID(6, 0)]
        assert await b.range(RangeArgs("s", MIN_ID, MAX_ID, 1), rev=True) == found[1:]
        await b.create_group("s", "g", "0", False, None)
        (read,) = await b.read(ReadRequest(["s"], [">"], count=1, group="g", consumer="c"))
        assert [e.id for e in read.entries] == [StreamID(5, 0)]
        assert (await b.pending_summary("s", "g")).count == 1
        assert await b.ack("s", "g", [StreamID(5, 0)]) == 1
        with pytest.raises(NoGroup):
            await b.read(ReadRequest(["s"], [">"], group="nope", consumer="c"))
        with pytest.raises(CommandError, match="ERR The \\$ ID is meaningless"):
            await b.read(ReadRequest(["s"], ["$"], group="g", consumer="c"))

    asyncio.run(scenario())


def test_a_blocked_read_is_served_by_a_later_append() -> None:
    async def scenario() -> None:
        b = EmbeddedBackend(Store())
        await b.append([XAddArgs("s", ("a", "1"), StreamID(1, 0))])
        reader = asyncio.create_task(b.read(ReadRequest(["s"], ["$"], block_ms=0)))
        await asyncio.sleep(0)
        await b.append([XAddArgs("s", ("a", "2"), StreamID(2, 0))])
        (read,) = await asyncio.wait_for(reader, 1)
        assert [e.id for e in read.entries] == [StreamID(2, 0)]

    asyncio.run(scenario())


def test_group_lookup_and_create_without_mkstream() -> None:
    """``group`` answers one group, or NOGROUP naming key and group (XPENDING's text);
    ``create_group`` without MKSTREAM refuses a missing key as XGROUP CREATE does."""

    async def scenario() -> None:
        b = EmbeddedBackend(Store())
        with pytest.raises(NotFound) as caught:
            await b.create_group("s", "g", "0", False, None)
        assert caught.value.text == (await _command_error(b, ["XGROUP", "CREATE", "s", "g", "0"]))
        assert (await b.scan(0, None, None)).keys == []  # nothing was created
        with pytest.raises(NoGroup, match=r"^NOGROUP No such key 's' or consumer group 'g'$"):
            await b.group("s", "g")
        await b.create_group("s", "g", "0", True, None)
        await b.append([XAddArgs("s", ("a", "1"), StreamID(1, 0))])
        info = await b.group("s", "g")
        assert (info.name, info.consumers, info.pending, info.lag) == ("g", 0, 0, 1)
        assert [info] == await b.groups("s")
        with pytest.raises(NoGroup, match=r"^NOGROUP No such key 's' or consumer group 'x'$"):
            await b.group("s", "x")

    asyncio.run(scenario())


def test_a_read_request_pairs_its_keys_and_ids() -> None:
    with pytest.raises(CommandError, match=r"^ERR Unbalanced XREAD list of streams"):
        ReadRequest(["a", "b"], ["0"])


async def _command_error(b: EmbeddedBackend, argv: list[str]) -> str:
    with pytest.raises(CommandError) as caught:
        await b.command(argv)
    return caught.value.text
