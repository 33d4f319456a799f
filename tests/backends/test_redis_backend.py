"""RedisBackend against the engine: the same typed operations, the same typed replies.

Every scripted step runs twice: through the engine in process (the typed operations the
embedded backend calls, on a ``Store``) and through ``RedisBackend`` on redis-server (the
tests' database) or on a throwaway 3-master Redis Cluster. Replies must be equal once the
fields that depend on time or on Redis's internals alone are normalised (idle times,
delivery and seen times, the radix tree's node count). Errors must have the same class and
text. The command endpoint's pass-through is compared with the embedded endpoint's JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import redis as redis_sync

from app.backends.base import Backend
from app.backends.embedded import EmbeddedBackend
from app.backends.errors import BlockPoolExhausted, ReplicasUnavailable
from app.backends.redis import RedisBackend
from app.engine.commands import streams as st
from app.engine.commands.bulk import BatchItemError
from app.engine.commands.claims import AutoClaimArgs, ClaimArgs
from app.engine.commands.groups import PendingArgs
from app.engine.commands.reads import ReadRequest
from app.engine.commands.streams import RangeArgs, XAddArgs, XSetIdArgs
from app.engine.commands.xadd_options import DEFAULT_LIMIT
from app.engine.errors import CommandError, WrongType
from app.engine.ids import MAX_ID, MIN_ID, StreamID
from app.engine.json_codec import decode_json, encode_json
from app.engine.limits import Limits
from app.engine.replies import (
    ConsumerFull,
    ConsumerInfo,
    GroupFull,
    PendingDelivery,
    PendingRow,
    StreamFullInfo,
    StreamHeader,
    StreamInfo,
    StreamRead,
)
from app.engine.store import Store
from app.engine.stream import TrimSpec, TrimStrategy
from app.engine.waiting import ClientGone
from tests.api.inproc import InprocCommands
from tests.conftest import REDIS_DB, REDIS_HOST, REDIS_PORT, REQUIRE_SERVICES
from tests.support.waiting import blocked_behind, parked_async, until_async

pytestmark = pytest.mark.redis

DB = REDIS_DB


# --- the engine side is the embedded backend itself ---------------------------------------
def EngineRef() -> EmbeddedBackend:
    return EmbeddedBackend(Store())


# --- normalising and comparing ------------------------------------------------------------
def norm(x: Any) -> Any:
    """Replies with the fields that depend on time, or on Redis's radix tree, zeroed."""
    if isinstance(x, list | tuple) and not isinstance(x, StreamID):
        return [norm(v) for v in x]
    if isinstance(x, PendingRow | ConsumerInfo):
        return dataclasses.replace(x, idle_ms=0)
    if isinstance(x, PendingDelivery):
        return dataclasses.replace(x, delivered_at_ms=0)
    if isinstance(x, ConsumerFull):
        return dataclasses.replace(x, seen_time_ms=0, pending=norm(x.pending))
    if isinstance(x, GroupFull):
        return dataclasses.replace(x, pending=norm(x.pending), consumers=norm(x.consumers))
    if isinstance(x, StreamHeader):
        return dataclasses.replace(x, radix_tree_nodes=0)
    if isinstance(x, StreamInfo):
        return dataclasses.replace(x, header=norm(x.header))
    if isinstance(x, StreamFullInfo):
        return dataclasses.replace(x, header=norm(x.header), groups=norm(x.groups))
    return x


def outcome(result: Any) -> Any:
    if isinstance(result, BatchItemError):
        return ("error", "BatchItemError", result.index, result.text)
    if isinstance(result, CommandError):
        return ("error", type(result).__name__, result.text)
    return norm(result)


async def _parked(side: EmbeddedBackend | RedisBackend, backend_url: str) -> None:
    """Until one reader is blocked on ``side``: in the engine, or in Redis (every node of a
    cluster; the test's database of a standalone server)."""
    if isinstance(side, EmbeddedBackend):
        await until_async(lambda: side.store.keyspace.blocked.count() == 1, what="parked")
    else:
        await until_async(lambda: blocked_behind(backend_url) == 1, what="parked in Redis")


class Pair:
    """The engine and a RedisBackend side by side."""

    def __init__(self, engine: EmbeddedBackend, backend: RedisBackend) -> None:
        self.engine = engine
        self.redis = backend

    async def both(self, method: str, *args: Any, **kwargs: Any) -> Any:
        got = []
        for side in (self.engine, self.redis):
            try:
                got.append(outcome(await getattr(side, method)(*args, **kwargs)))
            except CommandError as e:
                got.append(outcome(e))
        assert got[0] == got[1], (method, args, got)
        return got[0]


# --- fixtures -----------------------------------------------------------------------------
def _standalone_url() -> str:
    client = redis_sync.Redis(host=REDIS_HOST, port=REDIS_PORT, db=DB)
    try:
        client.ping()
    except redis_sync.ConnectionError:
        msg = f"redis-server is not reachable on {REDIS_HOST}:{REDIS_PORT}"
        if REQUIRE_SERVICES:
            pytest.fail(msg + " and XSTREAMS_REQUIRE_SERVICES=1")
        pytest.skip(msg)
    client.flushdb()
    client.close()
    return f"redis://{REDIS_HOST}:{REDIS_PORT}/{DB}"


def _flush_cluster(nodes: list[str]) -> None:
    for node in nodes:
        host, port = node.split(":")
        client = redis_sync.Redis(host=host, port=int(port))
        client.flushdb()
        client.close()


@pytest.fixture(params=["standalone", "cluster"])
def backend_url(request: pytest.FixtureRequest) -> str:
    if request.param == "standalone":
        return _standalone_url()
    nodes: list[str] = request.getfixturevalue("cluster_nodes")
    _flush_cluster(nodes)
    return "redis+cluster://" + ",".join(nodes)


@pytest.fixture
async def backend(backend_url: str) -> AsyncIterator[RedisBackend]:
    b = RedisBackend.from_url(backend_url, block_connections=4)
    await b.start()
    yield b
    await b.close()


@pytest.fixture
def pair(backend: RedisBackend) -> Pair:
    return Pair(EngineRef(), backend)


def sid(ms: int, seq: int = 0) -> StreamID:
    return StreamID(ms, seq)


def add(key: str, ms: int, *fields: str, **kw: Any) -> XAddArgs:
    return XAddArgs(key, tuple(fields) or ("f", str(ms)), id=sid(ms), **kw)


async def _set_string(backend: RedisBackend, key: str) -> None:
    await backend.command(["DEL", key])
    # The command table has no SET: write the string key with redis-py directly.
    if backend.name == "redis":
        await backend.router.client.execute_command("SET", key.encode(), b"x")
    else:
        await backend.router.cluster_client.execute_command("SET", key.encode(), b"x")


# --- the protocol, step by step -----------------------------------------------------------
def test_the_protocol_is_implemented(backend: RedisBackend) -> None:
    assert isinstance(backend, Backend)
    assert backend.stateless and backend.name in ("redis", "redis-cluster")
    names = [n for n in dir(Backend) if not n.startswith("_") and n not in ("name", "stateless")]
    for name in names:
        assert callable(getattr(RedisBackend, name, None)), name


async def test_append_and_range(pair: Pair) -> None:
    await pair.both("append", [add("s", 1, "a", "1")])
    await pair.both("append", [add("s", 2), add("s", 3, "x", "\udcff\udcfe"), add("s", 5)])
    # all or none: the second entry's ID is too small, nothing is added
    await pair.both("append", [add("s", 6), add("s", 4)])
    await pair.both("append", [add("s", 5)])  # one entry, refused
    await pair.both("append", [XAddArgs("s", ("z", "0"), id=MIN_ID)])
    await pair.both("range", RangeArgs("s", MIN_ID, MAX_ID))
    await pair.both("range", RangeArgs("s", sid(2), sid(5), 2))
    await pair.both("range", RangeArgs("s", MIN_ID, MAX_ID, 2), rev=True)
    await pair.both("range", RangeArgs("s", MIN_ID, MAX_ID, 0))
    await pair.both("range", RangeArgs("nothing", MIN_ID, MAX_ID))
    # NOMKSTREAM: a missing stream stays missing, every entry answers None
    await pair.both("append", [add("n", 1, nomkstream=True), add("n", 2, nomkstream=True)])
    await pair.both("append", [add("n", 1, nomkstream=True)])
    await pair.both("range", RangeArgs("n", MIN_ID, MAX_ID))
    # ms-* takes the next sequence of that millisecond
    await pair.both("append", [XAddArgs("s", ("q", "1"), id=sid(9), seq_given=False)] * 3)
    await pair.both("stream_info", "s")


async def test_append_with_trim_and_auto_ids(pair: Pair) -> None:
    exact = TrimSpec(TrimStrategy.MAXLEN, maxlen=3)
    await pair.both("append", [add("t", ms, trim=exact) for ms in range(1, 8)])
    await pair.both("range", RangeArgs("t", MIN_ID, MAX_ID))
    minid = TrimSpec(TrimStrategy.MINID, minid=sid(6))
    await pair.both("append", [add("t", 8, trim=minid), add("t", 9)])
    approx = TrimSpec(TrimStrategy.MAXLEN, maxlen=10, approx=True, limit=100)
    batch = [add("big", ms, "f", "v" * 40) for ms in range(1, 251)]
    await pair.both("append", batch)
    await pair.both("trim", "big", approx)
    await pair.both("trim", "big", TrimSpec(TrimStrategy.MINID, minid=sid(240)))
    await pair.both("trim", "nothing", exact)
    # `~` without LIMIT: Redis's default limit (100 x stream-node-max-entries) on both
    await pair.both("append", [add("dl", ms, "f", "v" * 40) for ms in range(1, 20_001)])
    default = TrimSpec(TrimStrategy.MAXLEN, maxlen=0, approx=True, limit=DEFAULT_LIMIT)
    await pair.both("trim", "dl", default)
    await pair.both("stream_info", "dl")
    await pair.both("stream_info", "big")
    # `*` IDs: each side's clock decides them; both give increasing IDs, all added
    for side in (pair.engine, pair.redis):
        ids = await side.append([XAddArgs("auto", ("k", str(i))) for i in range(5)])
        assert all(isinstance(i, StreamID) for i in ids)
        assert ids == sorted(ids) and len(set(ids)) == 5
        one = await side.append([XAddArgs("auto", ("k", "one"))])
        assert one[0] is not None and one[0] > ids[-1]
        mixed = await side.append(
            [XAddArgs("auto", ("k", "x")), XAddArgs("auto", ("k", "y"), id=MAX_ID)]
        )
        assert mixed[1] == MAX_ID
        with pytest.raises(CommandError) as e:
            await side.append([XAddArgs("auto", ("k", "z")), XAddArgs("auto", ("k", "w"))])
        assert "exhausted" in e.value.text


async def test_delete_set_id_and_info(pair: Pair) -> None:
    await pair.both("append", [add("d", ms) for ms in range(1, 6)])
    await pair.both("delete_entries", "d", [sid(2), sid(4), sid(99)])
    await pair.both("delete_entries", "d", [])
    await pair.both("delete_entries", "nothing", [sid(1)])
    await pair.both("stream_info", "d")
    await pair.both("set_id", XSetIdArgs("d", sid(50), entries_added=10, max_deleted_id=sid(4)))
    await pair.both("set_id", XSetIdArgs("d", sid(1)))  # smaller than the top item
    await pair.both("set_id", XSetIdArgs("d", sid(60), entries_added=1))
    await pair.both("set_id", XSetIdArgs("nothing", sid(1)))
    await pair.both("stream_info", "d")
    await pair.both("stream_info", "nothing")
    await pair.both("stream_full_info", "d", 10)
    await pair.both("delete_stream", "d")
    await pair.both("delete_stream", "d")
    await pair.both("stream_info", "d")


async def test_scan_lists_streams(pair: Pair) -> None:
    names = [f"scan:{i}" for i in range(25)] + ["other", "b\udcff"]
    for name in names:
        await pair.both("append", [add(name, 1)])
    await _set_string(pair.redis, "a-string")  # not a stream: never listed
    for match, count in ((None, None), ("scan:*", 3), ("b*", 100), ("zz*", 5)):
        seen: list[set[str]] = []
        for side in (pair.engine, pair.redis):
            keys: set[str] = set()
            cursor = 0
            for _ in range(1000):
                page = await side.scan(cursor, match, count)
                keys.update(page.keys)
                cursor = page.cursor
                if cursor == 0:
                    break
            seen.append(keys)
        assert seen[0] == seen[1], (match, seen)


async def test_info_and_full_info_share_one_header(pair: Pair) -> None:
    """Both backends answer XINFO STREAM and XINFO STREAM FULL with one ``StreamHeader``, equal
    between the two replies and between the backends (radix-tree nodes aside)."""
    await pair.both("append", [add("h", ms) for ms in range(1, 8)])
    await pair.both("delete_entries", "h", [sid(3)])
    await pair.both("trim", "h", TrimSpec(TrimStrategy.MAXLEN, maxlen=4))
    await pair.both("set_id", XSetIdArgs("h", sid(9), entries_added=12, max_deleted_id=sid(8)))
    info = await pair.both("stream_info", "h")
    full = await pair.both("stream_full_info", "h", 0)
    assert isinstance(info.header, StreamHeader)
    assert info.header == full.header
    assert (info.header.length, info.header.entries_added) == (4, 12)
    assert info.header.max_deleted_entry_id == sid(8)


async def test_stream_infos_of_a_page(pair: Pair) -> None:
    """A page of keys in one call: each stream's XINFO STREAM, None for a missing key and for
    a key of another type (listed, then deleted or replaced, between SCAN and the call)."""
    keys = [f"page:{i}" for i in range(12)]
    for n, key in enumerate(keys):
        await pair.both("append", [add(key, ms) for ms in range(1, n + 2)])
    await pair.both("create_group", keys[3], "g", "0", False, None)
    await pair.both("delete_entries", keys[5], [sid(1)])
    await pair.both("append", [add("b\udcff", 7, "x", "\udcfe")])
    await pair.both("create_group", "empty", "g", "$", True, None)  # MKSTREAM: no entries
    await _set_string(pair.redis, "a-string")  # the engine has no strings: missing there
    asked = [keys[0], "missing", *keys[1:6], "a-string", "b\udcff", "empty", *keys[6:], keys[0]]
    got = await pair.both("stream_infos", asked)
    assert got == [
        None if k in ("missing", "a-string") else norm(await pair.engine.stream_info(k))
        for k in asked
    ]
    assert await pair.both("stream_infos", []) == []
    if pair.redis.name == "redis-cluster":  # the page really spans masters
        assert len({pair.redis.router.node(k).name for k in asked}) > 1  # type: ignore[union-attr]


async def test_groups_consumers_and_acks(pair: Pair) -> None:
    await pair.both("append", [add("q", ms) for ms in range(1, 6)])
    await pair.both("create_group", "q", "g1", "0", False, None)
    await pair.both("create_group", "q", "g1", "0", False, None)  # BUSYGROUP
    await pair.both("create_group", "q", "g2", "$", False, None)
    await pair.both("create_group", "q", "g3", "2-0", False, 2)
    await pair.both("create_group", "fresh", "g", "$", True, None)  # MKSTREAM
    await pair.both("create_group", "q", "bad", "nope", False, None)  # invalid ID
    await pair.both("groups", "q")
    await pair.both("groups", "nothing")
    await pair.both("group", "q", "g3")
    await pair.both("group", "q", "nope")  # NOGROUP, XPENDING's words
    await pair.both("group", "nothing", "g1")
    await pair.both("create_group", "nothing", "g", "$", False, None)  # no MKSTREAM: no key
    await pair.both("create_consumer", "q", "g1", "alice")
    await pair.both("create_consumer", "q", "g1", "alice")
    await pair.both("create_consumer", "q", "nogroup", "alice")
    await pair.both("create_consumer", "nothing", "g1", "alice")
    read = ReadRequest(["q"], [">"], count=2, group="g1", consumer="bob")
    await pair.both("read", read)
    await pair.both("read", ReadRequest(["q"], [">"], group="g1", consumer="carol"))
    await pair.both("read", ReadRequest(["q"], ["0-0"], group="g1", consumer="bob"))  # history
    await pair.both("read", ReadRequest(["q"], [">"], group="nogroup", consumer="bob"))
    await pair.both("consumers", "q", "g1")
    await pair.both("consumers", "q", "nogroup")
    await pair.both("consumers", "nothing", "g1")
    await pair.both("pending_summary", "q", "g1")
    await pair.both("pending_summary", "q", "g2")
    await pair.both("pending_summary", "q", "nogroup")
    await pair.both("ack", "q", "g1", [sid(1), sid(99)])
    await pair.both("ack", "q", "nogroup", [sid(2)])
    await pair.both("ack", "q", "g1", [])
    # an entry deleted while pending: history gives it as missing
    await pair.both("delete_entries", "q", [sid(2)])
    await pair.both("read", ReadRequest(["q"], ["0-0"], group="g1", consumer="bob"))
    await pair.both("groups", "q")
    await pair.both("set_group_id", "q", "g2", "0", None)
    await pair.both("set_group_id", "q", "g2", "$", 3)
    await pair.both("set_group_id", "q", "nogroup", "0", None)
    await pair.both("set_group_id", "nothing", "g2", "0", None)
    await pair.both("groups", "q")
    await pair.both("stream_full_info", "q", 10)
    await pair.both("stream_full_info", "q", 1)
    await pair.both("delete_consumer", "q", "g1", "carol")
    await pair.both("delete_consumer", "q", "g1", "nobody")
    await pair.both("delete_consumer", "q", "nogroup", "carol")
    await pair.both("destroy_group", "q", "g3")
    await pair.both("destroy_group", "q", "g3")
    await pair.both("destroy_group", "nothing", "g3")
    await pair.both("groups", "q")
    # NOACK: delivered, never pending
    await pair.both("append", [add("q", 10)])
    await pair.both("read", ReadRequest(["q"], [">"], group="g2", consumer="x", noack=True))
    await pair.both("pending_summary", "q", "g2")


async def test_pending_claim_and_autoclaim(pair: Pair) -> None:
    await pair.both("append", [add("p", ms) for ms in range(1, 9)])
    await pair.both("create_group", "p", "g", "0", False, None)
    await pair.both("read", ReadRequest(["p"], [">"], count=6, group="g", consumer="a"))
    everything = PendingArgs("p", "g", MIN_ID, MAX_ID, 100)
    await pair.both("pending", everything)
    await pair.both("pending", PendingArgs("p", "g", sid(2), sid(4), 2))
    await pair.both("pending", PendingArgs("p", "g", MIN_ID, MAX_ID, 100, consumer="a"))
    await pair.both("pending", PendingArgs("p", "g", MIN_ID, MAX_ID, 100, consumer="zed"))
    await pair.both("pending", PendingArgs("p", "g", MIN_ID, MAX_ID, 0))
    await pair.both("pending", PendingArgs("p", "nogroup", MIN_ID, MAX_ID, 10))
    # claims with IDLE make idle times deterministic: 1 and 2 become long idle
    long_idle = ClaimArgs("p", "g", "b", 0, [sid(1), sid(2)], idle_ms=3_600_000)
    await pair.both("claim", long_idle)
    await pair.both("pending", PendingArgs("p", "g", MIN_ID, MAX_ID, 100, min_idle_ms=600_000))
    await pair.both(
        "pending", PendingArgs("p", "g", MIN_ID, MAX_ID, 100, consumer="a", min_idle_ms=600_000)
    )
    # min-idle filter: 3 is fresh, not claimed; 1 is idle, claimed
    await pair.both("claim", ClaimArgs("p", "g", "c", 600_000, [sid(3), sid(1)]))
    await pair.both("claim", ClaimArgs("p", "g", "c", 0, [sid(4)], justid=True, retry_count=7))
    await pair.both("claim", ClaimArgs("p", "g", "c", 0, [sid(8)]))  # never delivered
    await pair.both("claim", ClaimArgs("p", "g", "c", 0, [sid(8)], force=True, justid=True))
    await pair.both("claim", ClaimArgs("p", "g", "d", 0, [sid(5)], time_ms=1_000, last_id=sid(7)))
    await pair.both("claim", ClaimArgs("p", "nogroup", "d", 0, [sid(5)]))
    await pair.both("claim", ClaimArgs("p", "g", "d", 0, []))
    await pair.both("groups", "p")
    await pair.both("pending_summary", "p", "g")
    # an entry deleted while pending: claiming drops it; XAUTOCLAIM reports it
    await pair.both("delete_entries", "p", [sid(6)])
    await pair.both("autoclaim", AutoClaimArgs("p", "g", "e", 0, MIN_ID, count=2))
    await pair.both("autoclaim", AutoClaimArgs("p", "g", "e", 0, sid(3), count=100, justid=True))
    await pair.both("autoclaim", AutoClaimArgs("p", "g", "e", 600_000, MIN_ID))
    await pair.both("autoclaim", AutoClaimArgs("p", "nogroup", "e", 0, MIN_ID))
    await pair.both("pending", everything)
    await pair.both("consumers", "p", "g")


async def test_reads(pair: Pair) -> None:
    await pair.both("append", [add("r1", ms) for ms in range(1, 4)])
    await pair.both("append", [add("r2", ms) for ms in range(5, 7)])
    await pair.both("read", ReadRequest(["r1", "r2", "missing"], ["0-0", "0-0", "0-0"]))
    await pair.both("read", ReadRequest(["r2", "r1"], ["5-0", "0-0"], count=1))
    await pair.both("read", ReadRequest(["r1"], ["3-0"]))
    await pair.both("read", ReadRequest(["r1"], ["3-0"], block_ms=50))  # times out: []


async def _parked(side: Backend, url: str) -> None:
    """Until one reader is blocked on ``side``: in its engine, or in the Redis behind it."""
    if isinstance(side, EmbeddedBackend):
        await parked_async(side.store, 1)
    else:
        await until_async(
            lambda: asyncio.to_thread(blocked_behind, url), what="a read blocked in Redis"
        )


async def test_block_woken_by_a_write(pair: Pair, backend_url: str) -> None:
    for side in (pair.engine, pair.redis):
        await side.append([add("w", 1)])
    results = []
    for side in (pair.engine, pair.redis):
        task = asyncio.ensure_future(
            side.read(ReadRequest(["other", "w"], ["0-0", "1-0"], block_ms=5000))
        )
        await _parked(side, backend_url)
        assert not task.done()
        await side.append([add("w", 2, "woke", "up")])
        results.append(await asyncio.wait_for(task, 5))
    assert results[0] == results[1]
    assert results[1] == [StreamRead("w", [st.Entry(sid(2), ("woke", "up"))])]


async def test_blocked_group_read_is_woken(pair: Pair, backend_url: str) -> None:
    results = []
    for side in (pair.engine, pair.redis):
        await side.create_group("gw", "g", "$", True, None)
        task = asyncio.ensure_future(
            side.read(ReadRequest(["gw"], [">"], group="g", consumer="c", block_ms=5000))
        )
        await _parked(side, backend_url)
        await side.append([add("gw", 7)])
        results.append(await asyncio.wait_for(task, 5))
        results.append(await side.pending_summary("gw", "g"))
    assert results[0] == results[2] and results[1] == results[3]


async def test_a_client_that_leaves_stops_its_blocking_read(backend: RedisBackend) -> None:
    left = asyncio.Event()

    async def gone() -> None:
        await left.wait()

    task = asyncio.ensure_future(backend.read(ReadRequest(["bye"], ["0-0"], block_ms=0), gone))
    await until_async(
        lambda: backend.blocking_reads.held == 1, what="the read holds its connection"
    )
    left.set()
    with pytest.raises(ClientGone):
        await asyncio.wait_for(task, 5)
    assert backend.blocking_reads.held == 0
    # the connection was closed, not reused: a later read on the pool sees only its reply
    await backend.append([add("bye", 1)])
    got = await backend.read(ReadRequest(["bye"], ["0-0"], block_ms=100))
    assert got == [StreamRead("bye", [st.Entry(sid(1), ("f", "1"))])]
    # cancelling the caller releases the connection too
    task = asyncio.ensure_future(backend.read(ReadRequest(["bye"], ["1-0"], block_ms=0)))
    await until_async(
        lambda: backend.blocking_reads.held == 1, what="the read holds its connection"
    )
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert backend.blocking_reads.held == 0


async def test_a_cancellation_redis_py_drops_still_reaches_the_caller(
    backend: RedisBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On Python 3.11 redis-py's send (``asyncio.wait_for``) may return and drop a
    cancellation that lands as the send completes (CPython gh-86296): the caller must still
    be cancelled, or a task told to stop (an event stream whose client left) runs on.
    redis-py's path serves a command the multiplexer does not (a cluster's redirect); the
    multiplexer's own path awaits no ``wait_for`` and is cancelled at random below."""
    backend.router.multiplex = False
    client: Any = (
        backend.router.client if backend.name == "redis" else backend.router.cluster_client
    )
    real = client.execute_command
    dropped = 0
    inside, never = asyncio.Event(), asyncio.Event()

    async def dropping(*args: Any, **kwargs: Any) -> Any:
        nonlocal dropped
        inside.set()
        try:
            await never.wait()
        except asyncio.CancelledError:
            dropped += 1  # as wait_for does when its inner future is done
        return await real(*args, **kwargs)

    monkeypatch.setattr(client, "execute_command", dropping)
    task = asyncio.ensure_future(backend.range(RangeArgs("gone", MIN_ID, MAX_ID, None)))
    await inside.wait()  # cancelled while the call is under way
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert dropped == 1
    monkeypatch.undo()
    # The real client, cancelled at random moments: every cancelled call raises.
    for multiplex in (False, True):
        backend.router.multiplex = multiplex
        await _cancelled_at_random(backend)


async def _cancelled_at_random(backend: RedisBackend) -> None:
    returned = 0
    for i in range(300):
        task = asyncio.ensure_future(backend.range(RangeArgs("gone", MIN_ID, MAX_ID, None)))
        await asyncio.sleep(0.0005 * (i % 4))  # time is the point: cancelled at random moments
        cancelled = task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            continue
        returned += cancelled
    assert returned == 0
    assert await backend.range(RangeArgs("gone", MIN_ID, MAX_ID, None)) == []


async def test_blocking_reads_are_bounded(backend: RedisBackend) -> None:
    reads_ = [
        asyncio.ensure_future(backend.read(ReadRequest([f"{{b}}{i}"], ["0-0"], block_ms=0)))
        for i in range(4)
    ]
    await until_async(
        lambda: backend.blocking_reads.held == 4, what="4 reads hold their connections"
    )
    with pytest.raises(BlockPoolExhausted) as e:
        await backend.read(ReadRequest(["{b}x"], ["0-0"], block_ms=0))
    assert e.value.code == "BUSY"
    with pytest.raises(BlockPoolExhausted):
        await backend.command(["XREAD", "BLOCK", "0", "STREAMS", "{b}x", "0"])
    for t in reads_:
        t.cancel()
    await asyncio.gather(*reads_, return_exceptions=True)
    assert backend.blocking_reads.held == 0
    assert await backend.read(ReadRequest(["{b}x"], ["0-0"], block_ms=10)) == []


async def test_a_cancellation_dropped_while_connecting_still_ends_a_blocking_read(
    backend: RedisBackend,
) -> None:
    """On Python 3.11 redis-py's connect handshake sends through ``wait_for``, which may drop
    a cancellation that arrives as the send completes (CPython gh-86296). A read cancelled
    then must end all the same, not go on to send its BLOCK 0 and hold a connection for ever."""
    key = "{b}dropped"
    pool = backend.blocking_reads._block_pool(backend.router.node(key))
    real = pool.get_connection
    entered = asyncio.Event()

    async def dropping(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        with contextlib.suppress(asyncio.CancelledError):  # dropped, as wait_for on 3.11 may
            await asyncio.Event().wait()
        return await real(*args, **kwargs)

    pool.get_connection = dropping  # type: ignore[method-assign]
    read = asyncio.ensure_future(backend.read(ReadRequest([key], ["0-0"], block_ms=0)))
    await entered.wait()
    read.cancel()
    async with asyncio.timeout(10):
        (outcome,) = await asyncio.gather(read, return_exceptions=True)
    assert isinstance(outcome, asyncio.CancelledError)
    assert backend.blocking_reads.held == 0


async def test_wrongtype_from_a_string_key(backend: RedisBackend) -> None:
    await _set_string(backend, "str")
    calls: list[Callable[[], Awaitable[Any]]] = [
        lambda: backend.append([add("str", 1)]),
        lambda: backend.append([add("str", 1), add("str", 2)]),
        lambda: backend.range(RangeArgs("str", MIN_ID, MAX_ID)),
        lambda: backend.stream_info("str"),
        lambda: backend.create_group("str", "g", "$", False, None),
        lambda: backend.read(ReadRequest(["str"], ["0-0"])),
        lambda: backend.trim("str", TrimSpec(TrimStrategy.MAXLEN, maxlen=1)),
        lambda: backend.delete_stream("str"),
    ]
    for call in calls:
        with pytest.raises(WrongType) as e:
            await call()
        assert e.value.text == "WRONGTYPE Operation against a key holding the wrong kind of value"


async def test_wait_replicas_without_replicas(backend_url: str) -> None:
    b = RedisBackend.from_url(backend_url, wait_replicas=1, wait_timeout_ms=10)
    await b.start()
    try:
        with pytest.raises(ReplicasUnavailable) as e:
            await b.append([add("{w}r", 1)])
        assert e.value.text == "NOREPLICAS Not enough good replicas to write."
        # the write itself happened (Redis has no undo); reads need no replicas
        assert [x.id for x in await b.range(RangeArgs("{w}r", MIN_ID, MAX_ID))] == [sid(1)]
        with pytest.raises(ReplicasUnavailable):
            await b.append([add("{w}r", 2), add("{w}r", 3)])
        with pytest.raises(ReplicasUnavailable):
            await b.command(["XADD", "{w}r", "9-0", "a", "b"])
        with pytest.raises(ReplicasUnavailable):
            await b.multi_exec([["XADD", "{w}r", "10-0", "a", "b"], ["XLEN", "{w}r"]])
        with pytest.raises(ReplicasUnavailable):
            await b.pipeline([["XADD", "{w}r", "11-0", "a", "b"], ["XLEN", "{w}r"]])
        with pytest.raises(ReplicasUnavailable):
            await b.delete_entries("{w}r", [sid(11)])
        assert await b.command(["XLEN", "{w}r"]) == 5
        assert await b.pipeline([["XLEN", "{w}r"]]) == [5]  # no write, no WAIT
    finally:
        await b.close()


# --- the command endpoint -----------------------------------------------------------------
COMMANDS: list[list[str]] = [
    ["PING"],
    ["PING", "hello"],
    ["ECHO", "\udcff bytes"],
    ["XADD", "c", "1-1", "a", "1", "b", "2"],
    ["XADD", "c", "1-1", "a", "1"],
    ["XADD", "c", "0-0", "a", "1"],
    ["XADD", "c", "2-*", "a", "1"],
    ["XADD", "c", "NOMKSTREAM", "5-0", "a", "1"],
    ["XADD", "c", "MAXLEN", "=", "10", "6-0", "a", "1"],
    ["XADD", "nope", "NOMKSTREAM", "*", "a", "1"],
    ["XADD", "c", "bad-id", "a", "1"],
    ["XADD", "c", "7-0", "a"],
    ["XLEN", "c"],
    ["XRANGE", "c", "-", "+"],
    ["XRANGE", "c", "(1-1", "+", "COUNT", "1"],
    ["XRANGE", "c", "-", "+", "COUNT", "0"],
    ["XREVRANGE", "c", "+", "-", "COUNT", "2"],
    ["XRANGE", "c", "x", "+"],
    ["XRANGE", "nothing", "-", "+"],
    ["XREAD", "COUNT", "2", "STREAMS", "c", "nothing", "0", "0"],
    ["XREAD", "STREAMS", "c", "$"],
    ["XREAD", "STREAMS", "c"],
    ["XGROUP", "CREATE", "c", "g", "0"],
    ["XGROUP", "CREATE", "c", "g", "0"],
    ["XGROUP", "CREATE", "nothing", "g", "0"],
    ["XGROUP", "CREATECONSUMER", "c", "g", "alice"],
    ["XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", "c", ">"],
    ["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "c", "0"],
    ["XREADGROUP", "GROUP", "nogroup", "bob", "STREAMS", "c", ">"],
    ["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "c", "$"],
    ["XPENDING", "c", "g"],
    ["XPENDING", "c", "nogroup"],
    ["XCLAIM", "c", "g", "carol", "0", "1-1", "JUSTID"],
    ["XAUTOCLAIM", "c", "g", "dave", "0", "0", "COUNT", "1", "JUSTID"],
    ["XACK", "c", "g", "1-1", "9-9"],
    ["XINFO", "GROUPS", "c"],
    ["XINFO", "STREAM", "nothing"],
    ["XINFO", "HELP"],
    ["XGROUP", "HELP"],
    ["XGROUP", "SETID", "c", "g", "0", "ENTRIESREAD", "0"],
    ["XGROUP", "DELCONSUMER", "c", "g", "alice"],
    ["XGROUP", "DESTROY", "c", "g"],
    ["XGROUP", "NOSUCH", "c"],
    ["XDEL", "c", "2-1"],
    ["XTRIM", "c", "MAXLEN", "1"],
    ["XTRIM", "c", "LIMIT", "1"],
    ["XSETID", "c", "100-0"],
    ["XSETID", "c", "1-0"],
    ["EXISTS", "c", "nothing"],
    ["TYPE", "c"],
    ["TYPE", "nothing"],
    ["DBSIZE"],
    ["KEYS", "*"],
    ["DEL", "c", "nothing"],
    ["NOSUCHCOMMAND", "a"],
    ["XADD", "c"],
    ["XLEN"],
]


async def test_commands_pass_through_as_the_embedded_endpoint_answers(
    backend: RedisBackend,
) -> None:
    embedded = InprocCommands()
    try:
        for argv in COMMANDS:
            want = await asyncio.to_thread(embedded, *argv)  # it runs a loop of its own
            try:
                got = await backend.command(argv)
            except CommandError as e:
                got = ("error", e.text)
            if isinstance(want, str) and type(want).__name__ == "ReplyError":
                want = ("error", str(want))
            assert got == want, argv
    finally:
        await asyncio.to_thread(embedded.client.close)


async def test_pipeline_and_multi_exec(backend: RedisBackend) -> None:
    embedded = InprocCommands()
    try:
        commands = [
            ["XADD", "{m}a", "1-0", "f", "v"],
            ["XADD", "{m}a", "1-0", "f", "v"],
            ["XLEN", "{m}a"],
            ["XRANGE", "{m}b", "-", "+"],
            ["XREADGROUP", "GROUP", "g", "c", "BLOCK", "10", "STREAMS", "{m}a", ">"],
            ["XGROUP", "CREATE", "{m}a", "g", "0"],
            ["XADD", "{m}a", "2-0", "f", "\udcff"],
            ["XREADGROUP", "GROUP", "g", "c", "BLOCK", "10", "STREAMS", "{m}a", ">"],
            ["XREAD", "BLOCK", "10", "STREAMS", "{m}a", "$"],
        ]
        pipeline_only = [["NOSUCH", "x"], ["XLEN"], ["PING"]]
        for path, run, sent in (
            ("/pipeline", backend.pipeline, commands + pipeline_only),
            ("/pipeline", backend.pipeline, [c for c in commands if "BLOCK" not in c]),
            ("/multi-exec", backend.multi_exec, commands),
        ):
            await backend.command(["DEL", "{m}a"])
            await asyncio.to_thread(embedded, "DEL", "{m}a")
            body = encode_json(sent)  # \udcNN escapes: bytes that are not UTF-8
            answer = await asyncio.to_thread(embedded.client.post, path, content=body)
            want = decode_json(answer.content)
            got = await run(sent)
            assert [
                {"error": r.text} if isinstance(r, CommandError) else {"result": r} for r in got
            ] == want, path
        # an unknown command discards the whole transaction, as Redis's EXECABORT
        with pytest.raises(CommandError) as e:
            await backend.multi_exec([["XLEN", "{m}a"], ["NOSUCH"]])
        refused = await asyncio.to_thread(
            embedded.client.post, "/multi-exec", json=[["XLEN", "{m}a"], ["NOSUCH"]]
        )
        assert e.value.text == refused.json()["error"]
    finally:
        await asyncio.to_thread(embedded.client.close)


async def test_command_block_waits_and_wakes(backend: RedisBackend, backend_url: str) -> None:
    assert await backend.command(["XREAD", "BLOCK", "50", "STREAMS", "cb", "$"]) is None
    task = asyncio.ensure_future(
        backend.command(["XREAD", "BLOCK", "5000", "STREAMS", "cb", "other", "$", "$"])
    )
    await _parked(backend, backend_url)
    await backend.command(["XADD", "cb", "5-0", "k", "v"])
    assert await asyncio.wait_for(task, 5) == [["cb", [["5-0", ["k", "v"]]]]]


# --- Redis Cluster ------------------------------------------------------------------------
@pytest.fixture
async def cluster(cluster_nodes: list[str]) -> AsyncIterator[RedisBackend]:
    _flush_cluster(cluster_nodes)
    b = RedisBackend.from_url("redis+cluster://" + ",".join(cluster_nodes), block_connections=8)
    await b.start()
    yield b
    await b.close()


def _spread(b: RedisBackend, n: int) -> list[str]:
    """``n`` keys in ``n`` different slots on different masters where there are enough."""
    keys: list[str] = []
    nodes: set[str] = set()
    i = 0
    while len(keys) < n:
        key = f"k{i}"
        node = b.router.node(key)
        assert node is not None
        if node.name not in nodes or len(nodes) >= 3:
            keys.append(key)
            nodes.add(node.name)
        i += 1
    return keys


async def test_cluster_reads_across_slots(cluster: RedisBackend) -> None:
    assert cluster.name == "redis-cluster"
    keys = _spread(cluster, 4)
    assert len({cluster.router.slot(k) for k in keys}) == 4
    for n, key in enumerate(keys):
        await cluster.append([add(key, n + 1, "k", key)])
    order = [keys[2], keys[0], keys[3], keys[1]]
    got = await cluster.read(ReadRequest(order, ["0-0"] * 4))
    assert [r.key for r in got] == order  # keys in the order given
    raw = await cluster.command(["XREAD", "STREAMS", *order, *(["0"] * 4)])
    assert [r[0] for r in raw] == order
    # blocking over several slots: the write to any of them wakes the read
    tops = [f"{keys.index(k) + 1}-0" for k in order]
    task = asyncio.ensure_future(cluster.read(ReadRequest(order, tops, block_ms=5000)))
    await until_async(
        lambda: cluster.blocking_reads.held >= 1, what="the read holds its connections"
    )
    await cluster.append([add(keys[3], 100, "late", "1")])
    got = await asyncio.wait_for(task, 5)
    assert got == [StreamRead(keys[3], [st.Entry(sid(100), ("late", "1"))])]
    assert cluster.blocking_reads.held == 0
    # group reads over several slots
    for key in keys:
        await cluster.create_group(key, "g", "0", False, None)
    got = await cluster.read(ReadRequest(keys, [">"] * 4, group="g", consumer="c"))
    assert [r.key for r in got] == keys


async def test_cluster_keyspace_commands(cluster: RedisBackend) -> None:
    keys = _spread(cluster, 6)
    for key in keys:
        await cluster.append([add(key, 1)])
    assert await cluster.command(["DBSIZE"]) == 6
    assert sorted(await cluster.command(["KEYS", "*"])) == sorted(keys)
    assert await cluster.command(["EXISTS", *keys, "nothing"]) == 6
    seen: list[str] = []
    cursor = "0"
    for _ in range(100):
        cursor, page = await cluster.command(["SCAN", cursor, "COUNT", "2"])
        seen += page
        if cursor == "0":
            break
    assert sorted(seen) == sorted(keys)
    with pytest.raises(CommandError):
        await cluster.command(["SCAN", "1023"])  # no such master
    assert await cluster.command(["DEL", *keys[:3]]) == 3
    assert await cluster.command(["FLUSHALL"]) == "OK"
    assert await cluster.command(["DBSIZE"]) == 0


async def test_cluster_multi_exec_is_one_slot(cluster: RedisBackend) -> None:
    a, b = _spread(cluster, 2)
    with pytest.raises(CommandError) as e:
        await cluster.multi_exec([["XADD", a, "*", "f", "v"], ["XADD", b, "*", "f", "v"]])
    assert e.value.text == "CROSSSLOT Keys in request don't hash to the same slot"
    assert await cluster.command(["EXISTS", a, b]) == 0  # nothing ran
    got = await cluster.multi_exec(
        [["XADD", "{t}a", "1-0", "f", "v"], ["XADD", "{t}b", "1-0", "f", "v"], ["XLEN", "{t}a"]]
    )
    assert got == ["1-0", "1-0", 1]
    with pytest.raises(CommandError) as e:
        await cluster.command(["RENAME", a, b])
    assert e.value.code == "CROSSSLOT"


async def test_a_blocking_read_outlasts_the_socket_timeout() -> None:
    """redis-py reads time out after 5 s by default; BLOCK alone decides how long to wait."""
    b = RedisBackend.from_url(_standalone_url())
    await b.start()
    try:
        task = asyncio.ensure_future(b.read(ReadRequest(["slow"], ["0-0"], block_ms=0)))
        await asyncio.sleep(5.5)  # time itself is tested: past redis-py's 5 s socket timeout
        assert not task.done()
        await b.append([add("slow", 1)])
        got = await asyncio.wait_for(task, 5)
        assert got == [StreamRead("slow", [st.Entry(sid(1), ("f", "1"))])]
    finally:
        await b.close()


@pytest.mark.parametrize("how", ["destroy_group", "delete_stream"])
async def test_a_blocked_group_read_ends_when_its_group_goes(
    pair: Pair, how: str, backend_url: str
) -> None:
    results = []
    for side in (pair.engine, pair.redis):
        await side.create_group("gone", "g", "$", True, None)
        task = asyncio.ensure_future(
            side.read(ReadRequest(["gone"], [">"], group="g", consumer="c", block_ms=5000))
        )
        await _parked(side, backend_url)
        if how == "destroy_group":
            await side.destroy_group("gone", "g")
        else:
            await side.delete_stream("gone")
        try:
            results.append(outcome(await asyncio.wait_for(task, 5)))
        except CommandError as e:
            results.append(outcome(e))
    assert results[0] == results[1]


async def test_concurrent_batches_are_all_or_none(backend_url: str) -> None:
    """Two front-ends append batches to one stream at once: each batch lands whole (its IDs
    consecutive in the stream) or not at all, never interleaved or half-done."""
    fronts = [RedisBackend.from_url(backend_url) for _ in range(2)]
    for f in fronts:
        await f.start()
    try:
        batches = [
            [XAddArgs("race", ("batch", str(n), "i", str(i))) for i in range(5)] for n in range(20)
        ]
        ids = await asyncio.gather(
            *(fronts[n % 2].append(batch) for n, batch in enumerate(batches))
        )
        entries = await fronts[0].range(RangeArgs("race", MIN_ID, MAX_ID))
        assert len(entries) == 100
        position = {e.id: k for k, e in enumerate(entries)}
        for n, batch_ids in enumerate(ids):
            where = [position[i] for i in batch_ids]  # type: ignore[index]
            assert where == list(range(where[0], where[0] + 5))
            assert [entries[k].fields[1] for k in where] == [str(n)] * 5
        # explicit IDs that overlap: exactly one of the two batches lands
        a = [add("dup", 10), add("dup", 11)]
        b = [add("dup", 11), add("dup", 12)]
        got = await asyncio.gather(fronts[0].append(a), fronts[1].append(b), return_exceptions=True)
        assert sum(isinstance(g, BatchItemError) for g in got) == 1
        kept = await fronts[0].range(RangeArgs("dup", MIN_ID, MAX_ID))
        assert [e.id for e in kept] in ([sid(10), sid(11)], [sid(11), sid(12)])
    finally:
        for f in fronts:
            await f.close()


# --- limits -------------------------------------------------------------------------------
@pytest.fixture
async def limited(backend_url: str) -> AsyncIterator[RedisBackend]:
    b = RedisBackend.from_url(backend_url, limits=Limits(read_keys=3, reply_entries=5))
    await b.start()
    yield b
    await b.close()


async def test_limits_on_typed_reads(limited: RedisBackend) -> None:
    """The typed read (REST, SSE) is refused as the command is; a refused group read, by
    ``>`` or by ID, delivered or counted nothing, also over cluster slots ({a} and {b})."""
    for key in ("{a}1", "{b}1"):
        await limited.append([add(key, ms) for ms in (1, 2, 3)])
        await limited.create_group(key, "g", "0", False, None)
    keys = ["{a}1", "{b}1"]
    with pytest.raises(CommandError, match=r"names 4 streams, at most 3 .*max_read_keys"):
        await limited.read(ReadRequest(["x"] * 4, ["0"] * 4))
    too_large = r"reply would hold more than 5 entries \(max_reply_entries\)"
    with pytest.raises(CommandError, match="XREAD " + too_large):
        await limited.read(ReadRequest(keys, ["0", "0"], count=3))
    with pytest.raises(CommandError, match="XREADGROUP " + too_large):
        await limited.read(ReadRequest(keys, [">", ">"], group="g", consumer="c"))
    assert [(await limited.pending_summary(k, "g")).count for k in keys] == [0, 0]
    got = await limited.read(ReadRequest(keys, [">", ">"], count=2, group="g", consumer="c"))
    assert [len(r.entries) for r in got] == [2, 2]
    got = await limited.read(ReadRequest(keys, [">", ">"], group="g", consumer="c"))
    assert [len(r.entries) for r in got] == [1, 1]
    with pytest.raises(CommandError, match="XREADGROUP " + too_large):
        await limited.read(ReadRequest(keys, ["0", "0"], group="g", consumer="c"))
    rows = await limited.pending(PendingArgs(keys[0], "g", MIN_ID, MAX_ID, 10))
    assert [r.delivery_count for r in rows] == [1, 1, 1]  # the refused history read: none


async def test_a_woken_group_read_stays_within_the_limit(
    limited: RedisBackend, backend_url: str
) -> None:
    """A blocked XREADGROUP ``>`` woken by more entries than the limit at once (a
    transaction) is served the limit's worth; the rest stays undelivered, for the next."""
    await limited.create_group("w", "g", "$", True, None)
    task = asyncio.ensure_future(
        limited.read(ReadRequest(["w"], [">"], group="g", consumer="c", block_ms=5000))
    )
    await _parked(limited, backend_url)
    await limited.multi_exec([["XADD", "w", "*", "f", str(i)] for i in range(8)])
    got = await asyncio.wait_for(task, 5)
    assert [len(r.entries) for r in got] == [5]
    assert (await limited.pending_summary("w", "g")).count == 5


# --- listings and caps (issue 23, part 6) --------------------------------------------------
@pytest.fixture
async def capped(backend_url: str) -> AsyncIterator[Pair]:
    """The engine and Redis behind the same listing bound and caps."""
    limits = Limits(reply_entries=4, stream_groups=5, group_consumers=3)
    engine = EngineRef()
    engine.store.keyspace.limits = limits
    b = RedisBackend.from_url(backend_url, limits=limits)
    await b.start()
    yield Pair(engine, b)
    await b.close()


async def test_listings_in_pages_and_the_caps(capped: Pair) -> None:
    """Pages of groups and consumers by name (from a name on, at most a count) are Redis's
    rows cut by its script, in its byte order, names that are not UTF-8 included; the whole
    listing past the reply limit, and a group or consumer past its cap, are refused alike."""
    names = ["a", "b", "\udc80", "é", "z"]  # bytes 0x80 sort before é's 0xc3, as in a rax
    await capped.both("append", [add("s", 1)])
    for name in names:
        await capped.both("create_group", "s", name, "0", False, None)
    await capped.both("create_group", "s", "over", "0", False, None)  # past max_stream_groups
    await capped.both("create_group", "s", "a", "0", False, None)  # BUSYGROUP still first
    await capped.both("groups", "s")  # 5 groups, past max_reply_entries
    await capped.both("stream_full_info", "s", 10)
    await capped.both("groups", "nothing", "", 2)
    for start in ("", "a", "a\0", "c", "\udc80", "\udcff", "zz"):
        for count in (1, 2, 10):
            await capped.both("groups", "s", start, count)
    for consumer in ("x", "y", "\udc80"):
        await capped.both("create_consumer", "s", "a", consumer)
    await capped.both("create_consumer", "s", "a", "w")  # past max_group_consumers
    await capped.both("read", ReadRequest(["s"], [">"], count=1, group="a", consumer="w"))
    await capped.both("read", ReadRequest(["s"], [">"], group="a", consumer="w"))
    await capped.both("claim", ClaimArgs("s", "a", "w", 0, [sid(1)]))
    await capped.both("autoclaim", AutoClaimArgs("s", "a", "w", 0, MIN_ID))
    await capped.both("read", ReadRequest(["s"], [">"], count=1, group="a", consumer="x"))
    await capped.both("consumers", "s", "a")
    for start in ("", "x", "x\0", "\udc80"):
        await capped.both("consumers", "s", "a", start, 2)
    await capped.both("consumers", "s", "nogroup", "", 2)
    await capped.both("group", "s", "\udc80")
    await capped.both("group", "s", "c")
