"""Delivery policies and retention through the Redis backend (app/backends/redis/delivery.py).

Each rule of app/engine/delivery.py on redis-server 7.0 (the tests' database) and, where the
backend branches on the version, on redis-server 8.6 (``redis8_or_skip``); the hash slot
rules on a Redis Cluster. Time is real but short (tens of ms): a test waits for what it
needs (``until_async``) and only asserts "not yet" where the wait it asserts is far longer
(a minute) than the test.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from app.backends.redis import RedisBackend
from app.backends.redis.delivery import policy_key
from app.engine.commands.groups import PendingArgs
from app.engine.commands.nack import NackArgs, NackMode
from app.engine.commands.reads import ReadRequest
from app.engine.commands.streams import RangeArgs, XAddArgs
from app.engine.delivery import (
    DEAD_LETTER_FIELDS,
    DEAD_LETTER_HOPS,
    DeliveryPolicy,
    RedriveArgs,
    Retention,
    split_dead_letter,
)
from app.engine.errors import CommandError, Conflict, NoGroup, NoSuchKey, WrongArgument
from app.engine.ids import MAX_ID, MIN_ID, StreamID
from app.engine.refpolicy import RefPolicy
from tests.backends.test_redis_backend import _flush_cluster, _standalone_url
from tests.support.redis_servers import redis8_or_skip
from tests.support.waiting import until_async

pytestmark = pytest.mark.redis


@pytest.fixture(scope="module")
def new_url() -> Iterator[str]:
    with redis8_or_skip() as server:
        yield f"redis://127.0.0.1:{server.port}/0"


@pytest.fixture(params=["7.0", "8.6"])
async def rb(request: pytest.FixtureRequest) -> AsyncIterator[RedisBackend]:
    """The backend on redis-server 7.0 and on 8.6 (XNACK emulated on both: neither has 8.8's)."""
    url = _standalone_url() if request.param == "7.0" else request.getfixturevalue("new_url")
    b = RedisBackend.from_url(url, block_connections=4)
    await b.start()
    await b.command(["FLUSHDB"])
    yield b
    await b.close()


async def _stream(b: RedisBackend, key: str, n: int, group: str = "g") -> list[StreamID]:
    ids = await b.append([XAddArgs(key, ("f", str(i))) for i in range(n)])
    await b.create_group(key, group, "0", False, None)
    return [i for i in ids if i is not None]


async def _read(
    b: RedisBackend, key: str, consumer: str, count: int = 0, block_ms: int | None = None
) -> list[tuple[StreamID, tuple[str, ...]]]:
    r = ReadRequest([key], [">"], count=count, group="g", consumer=consumer, block_ms=block_ms)
    got = await b.read(r)
    return [(e.id, tuple(e.fields)) for part in got for e in part.entries]  # type: ignore[union-attr]


async def _pending(b: RedisBackend, key: str) -> list[tuple[StreamID, str, int]]:
    rows = await b.pending(PendingArgs(key, "g", MIN_ID, MAX_ID, 1000))
    return [(r.id, r.consumer, r.delivery_count) for r in rows]


async def _entries(b: RedisBackend, key: str) -> list[tuple[StreamID, tuple[str, ...]]]:
    return [(e.id, tuple(e.fields)) for e in await b.range(RangeArgs(key, MIN_ID, MAX_ID))]


async def _nack(b: RedisBackend, key: str, ids: list[StreamID], mode: NackMode) -> int:
    return await b.nack(NackArgs(key, "g", mode, ids))


# --- the policy as a record -----------------------------------------------------------------
async def test_a_policy_is_set_read_and_removed_with_its_group(rb: RedisBackend) -> None:
    await _stream(rb, "s", 1)
    policy = DeliveryPolicy(30_000, 5, "s:dead", (1000, 5000))
    assert await rb.delivery_policy("s", "g") is None
    assert await rb.set_delivery_policy("s", "g", policy) is False
    assert await rb.set_delivery_policy("s", "g", policy) is True
    assert await rb.delivery_policy("s", "g") == policy
    assert await rb.delivery_policies("s") == {"g": policy}
    assert await rb.delivery_policies("missing") == {}
    with pytest.raises(NoGroup):
        await rb.delivery_policy("s", "nope")
    with pytest.raises(NoGroup):
        await rb.set_delivery_policy("s", "nope", policy)
    with pytest.raises(WrongArgument):
        await rb.set_delivery_policy("s", "g", DeliveryPolicy(dead_letter_stream="s"))
    assert await rb.set_delivery_policy("s", "g", None) is True
    assert await rb.set_delivery_policy("s", "g", None) is False
    # XGROUP DESTROY (REST, or the command endpoint) and DEL take it with them
    await rb.set_delivery_policy("s", "g", policy)
    assert await rb.destroy_group("s", "g")
    await rb.create_group("s", "g", "0", False, None)
    assert await rb.delivery_policy("s", "g") is None
    await rb.set_delivery_policy("s", "g", policy)
    await rb.command(["XGROUP", "DESTROY", "s", "g"])
    await rb.command(["XGROUP", "CREATE", "s", "g", "0"])
    assert await rb.delivery_policy("s", "g") is None
    await rb.set_delivery_policy("s", "g", policy)
    await rb.pipeline([["DEL", "s"]])
    await _stream(rb, "s", 1)
    assert await rb.delivery_policy("s", "g") is None
    await rb.set_delivery_policy("s", "g", policy)
    assert await rb.delete_stream("s")
    assert await rb.command(["EXISTS", policy_key("s")]) == 0


async def test_a_group_without_a_policy_is_plain_redis(rb: RedisBackend) -> None:
    ids = await _stream(rb, "s", 3)
    await rb.create_group("s", "other", "0", False, None)
    await rb.set_delivery_policy("s", "other", DeliveryPolicy(visibility_timeout_ms=1))
    assert [i for i, _ in await _read(rb, "s", "c1", count=2)] == ids[:2]
    await _nack(rb, "s", ids[:1], NackMode.FAIL)
    # Redis's XNACK: released at time 0, not served again by a read of new entries
    assert [i for i, _ in await _read(rb, "s", "c2")] == ids[2:]
    assert await _read(rb, "s", "c2") == []
    assert await rb.command(["XREADGROUP", "GROUP", "g", "c3", "STREAMS", "s", ">"]) is None
    # the read's script is sent by its SHA: a server that lost it gets it again
    await rb.router.call(None, "SCRIPT", "FLUSH")
    [new] = await rb.append([XAddArgs("s", ("f", "new"))])
    assert await _read(rb, "s", "c3") == [(new, ("f", "new"))]


# --- claims -----------------------------------------------------------------------------------
async def test_visibility_timeout_serves_idle_entries_as_claims_first(rb: RedisBackend) -> None:
    ids = await _stream(rb, "s", 3)
    await rb.set_delivery_policy("s", "g", DeliveryPolicy(visibility_timeout_ms=30))
    assert [i for i, _ in await _read(rb, "s", "c1", count=2)] == ids[:2]
    assert [i for i, _ in await _read(rb, "s", "c3", count=1)] == ids[2:]

    async def claimed() -> list[Any]:
        return await _read(rb, "s", "c2", count=2)

    got = await until_async(claimed, what="the idle entries served again")
    # the longest idle first, as claims, plain [id, fields] entries
    assert got == [(ids[0], ("f", "0")), (ids[1], ("f", "1"))]
    assert await _pending(rb, "s") == [(ids[0], "c2", 2), (ids[1], "c2", 2), (ids[2], "c3", 1)]
    # COUNT covers claims, then new entries
    [new] = await rb.append([XAddArgs("s", ("f", "new"))])
    got = await until_async(lambda: _read(rb, "s", "c2", count=5), what="the third claim")
    assert [i for i, _ in got] == [ids[2], new]
    [stats] = await rb.delivery_stats()
    assert (stats.stream, stats.group, stats.redelivered, stats.dead_lettered) == ("s", "g", 3, 0)


async def test_backoff_after_xnack_counts_from_the_release(rb: RedisBackend) -> None:
    ids = await _stream(rb, "s", 2)
    await rb.set_delivery_policy("s", "g", DeliveryPolicy(backoff_ms=(60_000,)))
    await _read(rb, "s", "c1")
    assert await _nack(rb, "s", ids[:1], NackMode.FAIL) == 1
    assert await _read(rb, "s", "c2") == []  # a minute's back-off: not yet
    await rb.set_delivery_policy("s", "g", DeliveryPolicy(backoff_ms=(20,)))
    got = await until_async(lambda: _read(rb, "s", "c2"), what="the released entry after 20 ms")
    assert got == [(ids[0], ("f", "0"))]
    assert (ids[0], "c2", 2) in await _pending(rb, "s")


async def test_released_entries_come_back_in_release_order(rb: RedisBackend) -> None:
    ids = await _stream(rb, "s", 3)
    await rb.set_delivery_policy("s", "g", DeliveryPolicy())
    await _read(rb, "s", "c1")
    for i in (ids[2], ids[0], ids[1]):
        await _nack(rb, "s", [i], NackMode.FAIL)
    got = await _read(rb, "s", "c2")
    assert [i for i, _ in got] == [ids[2], ids[0], ids[1]]


async def test_backoff_after_a_visibility_timeout(rb: RedisBackend) -> None:
    ids = await _stream(rb, "s", 1)
    policy = DeliveryPolicy(visibility_timeout_ms=10, backoff_ms=(60_000,))
    await rb.set_delivery_policy("s", "g", policy)
    await _read(rb, "s", "c1")
    # idle past the timeout, but the first redelivery waits max(10, 60000) ms
    await until_async(
        lambda: _idle_at_least(rb, "s", 20), what="the entry idle past the visibility timeout"
    )
    assert await _read(rb, "s", "c2") == []
    await rb.set_delivery_policy("s", "g", DeliveryPolicy(visibility_timeout_ms=10))
    assert [i for i, _ in await _read(rb, "s", "c2")] == ids


async def _idle_at_least(b: RedisBackend, key: str, ms: int) -> bool:
    rows = await b.pending(PendingArgs(key, "g", MIN_ID, MAX_ID, 1000))
    return bool(rows) and all(r.idle_ms >= ms for r in rows)


async def test_noack_and_history_reads_under_a_policy(rb: RedisBackend) -> None:
    ids = await _stream(rb, "s", 2)
    await rb.set_delivery_policy("s", "g", DeliveryPolicy())
    await _read(rb, "s", "c1", count=1)
    await _nack(rb, "s", ids[:1], NackMode.FAIL)
    # a history read is Redis's: the released entry is no longer c1's
    history = ReadRequest(["s"], ["0"], group="g", consumer="c1")
    assert [p.entries for p in await rb.read(history)] == [[]]
    # NOACK: the claim stays pending, the new entry is not added to the PEL
    noack = ReadRequest(["s"], [">"], group="g", consumer="c2", noack=True)
    got = await rb.read(noack)
    assert [e.id for p in got for e in p.entries] == ids  # type: ignore[union-attr]
    assert await _pending(rb, "s") == [(ids[0], "c2", 2)]


# --- dead letters -----------------------------------------------------------------------------
async def test_max_deliveries_moves_the_entry_to_the_dead_letter_stream(rb: RedisBackend) -> None:
    ids = await _stream(rb, "s", 1)
    policy = DeliveryPolicy(visibility_timeout_ms=10, max_deliveries=2, dead_letter_stream="dl")
    await rb.set_delivery_policy("s", "g", policy)
    await _read(rb, "s", "c1")
    await until_async(lambda: _read(rb, "s", "c2"), what="the second delivery")

    async def dead() -> list[Any]:
        assert await _read(rb, "s", "c3") == []  # never a third delivery
        return await _entries(rb, "dl")

    await until_async(dead, what="the dead letter, at a read once the entry is due")
    assert await _pending(rb, "s") == []
    [(_, fields)] = await _entries(rb, "dl")
    split = split_dead_letter(fields)
    assert split is not None
    original, origin = split
    assert original == ("f", "0")
    assert fields[2::2] == DEAD_LETTER_FIELDS
    assert (origin.stream, origin.id, origin.group, origin.consumer) == ("s", ids[0], "g", "c2")
    assert (origin.deliveries, origin.reason) == (2, "max_deliveries")
    [stats] = await rb.delivery_stats()
    assert (stats.redelivered, stats.dead_lettered) == (1, 1)
    assert (stats.dead_letter_stream, stats.dead_letter_length) == ("dl", 1)
    # a group destroyed behind xstreams' back (redis-cli) has no counters to show
    await rb.router.call("s", "XGROUP", "DESTROY", "s", "g")
    assert await rb.delivery_stats() == []


async def test_fatal_moves_the_entry_at_the_next_read(rb: RedisBackend) -> None:
    ids = await _stream(rb, "s", 2)
    await rb.set_delivery_policy("s", "g", DeliveryPolicy(dead_letter_stream="dl"))
    await _read(rb, "s", "c1", count=1)
    assert await _nack(rb, "s", ids[:1], NackMode.FATAL) == 1
    assert [i for i, _ in await _read(rb, "s", "c2")] == [ids[1]]  # not in the reply
    [(_, fields)] = await _entries(rb, "dl")
    split = split_dead_letter(fields)
    assert split is not None
    _, origin = split
    # the consumer that held it before the release
    assert (origin.consumer, origin.deliveries, origin.reason) == ("c1", 2**63 - 1, "fatal")
    assert await _pending(rb, "s") == [(ids[1], "c2", 1)]


# --- redrive ----------------------------------------------------------------------------------
async def _dead_letters(b: RedisBackend, n: int) -> list[StreamID]:
    ids = await _stream(b, "s", n)
    await b.set_delivery_policy("s", "g", DeliveryPolicy(dead_letter_stream="dl"))
    await _read(b, "s", "c1")
    await _nack(b, "s", ids, NackMode.FATAL)
    assert await _read(b, "s", "c2") == []
    return [i for i, _ in await _entries(b, "dl")]


async def test_redrive_to_the_origin_and_to_another_stream(rb: RedisBackend) -> None:
    dead = await _dead_letters(rb, 3)
    assert len(dead) == 3
    with pytest.raises(NoSuchKey):
        await rb.redrive(RedriveArgs("missing"))
    done = await rb.redrive(RedriveArgs("dl", ids=(dead[1],)))
    [(moved_id, target, new_id)] = done.moved
    assert (moved_id, target, done.skipped) == (dead[1], "s", [])
    assert (await _entries(rb, "s"))[-1] == (new_id, ("f", "1"))
    # a retry finds it gone: skipped, nothing appended twice
    again = await rb.redrive(RedriveArgs("dl", ids=(dead[1],)))
    assert (again.moved, again.skipped) == ([], [dead[1]])
    # the oldest, to another stream; an entry that is no dead letter is skipped
    [plain] = await rb.append([XAddArgs("dl", ("x", "y"))])
    done = await rb.redrive(RedriveArgs("dl", target="elsewhere", count=10))
    assert [(d, t) for d, t, _ in done.moved] == [(dead[0], "elsewhere"), (dead[2], "elsewhere")]
    assert done.skipped == [plain]
    assert [f for _, f in await _entries(rb, "elsewhere")] == [("f", "0"), ("f", "2")]
    assert [i for i, _ in await _entries(rb, "dl")] == [plain]


# --- the command endpoint -------------------------------------------------------------------
async def test_the_command_endpoint_applies_the_policy(rb: RedisBackend) -> None:
    ids = await _stream(rb, "s", 1)
    await rb.set_delivery_policy("s", "g", DeliveryPolicy())
    read = ["XREADGROUP", "GROUP", "g", "c1", "COUNT", "5", "STREAMS", "s", ">"]
    assert await rb.command(read) == [["s", [[str(ids[0]), ["f", "0"]]]]]
    nack = ["XNACK", "s", "g", "FAIL", "IDS", "1", str(ids[0])]
    read2 = ["XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", ">"]
    assert await rb.pipeline([nack, read2]) == [1, [["s", [[str(ids[0]), ["f", "0"]]]]]]
    read3 = ["XREADGROUP", "GROUP", "g", "c3", "BLOCK", "10", "STREAMS", "s", ">"]
    assert await rb.multi_exec([nack, read3]) == [1, [["s", [[str(ids[0]), ["f", "0"]]]]]]
    assert await rb.command(nack) == 1
    assert await rb.command(read) == [["s", [[str(ids[0]), ["f", "0"]]]]]
    assert await _pending(rb, "s") == [(ids[0], "c1", 4)]


# --- blocking and concurrent reads ------------------------------------------------------------
async def test_a_blocked_read_is_woken_by_an_entry_turning_due(rb: RedisBackend) -> None:
    ids = await _stream(rb, "s", 1)
    await rb.set_delivery_policy("s", "g", DeliveryPolicy(visibility_timeout_ms=50))
    await _read(rb, "s", "c1")
    got = await asyncio.wait_for(_read(rb, "s", "c2", block_ms=0), 10)
    assert got == [(ids[0], ("f", "0"))]
    # and a released one, on a read blocked before the release
    task = asyncio.ensure_future(_read(rb, "s", "c3", block_ms=0))
    await until_async(lambda: rb.blocking_reads.held == 1, what="the read waits in Redis")
    await _nack(rb, "s", ids, NackMode.FAIL)
    assert await asyncio.wait_for(task, 10) == [(ids[0], ("f", "0"))]


async def test_concurrent_readers_never_both_get_an_entry(rb: RedisBackend) -> None:
    ids = await _stream(rb, "s", 60)
    other = RedisBackend.from_url(_url_of(rb), block_connections=4)  # another front-end
    await other.start()
    try:
        # a policy set through one front-end applies at once on the other
        await other.set_delivery_policy("s", "g", DeliveryPolicy())
        await _read(rb, "s", "c0")
        await _nack(rb, "s", ids, NackMode.FAIL)
        reads = [_read(b, "s", f"c{i}", count=4) for i in range(1, 21) for b in (rb, other)]
        got = [i for part in await asyncio.gather(*reads) for i, _ in part]
    finally:
        await other.close()
    assert sorted(got) == ids  # each once, none lost


def _url_of(b: RedisBackend) -> str:
    kw = b.router.client.connection_pool.connection_kwargs  # type: ignore[union-attr]
    return f"redis://{kw['host']}:{kw['port']}/{kw.get('db', 0)}"


# --- retention --------------------------------------------------------------------------------
async def test_retention_is_kept_by_name(rb: RedisBackend) -> None:
    assert await rb.retention("s") is None
    assert await rb.set_retention("s", Retention(max_len=10)) is False
    assert await rb.set_retention("s", Retention(max_age_ms=1000)) is True
    assert await rb.retention("s") == Retention(max_age_ms=1000)
    await _stream(rb, "s", 1)
    await rb.delete_stream("s")
    assert await rb.retentions() == {"s": Retention(max_age_ms=1000)}
    assert await rb.set_retention("s", None) is True
    assert await rb.retentions() == {}


async def test_retention_trims_by_length_age_and_bytes(rb: RedisBackend) -> None:
    assert await rb.enforce_retention("missing", Retention(max_len=1), 1000) == 0
    await rb.append([XAddArgs("s", ("f", str(i))) for i in range(1000)])
    removed = await rb.enforce_retention("s", Retention(max_len=10), 10_000)
    length = (await rb.stream_info("s")).header.length
    assert removed == 1000 - length and 10 <= length < 110  # `~`: whole nodes
    # by age: entries of 1970 go, today's stay
    old = [XAddArgs("a", ("f", "x"), id=StreamID(1, i)) for i in range(300)]
    await rb.append(old)
    await rb.append([XAddArgs("a", ("f", "y")) for _ in range(5)])
    removed = await rb.enforce_retention("a", Retention(max_age_ms=60_000), 10_000)
    assert 200 <= removed <= 300
    assert all(f == ("f", "x") for _, f in (await _entries(rb, "a"))[: 300 - removed])
    assert (await rb.stream_info("a")).header.length == 305 - removed
    # by bytes: a stream far over its budget is cut to about its share
    await rb.append([XAddArgs("b", ("f", "z" * 100)) for _ in range(1000)])
    removed = await rb.enforce_retention("b", Retention(max_bytes=20_000), 10_000)
    assert 500 < removed < 1000
    # LIMIT bounds one step
    await rb.append([XAddArgs("c", ("f", str(i))) for i in range(1000)])
    assert await rb.enforce_retention("c", Retention(max_len=0), 100) == 100


async def test_retention_by_age_trims_a_quiet_streams_boundary_exactly(rb: RedisBackend) -> None:
    """Two entries of 1970 and one of today in one node, far from full: one step removes
    the two old ones (MINID ``~`` alone removes no node), the next nothing."""
    old = [
        XAddArgs("q", ("f", "x"), id=StreamID(1, 0)),
        XAddArgs("q", ("f", "y"), id=StreamID(2, 0)),
    ]
    await rb.append([*old, XAddArgs("q", ("f", "new"))])
    age = Retention(max_age_ms=3_600_000)
    assert await rb.enforce_retention("q", age, 1000) == 2
    assert await rb.enforce_retention("q", age, 1000) == 0
    assert [f for _, f in await _entries(rb, "q")] == [("f", "new")]


async def test_retention_by_age_trims_a_backlog_in_bounded_steps(rb: RedisBackend) -> None:
    """A step removes at most its limit, even below a node's size (where MINID ``~`` LIMIT
    removes no whole node), until every entry older than the age is gone."""
    await rb.append([XAddArgs("b", ("f", "x"), id=StreamID(1, i)) for i in range(1000)])
    await rb.append([XAddArgs("b", ("f", "new"))])
    age = Retention(max_age_ms=3_600_000)
    steps: list[int] = []
    while True:
        before = (await rb.stream_info("b")).header.length
        step = await rb.enforce_retention("b", age, 30)
        assert step == before - (await rb.stream_info("b")).header.length <= 30
        if not step:
            break
        steps.append(step)
    assert sum(steps) == 1000 and len(steps) == 34  # 33 of 30, then 10
    assert [f for _, f in await _entries(rb, "b")] == [("f", "new")]


async def test_retention_trims_with_its_reference_policy(
    rb: RedisBackend, request: pytest.FixtureRequest
) -> None:
    """DELREF drops the groups' references to what it trims (8.2's XTRIM option); a server
    older than 8.2 refuses such a retention when it is set, naming the version."""
    ids = await _stream(rb, "s", 300)
    await _read(rb, "s", "c", 300)
    delref = Retention(max_len=0, policy=RefPolicy.DELREF)
    if "7.0" in request.node.callspec.id:
        with pytest.raises(CommandError, match=r"needs Redis 8\.2"):
            await rb.set_retention("s", delref)
        assert await rb.retention("s") is None
        return
    assert await rb.set_retention("s", delref) is False
    assert await rb.retention("s") == delref
    assert await rb.enforce_retention("s", delref, 100) == 100
    pending = {sid for sid, _, _ in await _pending(rb, "s")}
    assert pending == set(ids[100:])  # what was trimmed left the PEL too


# --- Redis Cluster ----------------------------------------------------------------------------
@pytest.fixture
async def cluster(cluster_nodes: list[str]) -> AsyncIterator[RedisBackend]:
    _flush_cluster(cluster_nodes)
    b = RedisBackend.from_url("redis+cluster://" + ",".join(cluster_nodes), block_connections=8)
    await b.start()
    yield b
    await b.close()


async def test_cluster_keeps_the_dead_letter_stream_in_the_slot(cluster: RedisBackend) -> None:
    ids = await _stream(cluster, "{orders}", 2)
    with pytest.raises(WrongArgument, match="same hash slot"):
        await cluster.set_delivery_policy("{orders}", "g", DeliveryPolicy(dead_letter_stream="d"))
    policy = DeliveryPolicy(dead_letter_stream="{orders}:dead")
    await cluster.set_delivery_policy("{orders}", "g", policy)
    await _read(cluster, "{orders}", "c1")
    await _nack(cluster, "{orders}", ids[:1], NackMode.FATAL)
    await _nack(cluster, "{orders}", ids[1:], NackMode.FAIL)
    assert await _read(cluster, "{orders}", "c2") == [(ids[1], ("f", "1"))]
    [(dead, _)] = await _entries(cluster, "{orders}:dead")
    with pytest.raises(CommandError, match="same hash slot"):
        await cluster.redrive(RedriveArgs("{orders}:dead", target="elsewhere"))
    done = await cluster.redrive(RedriveArgs("{orders}:dead"))
    assert [(d, t) for d, t, _ in done.moved] == [(dead, "{orders}")]
    [stats] = await cluster.delivery_stats()
    assert (stats.stream, stats.dead_lettered, stats.redelivered) == ("{orders}", 1, 1)
    # a read over several slots with a policy on one of them
    await _stream(cluster, "plain", 1)
    r = ReadRequest(["{orders}", "plain"], [">", ">"], group="g", consumer="c3")
    await _nack(cluster, "{orders}", ids[1:], NackMode.FAIL)
    got = await cluster.read(r)
    redriven = done.moved[0][2]
    assert (got[0].key, [e.id for e in got[0].entries]) == ("{orders}", [ids[1], redriven])
    assert [p.key for p in got] == ["{orders}", "plain"]


# --- the same scenario on the embedded engine -------------------------------------------------
def _masked(x: Any) -> Any:
    """IDs taken by ``*`` (dead letters, redriven entries: the server's clock) as 'new'."""
    if isinstance(x, StreamID):
        return x if x.ms < 1000 else "new"
    if isinstance(x, list | tuple):
        return [_masked(v) for v in x]
    return x


async def _scenario(b: Any) -> list[Any]:
    """A policy scenario whose outcome time does not decide (no timeout, no back-off):
    releases, claims in release order, COUNT across claims and new entries, max_deliveries,
    FATAL, SILENT, NOACK, the dead letters' fields, the counters, redrive and its retry."""
    out: list[Any] = []
    await b.append([XAddArgs("s", ("f", str(i)), id=StreamID(i, 0)) for i in range(1, 6)])
    await b.create_group("s", "g", "0", False, None)
    await b.set_delivery_policy("s", "g", DeliveryPolicy(max_deliveries=3, dead_letter_stream="d"))

    async def read(consumer: str, count: int = 0, noack: bool = False) -> None:
        r = ReadRequest(["s"], [">"], count=count, group="g", consumer=consumer, noack=noack)
        got = await b.read(r)
        out.append(_masked([(p.key, [(e.id, e.fields) for e in p.entries]) for p in got]))

    async def nack(mode: NackMode, *ms: int) -> None:
        out.append(await b.nack(NackArgs("s", "g", mode, [StreamID(m, 0) for m in ms])))

    await read("c1", 3)
    await nack(NackMode.FAIL, 2, 1)
    await read("c2", 1)
    await read("c2", 5)
    await nack(NackMode.FAIL, 1, 2)
    await read("c3")
    await nack(NackMode.FAIL, 1)
    await nack(NackMode.FATAL, 3)
    await read("c4")
    await nack(NackMode.SILENT, 2)
    await read("c5")
    await nack(NackMode.FAIL, 2)
    await read("c6", noack=True)
    out.append(await _pending(b, "s"))
    out.append(_masked(await _entries(b, "d")))
    stats = await b.delivery_stats()
    out.append(
        [(s.stream, s.group, s.redelivered, s.dead_lettered, s.dead_letter_length) for s in stats]
    )
    done = await b.redrive(RedriveArgs("d"))
    out.append(_masked([(d, t, n) for d, t, n in done.moved]) + _masked(done.skipped))
    again = await b.redrive(RedriveArgs("d", ids=tuple(d for d, _, _ in done.moved)))
    out.append((again.moved, len(again.skipped)))
    await read("c7")
    out.append(await b.delivery_policies("s"))
    out.append(await b.set_delivery_policy("s", "g", None))
    return out


async def test_the_engine_and_redis_agree_on_a_policy_scenario(rb: RedisBackend) -> None:
    from app.backends.embedded import EmbeddedBackend
    from app.engine.store import Store

    engine = EmbeddedBackend(Store())
    want = await _scenario(engine)
    got = await _scenario(rb)
    assert got == want


# --- dead-letter chains (issue 37) ------------------------------------------------------------
CYCLES = [
    [("a", "b"), ("b", "a")],
    [("a", "b"), ("b", "c"), ("c", "a")],
    [("b", "c"), ("c", "a"), ("a", "b")],
    [("a", "b"), ("b", "c"), ("c", "d"), ("d", "b")],
]


async def _cycle(b: Any, tag: str, links: list[tuple[str, str]]) -> tuple[str, Any]:
    """Set every link but the last; the last one's error text and policy afterwards."""
    for name in "abcd":
        await _stream(b, tag + name, 1)
    *first, (key, dead) = links
    for k, d in first:
        await b.set_delivery_policy(tag + k, "g", DeliveryPolicy(dead_letter_stream=tag + d))
    with pytest.raises(Conflict) as info:
        await b.set_delivery_policy(tag + key, "g", DeliveryPolicy(dead_letter_stream=tag + dead))
    return info.value.text, await b.delivery_policy(tag + key, "g")


@pytest.mark.parametrize("links", CYCLES)
async def test_the_policy_that_closes_a_dead_letter_cycle_is_refused(
    rb: RedisBackend, links: list[tuple[str, str]]
) -> None:
    from app.backends.embedded import EmbeddedBackend
    from app.engine.store import Store

    text, after = await _cycle(rb, "", links)
    assert (text, after) == await _cycle(EmbeddedBackend(Store()), "", links)
    assert after is None
    assert "leads back to" in text


async def test_the_chain_follows_only_groups_that_are_there(rb: RedisBackend) -> None:
    await _stream(rb, "a", 1)
    await _stream(rb, "b", 1)
    await rb.set_delivery_policy("b", "g", DeliveryPolicy(dead_letter_stream="a"))
    # a group destroyed behind xstreams' back leaves its policy in the hash: not a link
    await rb.router.call("b", "XGROUP", "DESTROY", "b", "g")
    await rb.set_delivery_policy("a", "g", DeliveryPolicy(dead_letter_stream="b"))
    await rb.create_group("b", "h", "0", False, None)
    with pytest.raises(Conflict):  # a group that is there is a link
        await rb.set_delivery_policy("b", "h", DeliveryPolicy(dead_letter_stream="a"))
    # a chain through a key that is no stream ends there
    await rb.router.write("c", "SET", "c", "x")
    await rb.set_delivery_policy("a", "g", DeliveryPolicy(dead_letter_stream="c"))
    await rb.set_delivery_policy("b", "h", DeliveryPolicy(dead_letter_stream="a"))


async def _hops(b: Any, tag: str) -> list[Any]:
    """A chain a -> b -> c -> d of dead letters, each moved by XNACK FATAL and a read; what
    each dead-letter stream holds, then a redrive from the last one."""
    names = [tag + n for n in "abcd"]
    for name in names:
        await b.create_group(name, "g", "0", True, None)
    for key, dead in itertools.pairwise(names):
        await b.set_delivery_policy(key, "g", DeliveryPolicy(dead_letter_stream=dead))
    await b.append([XAddArgs(names[0], ("n", "1"), id=StreamID(1, 0))])
    out: list[Any] = []
    for key, dead in itertools.pairwise(names):
        got = await b.read(ReadRequest([key], [">"], group="g", consumer="c"))
        await b.nack(NackArgs(key, "g", NackMode.FATAL, [e.id for p in got for e in p.entries]))
        assert await b.read(ReadRequest([key], [">"], group="g", consumer="d")) == []
        out.append([f for _, f in await _entries(b, dead)])
    done = await b.redrive(RedriveArgs(names[-1]))
    out.append([(t, [f for _, f in await _entries(b, t)]) for _, t, _ in done.moved])
    return out


async def test_a_dead_letter_of_a_dead_letter_keeps_its_origin_and_counts_hops(
    rb: RedisBackend,
) -> None:
    from app.backends.embedded import EmbeddedBackend
    from app.engine.store import Store

    got = await _hops(rb, "")
    assert got == await _hops(EmbeddedBackend(Store()), "")
    [[first], [second], [third], redriven] = got
    assert first[2::2] == DEAD_LETTER_FIELDS
    assert second == (*first, DEAD_LETTER_HOPS, "2")
    assert third == (*first, DEAD_LETTER_HOPS, "3")
    assert redriven == [("a", [("n", "1"), ("n", "1")])]


async def test_cluster_walks_the_chain_in_its_slot(cluster: RedisBackend) -> None:
    text, after = await _cycle(cluster, "{t}", CYCLES[1])
    assert after is None and "leads back to" in text
    [[first], _, [third], _] = await _hops(cluster, "{h}")
    assert third == (*first, DEAD_LETTER_HOPS, "3")
