"""A guarded append (``StreamsRole.append_guarded``) on both backends: the batch and the
record land together while the record's stream is as it was read, and nothing lands once it
is not. The Durable Streams surface rests on this for producers, Stream-Seq and close across
front-ends (app/api/ds/meta.py)."""

from __future__ import annotations

import pytest

from app.backends.redis import RedisBackend
from app.backends.roles import StreamsRole
from app.engine.clock import ManualClock
from app.engine.commands.guarded import Guard
from app.engine.commands.streams import RangeArgs, XAddArgs
from app.engine.errors import CommandError, WrongType
from app.engine.ids import MAX_ID, MIN_ID, StreamID
from app.engine.store import Store
from app.engine.stream import TrimSpec, TrimStrategy
from tests.engine.test_replay import Sink

DATA = "{orders}"
RECORD = "{orders}:ds-meta"  # one cluster slot with DATA
ONE = TrimSpec(TrimStrategy.MAXLEN, maxlen=1)


def rec(version: str) -> XAddArgs:
    return XAddArgs(RECORD, ("v", version), trim=ONE)


def entries(*bodies: str) -> list[XAddArgs]:
    return [XAddArgs(DATA, ("body", b)) for b in bodies]


async def everything(b: StreamsRole, key: str) -> list[tuple[str, ...]]:
    return [e.fields for e in await b.range(RangeArgs(key, MIN_ID, MAX_ID, None))]


async def top(b: StreamsRole, key: str) -> StreamID | None:
    last = await b.range(RangeArgs(key, MIN_ID, MAX_ID, 1), rev=True)
    return last[0].id if last else None


@pytest.mark.redis
async def test_a_decision_lands_only_on_the_record_it_was_taken_on(streams: StreamsRole) -> None:
    first = await streams.append_guarded(entries("a", "b"), Guard(RECORD, None), rec("1"))
    assert first is not None and len(first) == 2 and first[0] < first[1]  # type: ignore[operator]
    v1 = await top(streams, RECORD)
    assert v1 is not None
    # Two writers read version 1; the first to write wins, the second is told to decide again.
    assert await streams.append_guarded(entries("c"), Guard(RECORD, v1), rec("2")) is not None
    assert await streams.append_guarded(entries("d"), Guard(RECORD, v1), rec("2'")) is None
    assert await everything(streams, DATA) == [("body", x) for x in "abc"]
    assert await everything(streams, RECORD) == [("v", "2")]
    # A guard that expects no record fails once there is one.
    assert await streams.append_guarded([], Guard(RECORD, None), rec("x")) is None
    # An append that leaves the record alone is still guarded by it.
    v2 = await top(streams, RECORD)
    assert await streams.append_guarded(entries("e"), Guard(RECORD, v2)) is not None
    assert await streams.append_guarded(entries("f"), Guard(RECORD, v1)) is None
    assert await top(streams, RECORD) == v2  # no record given: none written
    # A record alone, and a guard on a stream that has none at all.
    assert await streams.append_guarded([], Guard(RECORD, v2), rec("3")) == []
    assert await everything(streams, RECORD) == [("v", "3")]
    assert await streams.append_guarded(entries("g"), Guard("{orders}:none", None)) is not None
    assert await everything(streams, DATA) == [("body", x) for x in "abceg"]


@pytest.mark.redis
async def test_a_batch_refused_leaves_the_record_as_it_was(streams: StreamsRole) -> None:
    await streams.append([XAddArgs(DATA, ("body", "top"), id=StreamID(5, 0))])
    low = [
        XAddArgs(DATA, ("body", "x"), id=StreamID(9, 0)),
        XAddArgs(DATA, ("y", "z"), id=StreamID(3, 0)),  # below the one before: refused
    ]
    with pytest.raises(CommandError):
        await streams.append_guarded(low, Guard(RECORD, None), rec("1"))
    assert await everything(streams, RECORD) == []
    assert await everything(streams, DATA) == [("body", "top")]
    # Planned IDs go in as planned when the guard holds.
    ok = [XAddArgs(DATA, ("body", "n"), id=StreamID(7, 0))]
    assert await streams.append_guarded(ok, Guard(RECORD, None), rec("1")) == [StreamID(7, 0)]


@pytest.mark.redis
async def test_a_record_key_holding_another_type_is_wrongtype(in_redis: RedisBackend) -> None:
    streams = in_redis  # the embedded keyspace holds streams only
    await streams.router.call_plain(RECORD, "SET", RECORD, "text")
    with pytest.raises(WrongType):
        await streams.append_guarded(entries("a"), Guard(RECORD, None), rec("1"))
    assert await everything(streams, DATA) == []


@pytest.mark.redis
async def test_calls_that_could_write_half_are_refused_before_anything(
    streams: StreamsRole,
) -> None:
    b = streams
    with pytest.raises(ValueError):  # the record to another key than the guard's
        await b.append_guarded([], Guard(RECORD, None), XAddArgs(DATA, ("v", "1")))
    with pytest.raises(ValueError):  # a record with an ID of its own could be refused
        await b.append_guarded([], Guard(RECORD, None), XAddArgs(RECORD, ("v", "1"), id=MAX_ID))
    with pytest.raises(ValueError):
        await b.append_guarded([*entries("a"), XAddArgs("other", ("f", "v"))], Guard(RECORD, None))
    # An entry that might not land (NOMKSTREAM on a missing key) would leave the record
    # claiming an append that did not happen.
    missing = XAddArgs(DATA, ("f", "v"), nomkstream=True)
    with pytest.raises(ValueError):
        await b.append_guarded([missing], Guard(RECORD, None), rec("1"))
    assert await everything(b, DATA) == [] and await everything(b, RECORD) == []


def test_the_step_is_one_journal_record_that_replays() -> None:
    from app.engine.commands.guarded import append_guarded
    from app.engine.snapshot import encode_snapshot

    sink = Sink()
    store = Store(clock=ManualClock(1000), journal=sink)
    store.run(append_guarded, entries("a", "b"), Guard(RECORD, None), rec("1"))
    assert store.run(append_guarded, entries("c"), Guard(RECORD, None), rec("2")) is None
    assert len(sink.records) == 1  # the refused step wrote nothing
    again = Store(clock=ManualClock(0))
    again.restore(None, sink.records)
    assert encode_snapshot(again.snapshot_view()) == encode_snapshot(store.snapshot_view())
