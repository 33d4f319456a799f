"""The stream commands Redis added after 7.0, through the Redis backend on every server.

Each sequence runs three times: on the embedded engine (the reference), through
``RedisBackend`` on redis-server 7.0 (the tests' database, where the backend answers them by
Lua scripts, app/backends/redis/newer.py), and through ``RedisBackend`` on redis-server 8.6
(``redis8_or_skip``, which has XDELEX, XACKDEL, the trim policies and XREADGROUP ... CLAIM:
they are passed through). Replies must be equal once idle times are masked. XNACK is 8.8's,
which no server here has: the backend emulates it on both, and whether a server reporting
8.8 gets it passed through is the version decision (``older``), tested as a pure function.
The visible differences of the emulation (README, "Stream commands newer than the Redis
server") are asserted
as such, so that they stay the only ones.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from app.api.errors import status_of
from app.backends.embedded import EmbeddedBackend
from app.backends.errors import NotAvailable
from app.backends.redis import RedisBackend
from app.backends.redis.features import Features, parse_version
from app.backends.redis.newer import older
from app.engine.commands.claims import ClaimArgs
from app.engine.commands.groups import PendingArgs
from app.engine.commands.nack import NackArgs, NackMode
from app.engine.commands.reads import ReadRequest
from app.engine.commands.streams import RangeArgs, XAddArgs
from app.engine.commands.table import lookup
from app.engine.commands.xadd_options import DEFAULT_LIMIT
from app.engine.errors import CommandError
from app.engine.ids import MAX_ID, MIN_ID, StreamID
from app.engine.limits import Limits
from app.engine.refs import RefPolicy
from app.engine.replies import (
    ClaimedEntry,
    ConsumerInfo,
    GroupInfo,
    PendingRow,
    PendingSummary,
    StreamRead,
)
from app.engine.store import Store
from app.engine.stream import TrimSpec, TrimStrategy
from app.engine.waiting import ClientGone
from tests.api.inproc import InprocCommands
from tests.backends.test_redis_backend import _standalone_url, norm
from tests.conftest import ReplyError
from tests.support.redis_servers import redis8_or_skip
from tests.support.waiting import until_async

pytestmark = pytest.mark.redis

EPOCH_IDLE_MS = 10**12  # an idle this long was delivered at time 0: an emulated XNACK's


# --- masking and comparing ----------------------------------------------------------------
def idle(ms: int) -> int:
    """An idle time as the tests compare it: -1 (released by XNACK; the emulation shows the
    time since the epoch), else 0 (time decides it)."""
    return -1 if ms < 0 or ms >= EPOCH_IDLE_MS else 0


def mask(x: Any) -> Any:
    """A typed reply with its idle times masked (``idle``) and the rest as ``norm`` makes it."""
    if isinstance(x, list | tuple) and not isinstance(x, StreamID):
        return [mask(v) for v in x]
    if isinstance(x, ClaimedEntry):
        return dataclasses.replace(x, idle_ms=idle(x.idle_ms))
    if isinstance(x, PendingRow | ConsumerInfo):
        return dataclasses.replace(x, idle_ms=idle(x.idle_ms))
    if isinstance(x, StreamRead):
        return dataclasses.replace(x, entries=mask(x.entries))
    if isinstance(x, GroupInfo):  # Redis 7.0 counts entries-read past a deleted entry short
        return dataclasses.replace(x, entries_read=None, lag=None)
    if hasattr(x, "__dataclass_fields__"):
        return norm(x)
    return x


def mask_raw(x: Any) -> Any:
    """A command endpoint reply with the idle of CLAIM rows and XPENDING rows masked."""
    if isinstance(x, list):
        if len(x) == 4 and isinstance(x[0], str) and isinstance(x[2], int):
            if isinstance(x[1], list):  # a CLAIM row: id, fields, idle, count
                return [x[0], x[1], idle(x[2]), x[3]]
            if isinstance(x[1], str):  # an XPENDING row: id, consumer, idle, count
                return [x[0], x[1], idle(x[2]), x[3]]
        return [mask_raw(v) for v in x]
    return x


def outcome(result: Any) -> Any:
    if isinstance(result, CommandError):
        return ("error", type(result).__name__, result.text)
    return mask(result)


class Trio:
    """The engine, the backend on Redis 7.0 (``old``) and on Redis 8.6 (``new``)."""

    def __init__(self, engine: EmbeddedBackend, old: RedisBackend, new: RedisBackend) -> None:
        self.engine, self.old, self.new = engine, old, new
        self.sides: list[EmbeddedBackend | RedisBackend] = [engine, old, new]

    async def get(self, side: Any, method: str, *args: Any) -> Any:
        try:
            return outcome(await getattr(side, method)(*args))
        except CommandError as e:
            return outcome(e)

    async def all(self, method: str, *args: Any) -> Any:
        """The same call on all three: equal outcomes."""
        got = [await self.get(side, method, *args) for side in self.sides]
        assert got[0] == got[1] == got[2], (method, args, got)
        return got[0]


@pytest.fixture(scope="module")
def new_url() -> Iterator[str]:
    with redis8_or_skip() as server:
        yield f"redis://127.0.0.1:{server.port}/0"


@pytest.fixture
async def old() -> AsyncIterator[RedisBackend]:
    b = RedisBackend.from_url(_standalone_url(), block_connections=4)
    await b.start()
    assert b.router.features is not None
    if b.router.features.ref_policies:
        pytest.skip("the tests' redis-server has the Redis 8 commands: nothing is emulated")
    yield b
    await b.close()


@pytest.fixture
async def new(new_url: str) -> AsyncIterator[RedisBackend]:
    b = RedisBackend.from_url(new_url, block_connections=4)
    await b.start()
    await b.command(["FLUSHDB"])
    assert b.router.features is not None and b.router.features.read_claim
    yield b
    await b.close()


@pytest.fixture
def trio(old: RedisBackend, new: RedisBackend) -> Trio:
    return Trio(EmbeddedBackend(Store()), old, new)


def sid(ms: int, seq: int = 0) -> StreamID:
    return StreamID(ms, seq)


def add(key: str, ms: int, **kw: Any) -> XAddArgs:
    return XAddArgs(key, ("f", str(ms)), id=sid(ms), **kw)


async def _setup(t: Trio, key: str, n: int, groups: dict[str, int]) -> None:
    """``n`` entries 1-0 .. n-0; each group reads the given count of them as consumer c."""
    await t.all("append", [add(key, ms) for ms in range(1, n + 1)])
    for g, count in groups.items():
        await t.all("create_group", key, g, "0", False, None)
        if count:
            await t.all("read", ReadRequest([key], [">"], count, group=g, consumer="c"))


# --- typed operations ---------------------------------------------------------------------
async def test_delete_with_policy_and_ack_delete(trio: Trio) -> None:
    await _setup(trio, "d", 8, {"g1": 4, "g2": 2})
    await trio.all("delete_with_policy", "d", [sid(1), sid(99)], RefPolicy.KEEPREF)
    await trio.all("pending", PendingArgs("d", "g1", MIN_ID, MAX_ID, 10))
    await trio.all("delete_with_policy", "d", [sid(2), sid(5)], RefPolicy.ACKED)  # 2, 2
    await trio.all("delete_with_policy", "d", [sid(2), sid(3)], RefPolicy.DELREF)
    await trio.all("pending", PendingArgs("d", "g1", MIN_ID, MAX_ID, 10))
    await trio.all("pending", PendingArgs("d", "g2", MIN_ID, MAX_ID, 10))
    await trio.all("ack_delete", "d", "g2", [sid(2), sid(4)], RefPolicy.ACKED)
    await trio.all("ack_delete", "d", "g1", [sid(4), sid(4), sid(6)], RefPolicy.ACKED)
    await trio.all("ack_delete", "d", "nogroup", [sid(5)], RefPolicy.DELREF)
    await trio.all("ack_delete", "nokey", "g1", [sid(5)], RefPolicy.DELREF)
    await trio.all("delete_with_policy", "nokey", [sid(1)], RefPolicy.ACKED)
    await trio.all("read", ReadRequest(["d"], [">"], group="g2", consumer="c"))
    await trio.all("ack_delete", "d", "g2", [sid(6), sid(7)], RefPolicy.KEEPREF)
    await trio.all("delete_with_policy", "d", [sid(8)], RefPolicy.ACKED)  # g1 has not read it
    await trio.all("range", RangeArgs("d", MIN_ID, MAX_ID))
    await trio.all("stream_info", "d")
    await trio.all("groups", "d")


async def test_acked_asks_the_groups_before_the_stream(trio: Trio) -> None:
    """redis-server 8.6 keeps (2) an ID a group has not delivered yet even when the stream
    does not hold it; the emulation answers as 8.6 does. (The embedded engine answers -1
    there: compared between the two servers only.)"""
    for side in (trio.old, trio.new):
        await side.append([add("a", 1), add("a", 5)])
        assert await side.delete_with_policy("a", [sid(3), sid(9)], RefPolicy.ACKED) == [-1, -1]
        await side.create_group("a", "g", "0", False, None)
        assert await side.delete_with_policy("a", [sid(3), sid(9)], RefPolicy.ACKED) == [2, 2]
        await side.read(ReadRequest(["a"], [">"], group="g", consumer="c"))
        assert await side.delete_with_policy("a", [sid(3), sid(9)], RefPolicy.ACKED) == [-1, 2]
        # XACKDEL: an entry deleted already, still pending in another group, is kept (2)
        await side.create_group("a", "h", "0", False, None)
        await side.read(ReadRequest(["a"], [">"], group="h", consumer="c"))
        assert await side.delete_entries("a", [sid(1)]) == 1
        assert await side.ack_delete("a", "g", [sid(1)], RefPolicy.ACKED) == [2]
        assert await side.ack_delete("a", "h", [sid(1)], RefPolicy.ACKED) == [1]


def spec(**kw: Any) -> TrimSpec:
    return TrimSpec(**kw)


async def test_trims_with_policies(trio: Trio) -> None:
    await _setup(trio, "t", 10, {"g": 6})
    maxlen = TrimStrategy.MAXLEN
    await trio.all("trim", "t", spec(strategy=maxlen, maxlen=8, policy=RefPolicy.KEEPREF))
    await trio.all("pending_summary", "t", "g")
    await trio.all("trim", "t", spec(strategy=maxlen, maxlen=6, policy=RefPolicy.DELREF))
    await trio.all("pending_summary", "t", "g")
    minid = spec(strategy=TrimStrategy.MINID, minid=sid(6), policy=RefPolicy.DELREF)
    await trio.all("trim", "t", minid)
    # `~` under DELREF trims exactly (the LIMIT cannot cut it here)
    approx = spec(strategy=maxlen, maxlen=3, approx=True, limit=DEFAULT_LIMIT)
    await trio.all("trim", "t", dataclasses.replace(approx, policy=RefPolicy.DELREF))
    await trio.all("pending", PendingArgs("t", "g", MIN_ID, MAX_ID, 10))
    # XADD with a trim: one entry, then a batch
    keep2 = spec(strategy=maxlen, maxlen=2, policy=RefPolicy.DELREF)
    await trio.all("append", [add("t", 11, trim=keep2)])
    await trio.all("read", ReadRequest(["t"], [">"], group="g", consumer="c"))
    await trio.all("append", [add("t", ms, trim=keep2) for ms in (12, 13, 14)])
    await trio.all(
        "append", [add("t", 15, trim=dataclasses.replace(keep2, policy=RefPolicy.KEEPREF))]
    )
    await trio.all("pending", PendingArgs("t", "g", MIN_ID, MAX_ID, 10))
    await trio.all("range", RangeArgs("t", MIN_ID, MAX_ID))
    await trio.all("stream_info", "t")
    await trio.all("trim", "nokey", keep2)
    # ACKED: the engine and Redis 8.6 agree; Redis 7.0 cannot trim so: a clear refusal
    acked = spec(strategy=maxlen, maxlen=1, policy=RefPolicy.ACKED)
    want = [await trio.get(s, "trim", "t", acked) for s in (trio.engine, trio.new)]
    assert want[0] == want[1]
    refused = await trio.get(trio.old, "trim", "t", acked)
    assert refused[:2] == ("error", "NotAvailable")
    assert refused[2].startswith("ERR XTRIM with ACKED needs Redis 8.2 or newer (this server is 7.")
    got = await trio.get(trio.old, "append", [add("t", 20, trim=acked)])
    assert got[1] == "NotAvailable" and "XADD with ACKED needs Redis 8.2" in got[2]
    assert await trio.old.range(RangeArgs("t", sid(20), sid(20))) == []  # nothing was added


async def test_delref_past_a_limit_is_refused_on_7_0(trio: Trio) -> None:
    """A `~` DELREF trim that its LIMIT could cut before a node: 7.0 cannot tell where
    Redis 8.2 would stop, so the backend refuses rather than guess."""
    await trio.old.append([add("big", ms) for ms in range(1, 301)])
    cut = spec(strategy=TrimStrategy.MAXLEN, maxlen=0, approx=True, limit=150)
    with pytest.raises(NotAvailable) as e:
        await trio.old.trim("big", dataclasses.replace(cut, policy=RefPolicy.DELREF))
    assert "XTRIM with DELREF and ~ past its LIMIT needs Redis 8.2" in e.value.text
    assert (await trio.old.stream_info("big")).header.length == 300  # nothing changed
    small = dataclasses.replace(cut, maxlen=290, policy=RefPolicy.DELREF)
    assert await trio.old.trim("big", small) == 10


async def test_claim_reads(trio: Trio) -> None:
    await _setup(trio, "c", 6, {"g": 4})
    # XCLAIM with IDLE makes idle times deterministic: 1 and 3 long idle, 2 longer
    await trio.all("claim", ClaimArgs("c", "g", "a", 0, [sid(1), sid(3)], idle_ms=3_600_000))
    await trio.all("claim", ClaimArgs("c", "g", "a", 0, [sid(2)], idle_ms=7_200_000))
    await trio.all("delete_entries", "c", [sid(3)])  # gone: skipped, stays pending
    read = ReadRequest(["c"], [">"], 2, group="g", consumer="b", claim_ms=60_000)
    got = await trio.all("read", read)
    assert [e.id for e in got[0].entries] == [sid(2), sid(1)]  # longest idle first
    assert [e.delivery_count for e in got[0].entries] == [2, 2]  # from before the claim
    await trio.all("read", dataclasses.replace(read, count=0))  # new entries: idle 0, count 0
    await trio.all("read", dataclasses.replace(read, count=0))  # nothing: nil
    await trio.all("pending", PendingArgs("c", "g", MIN_ID, MAX_ID, 10))
    # history reads ignore CLAIM
    await trio.all("read", dataclasses.replace(read, ids=["0"], count=0))
    await trio.all("read", dataclasses.replace(read, keys=["nokey"]))
    await trio.all("read", dataclasses.replace(read, group="nogroup"))
    await trio.all("read", dataclasses.replace(read, ids=["$"]))
    # two streams, NOACK for the new ones only
    await _setup(trio, "c2", 2, {"g": 1})
    await trio.all("claim", ClaimArgs("c2", "g", "a", 0, [sid(1)], idle_ms=3_600_000))
    both = ReadRequest(["c2", "c"], [">", ">"], group="g", consumer="z", noack=True, claim_ms=1)
    await trio.all("read", both)
    await trio.all("pending_summary", "c2", "g")


async def test_nack(trio: Trio) -> None:
    await _setup(trio, "n", 5, {"g": 5})
    await trio.all("ack", "n", "g", [sid(5)])
    await trio.all("nack", NackArgs("n", "g", NackMode.SILENT, [sid(1), sid(9)]))
    await trio.all("nack", NackArgs("n", "g", NackMode.FATAL, [sid(2)]))
    await trio.all("nack", NackArgs("n", "g", NackMode.FAIL, [sid(3)], retry_count=7))
    await trio.all("nack", NackArgs("n", "g", NackMode.FAIL, [sid(5), sid(8)], force=True))
    await trio.all("nack", NackArgs("n", "nogroup", NackMode.FAIL, [sid(1)]))
    await trio.all("nack", NackArgs("nokey", "g", NackMode.FAIL, [sid(1)]))
    await trio.all("pending", PendingArgs("n", "g", MIN_ID, MAX_ID, 10))
    # released entries come first to any claim, whatever its min-idle-time
    read = ReadRequest(["n"], [">"], 10, group="g", consumer="b", claim_ms=3_600_000)
    got = await trio.all("read", read)
    assert [e.id for e in got[0].entries] == [sid(1), sid(2), sid(3), sid(5)]
    assert [e.idle_ms for e in got[0].entries] == [-1, -1, -1, -1]
    assert [e.delivery_count for e in got[0].entries] == [0, 2**63 - 1, 7, 0]
    await trio.all("pending", PendingArgs("n", "g", MIN_ID, MAX_ID, 10))
    # the emulation's one visible trace: a consumer named "" owns the released entries
    for side in (trio.old, trio.new):
        await side.nack(NackArgs("n", "g", NackMode.SILENT, [sid(4)]))
    engine = await trio.engine.nack(NackArgs("n", "g", NackMode.SILENT, [sid(4)]))
    assert engine == 1
    summary = await trio.engine.pending_summary("n", "g")
    assert summary == PendingSummary(5, sid(1), sid(5), [("b", 4)])
    for side in (trio.old, trio.new):
        assert await side.pending_summary("n", "g") == PendingSummary(
            5, sid(1), sid(5), [("", 1), ("b", 4)]
        )


# --- the command endpoint: one command, a pipeline, a transaction --------------------------
COMMANDS: list[list[str]] = [
    ["XADD", "{s}", "1-0", "a", "1"],
    ["XADD", "{s}", "2-0", "a", "2"],
    ["XADD", "{s}", "3-0", "a", "3"],
    ["XADD", "{s}", "4-0", "a", "4"],
    ["XADD", "{s}", "5-0", "a", "5"],
    ["XGROUP", "CREATE", "{s}", "g1", "0"],
    ["XGROUP", "CREATE", "{s}", "g2", "0"],
    ["XREADGROUP", "GROUP", "g1", "c", "COUNT", "3", "STREAMS", "{s}", ">"],
    ["XREADGROUP", "GROUP", "g2", "c", "COUNT", "1", "STREAMS", "{s}", ">"],
    ["XDELEX", "{s}", "ACKED", "IDS", "2", "1", "2"],
    ["XDELEX", "{s}", "ACKED", "IDS", "1", "bad"],
    ["XDELEX", "{s}", "BOGUS", "IDS", "1", "bad"],
    ["XDELEX", "{s}", "IDS", "0", "1-0"],
    ["XDELEX", "{s}", "IDS", "2", "1"],
    ["XDELEX", "{s}", "ACKED", "DELREF", "IDS", "1", "1"],
    ["XDELEX", "{s}nokey", "IDS", "2", "bad", "x"],
    ["XACKDEL", "{s}", "g2", "ACKED", "IDS", "2", "1-0", "2-0"],
    ["XACKDEL", "{s}", "g1", "IDS", "2", "1-0", "2-0", "ACKED"],
    ["XACKDEL", "{s}", "nog", "IDS", "1", "3-0"],
    ["XACKDEL", "{s}", "g1", "IDS", "1", "bad"],
    ["XDELEX", "{s}", "DELREF", "IDS", "1", "3-0"],
    ["XPENDING", "{s}", "g1"],
    ["XDELEX", "{s}", "KEEPREF", "IDS", "2", "4-0", "4-0"],
    ["XLEN", "{s}"],
    ["XADD", "{s}t", "1-0", "f", "v"],
    ["XADD", "{s}t", "2-0", "f", "v"],
    ["XADD", "{s}t", "3-0", "f", "v"],
    ["XADD", "{s}t", "4-0", "f", "v"],
    ["XGROUP", "CREATE", "{s}t", "g", "0"],
    ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "{s}t", ">"],
    ["XTRIM", "{s}t", "MAXLEN", "2", "DELREF"],
    ["XPENDING", "{s}t", "g"],
    ["XADD", "{s}t", "MINID", "4", "DELREF", "5-0", "f", "v"],
    ["XPENDING", "{s}t", "g"],
    ["XTRIM", "{s}t", "MAXLEN", "1", "KEEPREF"],
    ["XTRIM", "{s}t", "MAXLEN", "1", "ACKED", "DELREF"],
    ["XADD", "{s}t", "DELREF", "DELREF", "*", "f", "v"],
    ["XADD", "{s}t", "NOMKSTREAM", "KEEPREF", "6-0", "f", "v"],
    ["XADD", "{s}none", "NOMKSTREAM", "MAXLEN", "1", "DELREF", "6-0", "f", "v"],
    ["XRANGE", "{s}t", "-", "+"],
    ["XADD", "{s}u", "1-0", "f", "v"],
    ["XADD", "{s}u", "2-0", "f", "v"],
    ["XADD", "{s}u", "3-0", "f", "v"],
    ["XGROUP", "CREATE", "{s}u", "g", "0"],
    ["XREADGROUP", "GROUP", "g", "a", "STREAMS", "{s}u", ">"],
    # XCLAIM ... IDLE makes idle times deterministic: 3-0 the longest, then 1-0
    ["XCLAIM", "{s}u", "g", "a", "0", "1-0", "IDLE", "3600000", "JUSTID"],
    ["XCLAIM", "{s}u", "g", "a", "0", "3-0", "IDLE", "7200000", "JUSTID"],
    ["XREADGROUP", "GROUP", "g", "b", "CLAIM", "60000", "STREAMS", "{s}u", ">"],
    ["XADD", "{s}u", "4-0", "f", "v"],
    ["XCLAIM", "{s}u", "g", "a", "0", "2-0", "IDLE", "5000000", "JUSTID"],
    ["XREADGROUP", "GROUP", "g", "b", "COUNT", "1", "CLAIM", "60000", "STREAMS", "{s}u", ">"],
    ["XREADGROUP", "GROUP", "g", "b", "COUNT", "5", "CLAIM", "60000", "STREAMS", "{s}u", ">"],
    ["XREADGROUP", "GROUP", "g", "b", "CLAIM", "-1", "STREAMS", "{s}u", ">"],
    ["XREADGROUP", "GROUP", "g", "b", "CLAIM", "x", "STREAMS", "{s}u", ">"],
    ["XREADGROUP", "GROUP", "g", "b", "CLAIM", "3600000", "STREAMS", "{s}u", ">"],
    ["XREADGROUP", "GROUP", "g", "b", "CLAIM", "0", "STREAMS", "{s}u", "0"],
    ["XREADGROUP", "GROUP", "nog", "b", "CLAIM", "0", "STREAMS", "{s}u", ">"],
    ["XREAD", "CLAIM", "0", "STREAMS", "{s}u", "0"],
    ["XNACK", "{s}u", "g", "SILENT", "IDS", "2", "1-0", "9-0"],
    ["XNACK", "{s}u", "g", "FATAL", "IDS", "1", "2-0"],
    ["XNACK", "{s}u", "nog", "FATAL", "IDS", "1", "2-0"],
    ["XNACK", "{s}u", "g", "FAIL", "IDS", "1", "9-0", "FORCE"],
    ["XNACK", "{s}u", "g", "FAIL", "IDS", "1", "3-0", "RETRYCOUNT", "-1"],
    ["XNACK", "{s}u", "g", "BAD", "IDS", "1", "3-0"],
    ["XNACK", "{s}u", "g", "FAIL", "IDS", "1", "3-0", "RETRYCOUNT", "5", "FORCE"],
    ["XPENDING", "{s}u", "g", "-", "+", "10"],
    ["XREADGROUP", "GROUP", "g", "c", "CLAIM", "3600000", "STREAMS", "{s}u", ">"],
]


def _error(r: Any) -> Any:
    if isinstance(r, ReplyError):
        return ("error", str(r))
    return mask_raw(r)


async def _embedded(embedded: InprocCommands, commands: list[list[str]]) -> list[Any]:
    return [_error(await asyncio.to_thread(embedded, *argv)) for argv in commands]


async def test_commands_as_the_engine_answers(old: RedisBackend, new: RedisBackend) -> None:
    embedded = InprocCommands()
    try:
        want = await _embedded(embedded, COMMANDS)
    finally:
        await asyncio.to_thread(embedded.client.close)
    for backend in (old, new):
        got = []
        for argv in COMMANDS:
            try:
                got.append(mask_raw(await backend.command(argv)))
            except CommandError as e:
                got.append(("error", e.text))
        for argv, w, g in zip(COMMANDS, want, got, strict=True):
            assert g == w, (backend.router.features, argv)


async def test_pipeline_and_transaction(old: RedisBackend, new: RedisBackend) -> None:
    embedded = InprocCommands()
    try:
        want = await _embedded(embedded, COMMANDS)
    finally:
        await asyncio.to_thread(embedded.client.close)
    for backend in (old, new):
        for run in (backend.pipeline, backend.multi_exec):
            await backend.command(["FLUSHDB"])
            got = [
                ("error", r.text) if isinstance(r, CommandError) else mask_raw(r)
                for r in await run(COMMANDS)
            ]
            assert got == want, (backend.router.features, run)
    # a refusal keeps its place in a pipeline
    acked = ["XTRIM", "{s}t", "MAXLEN", "1", "ACKED"]
    replies = await old.pipeline([["XLEN", "{s}t"], acked, ["XLEN", "{s}t"]])
    assert isinstance(replies[1], NotAvailable) and replies[0] == replies[2]


# --- blocking CLAIM reads on 7.0 -------------------------------------------------------------
async def test_a_blocked_claim_read_is_served_by_time(old: RedisBackend, new: RedisBackend) -> None:
    for side in (old, new):
        await side.append([add("b", 1)])
        await side.create_group("b", "g", "0", False, None)
        await side.read(ReadRequest(["b"], [">"], group="g", consumer="a"))
        start = time.monotonic()
        read = ReadRequest(["b"], [">"], group="g", consumer="z", block_ms=5000, claim_ms=300)
        got = await side.read(read)
        waited = time.monotonic() - start
        assert len(got) == 1 and [e.id for e in got[0].entries] == [sid(1)]
        assert isinstance(got[0].entries[0], ClaimedEntry)
        assert got[0].entries[0].delivery_count == 1
        assert 0.2 <= waited < 3, waited  # served when the entry turned idle enough
        # a write wakes it too, in the CLAIM shape
        task = asyncio.ensure_future(side.read(dataclasses.replace(read, claim_ms=600_000)))
        await asyncio.sleep(0.05)  # time itself is tested: the read waits
        await side.append([add("b", 2)])
        woke = await asyncio.wait_for(task, 5)
        assert woke[0].entries == [ClaimedEntry(sid(2), ("f", "2"), 0, 0)]
        # a timeout answers nothing
        start = time.monotonic()
        timed = dataclasses.replace(read, block_ms=200, claim_ms=600_000)
        assert await side.read(timed) == []
        assert time.monotonic() - start >= 0.19
        # the command endpoint's XREADGROUP ... BLOCK ... CLAIM takes the same path
        raw = ["XREADGROUP", "GROUP", "g", "z", "BLOCK", "100", "CLAIM", "1", "STREAMS", "b", ">"]
        got_raw = await side.command(raw)
        assert [[row[0] for row in rows] for _, rows in got_raw] == [["1-0", "2-0"]]
        assert all(len(row) == 4 for _, rows in got_raw for row in rows)


async def test_a_client_that_leaves_stops_a_blocked_claim_read(old: RedisBackend) -> None:
    await old.create_group("bye", "g", "$", True, None)
    left = asyncio.Event()

    async def gone() -> None:
        await left.wait()

    read = ReadRequest(["bye"], [">"], group="g", consumer="c", block_ms=0, claim_ms=1000)
    task = asyncio.ensure_future(old.read(read, gone))
    await until_async(lambda: old.blocking_reads.held == 1, what="the read waits in Redis")
    left.set()
    with pytest.raises(ClientGone):
        await asyncio.wait_for(task, 5)
    assert old.blocking_reads.held == 0


# --- the version decision, the error class -------------------------------------------------------
def _older(version: str, *argv: str) -> Any:
    return older(Features(parse_version(version)), Limits(), lookup(list(argv)), list(argv))


def test_each_command_follows_the_version_that_added_it() -> None:
    xnack = ["XNACK", "s", "g", "FAIL", "IDS", "1", "1-0"]
    claim = ["XREADGROUP", "GROUP", "g", "c", "CLAIM", "5", "STREAMS", "s", ">"]
    xdelex = ["XDELEX", "s", "DELREF", "IDS", "1", "1-0"]
    trim = ["XTRIM", "s", "MAXLEN", "1", "DELREF"]
    for version, emulated in (
        ("7.0.15", {"xnack", "claim", "xdelex", "trim"}),
        ("8.0.2", {"xnack", "claim", "xdelex", "trim"}),
        ("8.2.0", {"xnack", "claim"}),
        ("8.4.0", {"xnack"}),
        ("8.6.3", {"xnack"}),
        ("8.8.0", set()),
        ("255.255.255", set()),
    ):
        for name, argv in (("claim", claim), ("xdelex", xdelex), ("trim", trim)):
            sent = _older(version, *argv)
            assert (sent is not None) == (name in emulated), (version, name)
            if sent is not None:
                assert sent.line[0] == "EVAL"
        # XNACK is one script on every server (a group's delivery policy decides inside
        # it): the server's own XNACK without a policy where it has one (the native flag)
        sent = _older(version, *xnack)
        assert sent is not None and sent.line[0] == "EVAL"
        native = sent.line[3 + 2 + 4]
        assert native == ("0" if "xnack" in emulated else "1"), version
    # what names nothing newer goes as it is, on any server
    assert _older("7.0.15", "XTRIM", "s", "MAXLEN", "1") is None
    assert _older("7.0.15", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "claim", ">") is None
    # KEEPREF is the plain command without its token; ACKED a refusal
    keep = _older("7.0.15", "XTRIM", "s", "MAXLEN", "1", "KEEPREF")
    assert keep is not None and keep.line == ["XTRIM", b"s", "MAXLEN", "=", 1]
    acked = _older("7.0.15", "XTRIM", "s", "MAXLEN", "1", "ACKED")
    assert acked is not None and acked.line == ["PING"]
    with pytest.raises(NotAvailable) as e:
        acked.finish(b"PONG")
    assert e.value.text == "ERR XTRIM with ACKED needs Redis 8.2 or newer (this server is 7.0.15)"
    assert status_of(e.value) == 400


def test_the_version_a_server_reports() -> None:
    assert parse_version("7.0.15") == (7, 0, 15)
    assert parse_version("8.8.0-rc1") == (8, 8, 0)
    assert parse_version("8") == (8, 0, 0)
    f = Features((7, 0, 15), (100, 100))
    assert f.delref_exact(10, approx=False, limit=0)
    assert f.delref_exact(9900, approx=True, limit=10_000)
    assert not f.delref_exact(9901, approx=True, limit=10_000)
    assert not Features((7, 0, 15), None).delref_exact(1, approx=True, limit=10_000)
    assert f.default_limit == 10_000


async def test_the_backend_learns_its_servers_version(old: RedisBackend, new: RedisBackend) -> None:
    assert old.router.features is not None and old.router.features.version[0] == 7
    assert new.router.features is not None and new.router.features.version[:2] == (8, 6)
    assert not new.router.features.xnack and new.router.features.read_claim


# --- a Redis Cluster (7.0): one command of each family -----------------------------------------
@pytest.fixture
async def cluster(cluster_nodes: list[str]) -> AsyncIterator[RedisBackend]:
    import redis as redis_sync

    for node in cluster_nodes:
        host, port = node.split(":")
        client = redis_sync.Redis(host=host, port=int(port))
        client.flushdb()
        client.close()
    b = RedisBackend.from_url("redis+cluster://" + ",".join(cluster_nodes), block_connections=4)
    await b.start()
    yield b
    await b.close()


async def test_cluster(cluster: RedisBackend) -> None:
    assert cluster.router.features is not None
    if cluster.router.features.ref_policies:
        pytest.skip("the cluster's servers have the Redis 8 commands: nothing is emulated")
    engine = EmbeddedBackend(Store())
    keys = []
    i = 0
    while len({cluster.router.slot(k) for k in keys}) < 2:  # two keys on two slots
        key = f"k{i}"
        if not keys or cluster.router.slot(key) != cluster.router.slot(keys[0]):
            keys.append(key)
        i += 1
    results: list[list[Any]] = []
    for side in (engine, cluster):
        got: list[Any] = []
        for key in keys:
            await side.append([add(key, ms) for ms in range(1, 5)])
            await side.create_group(key, "g", "0", False, None)
            await side.read(ReadRequest([key], [">"], 3, group="g", consumer="a"))
            await side.claim(ClaimArgs(key, "g", "a", 0, [sid(1)], idle_ms=3_600_000))
        read = ReadRequest(keys, [">", ">"], group="g", consumer="b", claim_ms=60_000)
        got.append(mask(await side.read(read)))
        got.append(await side.delete_with_policy(keys[0], [sid(2)], RefPolicy.ACKED))
        got.append(await side.ack_delete(keys[0], "g", [sid(2), sid(3)], RefPolicy.DELREF))
        trim = spec(strategy=TrimStrategy.MAXLEN, maxlen=1, policy=RefPolicy.DELREF)
        got.append(await side.trim(keys[1], trim))
        got.append(await side.nack(NackArgs(keys[0], "g", NackMode.FAIL, [sid(1)])))
        got.append(mask(await side.pending(PendingArgs(keys[0], "g", MIN_ID, MAX_ID, 10))))
        got.append(mask(await side.pending(PendingArgs(keys[1], "g", MIN_ID, MAX_ID, 10))))
        results.append(got)
    assert results[0] == results[1]
    raw = await cluster.command(
        ["XREADGROUP", "GROUP", "g", "c", "CLAIM", "0", "STREAMS", *keys, ">", ">"]
    )
    assert [[row[0] for row in rows] for _, rows in raw] == [["1-0", "4-0"], ["4-0"]]
    with pytest.raises(CommandError) as e:
        await cluster.command(
            ["XREADGROUP", "GROUP", "nog", "c", "CLAIM", "0", "STREAMS", *keys, ">", ">"]
        )
    assert e.value.text.startswith(f"NOGROUP No such key '{keys[0]}'")
