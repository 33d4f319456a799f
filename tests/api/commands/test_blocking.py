"""XREAD / XREADGROUP with BLOCK over ``POST /``, following redis-server 7.0's behaviour.

Each blocked command is one HTTP request held open by the server; another request (XADD, XGROUP
DESTROY, DEL) wakes it. Timings are generous but bounded, so a server that polls slowly or never
wakes its waiters fails instead of hanging (pytest-timeout is 60 s; each test takes a few seconds).
The Redis texts for the "deleted while blocked" cases were taken from redis-server 7.0.15 with two
redis-cli sessions, and are re-checked live by the ``redis``-marked tests at the bottom.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any

import httpx
import pytest

from tests.api.support import (
    NOGROUP_WHILE_BLOCKED,
    STREAM_DELETED_WHILE_BLOCKED,
    Background,
    error_text,
    result_of,
)
from tests.conftest import Commands, Server
from tests.support.waiting import (
    blocked_clients,
    blocked_per_read,
    parked,
    parked_async,
    until_async,
)

# Upper bound for "woken within milliseconds": generous for a loaded CI box, far below any timeout.
WAKE_LIMIT = 1.0


async def call(client: httpx.AsyncClient, *args: str) -> httpx.Response:
    """One command through ``POST /``."""
    return await client.post("/", json=list(args))


async def timed(client: httpx.AsyncClient, *args: str) -> tuple[httpx.Response, float]:
    """The response and the monotonic time at which it arrived."""
    r = await call(client, *args)
    return r, time.monotonic()


async def still_waiting(
    server: Server, task: asyncio.Task[Any], parked: int = 1, hold_s: float = 0
) -> None:
    """Wait until ``parked`` readers are blocked at the server (``task``'s among them), then
    ``hold_s`` more where a test checks it stays blocked a while; fail if ``task`` answered."""

    async def blocked() -> bool:
        return task.done() or await asyncio.to_thread(blocked_clients, server) == parked

    await until_async(blocked, what=f"{parked} reader(s) blocked")
    if hold_s:
        await asyncio.sleep(hold_s)  # time is the point: it must not answer meanwhile
    if task.done():
        r = task.result()
        resp = r[0] if isinstance(r, tuple) else r
        pytest.fail(f"blocking call returned early: {resp.status_code} {resp.text}")


async def test_xread_block_woken_by_xadd(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """XREAD BLOCK 5000 on an empty stream returns the entry right after another client's XADD."""
    waiter = bg.spawn(timed(ahttp, "XREAD", "BLOCK", "5000", "STREAMS", "s", "$"))
    await still_waiting(server, waiter)
    assert result_of(await call(ahttp, "XADD", "s", "1-1", "f", "v")) == "1-1"
    added_at = time.monotonic()
    r, arrived_at = await asyncio.wait_for(waiter, 6)
    assert result_of(r) == [["s", [["1-1", ["f", "v"]]]]]
    assert arrived_at - added_at < WAKE_LIMIT, f"woken {arrived_at - added_at:.3f}s after XADD"


async def test_xread_block_on_existing_key_from_id(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """Blocking from an explicit ID: only entries after it wake the reader."""
    await call(ahttp, "XADD", "s", "1-1", "f", "v")
    waiter = bg.spawn(timed(ahttp, "XREAD", "BLOCK", "5000", "STREAMS", "s", "1-1"))
    await still_waiting(server, waiter)
    await call(ahttp, "XADD", "s", "2-1", "f", "w")
    added_at = time.monotonic()
    r, arrived_at = await asyncio.wait_for(waiter, 6)
    assert result_of(r) == [["s", [["2-1", ["f", "w"]]]]]
    assert arrived_at - added_at < WAKE_LIMIT


async def test_xread_block_returns_at_once_when_data_exists(ahttp: httpx.AsyncClient) -> None:
    """Nothing to wait for: XREAD BLOCK answers immediately with what's there."""
    await call(ahttp, "XADD", "s", "1-1", "f", "v")
    t0 = time.monotonic()
    r = await call(ahttp, "XREAD", "BLOCK", "5000", "STREAMS", "s", "0")
    assert result_of(r) == [["s", [["1-1", ["f", "v"]]]]]
    assert time.monotonic() - t0 < WAKE_LIMIT


@pytest.mark.parametrize("key_exists", [False, True])
async def test_xread_block_timeout_is_null(ahttp: httpx.AsyncClient, key_exists: bool) -> None:
    """XREAD BLOCK 100 with nothing new answers ``{"result": null}`` after ≈100 ms, not before."""
    if key_exists:
        await call(ahttp, "XADD", "s", "1-1", "f", "v")
    t0 = time.monotonic()
    r = await call(ahttp, "XREAD", "BLOCK", "100", "STREAMS", "s", "$")
    elapsed = time.monotonic() - t0
    assert result_of(r) is None
    assert 0.095 <= elapsed < 1.5, f"answered after {elapsed:.3f}s"


async def test_xreadgroup_block_timeout_is_null(ahttp: httpx.AsyncClient) -> None:
    """XREADGROUP BLOCK 200 on a group with nothing new answers null after ≈200 ms."""
    await call(ahttp, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    t0 = time.monotonic()
    r = await call(ahttp, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "200", "STREAMS", "s", ">")
    elapsed = time.monotonic() - t0
    assert result_of(r) is None
    assert 0.195 <= elapsed < 1.6, f"answered after {elapsed:.3f}s"


async def test_dollar_sees_only_later_entries(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """``$`` means "after the last entry at call time": old entries are never returned."""
    await call(ahttp, "XADD", "s", "1-1", "f", "old")
    await call(ahttp, "XADD", "s", "2-1", "f", "old")
    waiter = bg.spawn(timed(ahttp, "XREAD", "BLOCK", "5000", "STREAMS", "s", "$"))
    await still_waiting(server, waiter)
    await call(ahttp, "XADD", "s", "3-1", "f", "new")
    r, _ = await asyncio.wait_for(waiter, 6)
    assert result_of(r) == [["s", [["3-1", ["f", "new"]]]]]


async def test_dollar_across_several_streams(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """With several keys, the reply names the key that got data (and only it)."""
    await call(ahttp, "XADD", "a", "1-1", "f", "v")
    waiter = bg.spawn(timed(ahttp, "XREAD", "BLOCK", "5000", "STREAMS", "a", "b", "$", "$"))
    await still_waiting(server, waiter, blocked_per_read(server, ["a", "b"]))
    await call(ahttp, "XADD", "b", "7-7", "g", "w")
    r, _ = await asyncio.wait_for(waiter, 6)
    assert result_of(r) == [["b", [["7-7", ["g", "w"]]]]]


async def test_block_0_waits_until_data(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """BLOCK 0 means forever: still waiting after well over a second, answered on XADD."""
    waiter = bg.spawn(timed(ahttp, "XREAD", "BLOCK", "0", "STREAMS", "s", "$"))
    await still_waiting(server, waiter, hold_s=1.5)  # BLOCK 0 has no timeout
    await call(ahttp, "XADD", "s", "1-1", "f", "v")
    added_at = time.monotonic()
    r, arrived_at = await asyncio.wait_for(waiter, 5)
    assert result_of(r) == [["s", [["1-1", ["f", "v"]]]]]
    assert arrived_at - added_at < WAKE_LIMIT


async def test_count_limits_what_a_woken_reader_gets(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """COUNT 1 still applies when a blocked reader is served two entries at once."""
    waiter = bg.spawn(timed(ahttp, "XREAD", "COUNT", "1", "BLOCK", "5000", "STREAMS", "s", "$"))
    await still_waiting(server, waiter)
    rows = [["XADD", "s", "1-1", "f", "v"], ["XADD", "s", "2-1", "f", "w"]]
    assert (await ahttp.post("/multi-exec", json=rows)).status_code == 200
    r, _ = await asyncio.wait_for(waiter, 6)
    assert result_of(r) == [["s", [["1-1", ["f", "v"]]]]]


async def test_very_long_block_is_still_woken(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """BLOCK 999999999999 (≈31 years, accepted by redis-server) must not overflow a deadline."""
    waiter = bg.spawn(timed(ahttp, "XREAD", "BLOCK", "999999999999", "STREAMS", "s", "$"))
    await still_waiting(server, waiter)
    await call(ahttp, "XADD", "s", "1-1", "f", "v")
    r, _ = await asyncio.wait_for(waiter, 6)
    assert result_of(r) == [["s", [["1-1", ["f", "v"]]]]]


async def test_woken_reply_honours_base64(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """A blocked request's reply is encoded per its own ``Upstash-Encoding`` header, whoever
    wakes it; its timeout reply stays a raw null."""
    enc = {"Upstash-Encoding": "base64"}
    body = ["XREAD", "BLOCK", "5000", "STREAMS", "s", "$"]
    waiter = bg.spawn(ahttp.post("/", json=body, headers=enc))
    await still_waiting(server, waiter)
    await call(ahttp, "XADD", "s", "1-1", "f", "v")
    r = await asyncio.wait_for(waiter, 6)
    assert result_of(r) == [["cw==", [["MS0x", ["Zg==", "dg=="]]]]]
    body = ["XREAD", "BLOCK", "100", "STREAMS", "s", "$"]
    assert result_of(await ahttp.post("/", json=body, headers=enc)) is None


async def test_all_plain_readers_get_the_entry(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """Without a group, every blocked XREAD sees the same new entry (it's a broadcast)."""
    waiters = [
        bg.spawn(timed(ahttp, "XREAD", "BLOCK", "5000", "STREAMS", "s", "$")) for _ in range(3)
    ]
    for w in waiters:
        await still_waiting(server, w, 3)
    await call(ahttp, "XADD", "s", "1-1", "f", "v")
    for w in waiters:
        r, _ = await asyncio.wait_for(w, 6)
        assert result_of(r) == [["s", [["1-1", ["f", "v"]]]]]


async def test_blocked_request_does_not_block_the_server(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """While several requests block, other requests are served promptly."""
    waiters = [
        bg.spawn(timed(ahttp, "XREAD", "BLOCK", "2000", "STREAMS", f"k{i}", "$")) for i in range(10)
    ]
    await parked_async(server, 10)
    t0 = time.monotonic()
    for i in range(20):
        assert result_of(await call(ahttp, "XADD", "other", "*", "i", str(i)))
    assert time.monotonic() - t0 < 2
    for w in waiters:
        r, _ = await asyncio.wait_for(w, 5)
        assert result_of(r) is None


async def test_path_style_xread_blocks_too(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """``GET /xread/block/5000/streams/s/$`` blocks and wakes exactly like ``POST /``."""
    waiter = bg.spawn(ahttp.get("/xread/block/5000/streams/s/$"))
    await still_waiting(server, waiter)
    assert result_of(await ahttp.get("/xadd/s/1-1/f/v")) == "1-1"
    r = await asyncio.wait_for(waiter, 6)
    assert result_of(r) == [["s", [["1-1", ["f", "v"]]]]]


@pytest.mark.parametrize("endpoint", ["/pipeline", "/multi-exec"])
async def test_batch_xadds_wake_readers(
    server: Server, bg: Background, ahttp: httpx.AsyncClient, endpoint: str
) -> None:
    """XADDs sent through /pipeline or /multi-exec wake blocked readers like single ones."""
    waiter = bg.spawn(timed(ahttp, "XREAD", "BLOCK", "5000", "STREAMS", "s", "$"))
    await still_waiting(server, waiter)
    r = await ahttp.post(endpoint, json=[["XADD", "s", "1-1", "f", "v"]])
    assert r.json() == [{"result": "1-1"}]
    added_at = time.monotonic()
    r, arrived_at = await asyncio.wait_for(waiter, 6)
    assert result_of(r)[0][1][0] == ["1-1", ["f", "v"]]
    assert arrived_at - added_at < WAKE_LIMIT


async def test_transaction_wakes_reader_after_exec(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """Redis serves blocked readers after EXEC: the reader sees the whole transaction at once."""
    waiter = bg.spawn(timed(ahttp, "XREAD", "BLOCK", "5000", "STREAMS", "s", "$"))
    await still_waiting(server, waiter)
    rows = [["XADD", "s", "1-1", "f", "v"], ["XADD", "s", "2-1", "f", "w"]]
    r = await ahttp.post("/multi-exec", json=rows)
    assert r.json() == [{"result": "1-1"}, {"result": "2-1"}]
    r, _ = await asyncio.wait_for(waiter, 6)
    assert result_of(r) == [["s", [["1-1", ["f", "v"]], ["2-1", ["f", "w"]]]]]


async def test_pipeline_wakes_reader_after_its_first_xadd(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """A pipeline is no transaction: Redis serves blocked readers after each command, so a
    reader waiting on the key gets the first XADD alone, even though consecutive XADDs to one
    key otherwise run as one engine call."""
    waiter = bg.spawn(timed(ahttp, "XREAD", "BLOCK", "5000", "STREAMS", "s", "$"))
    await still_waiting(server, waiter)
    rows = [["XADD", "s", f"{i}-1", "f", "v"] for i in range(1, 4)]
    r = await ahttp.post("/pipeline", json=rows)
    assert r.json() == [{"result": f"{i}-1"} for i in range(1, 4)]
    r, _ = await asyncio.wait_for(waiter, 6)
    assert result_of(r) == [["s", [["1-1", ["f", "v"]]]]]


async def test_pipeline_gives_a_waiting_consumer_one_entry_and_leaves_the_rest(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """XREADGROUP BLOCK served by the first XADD of a pipeline takes that entry only; the
    others stay new for the next consumer, as with redis-server."""
    await group(ahttp)
    waiter = bg.spawn(timed(ahttp, *readgroup("alice")))
    await still_waiting(server, waiter)
    rows = [["XADD", "s", f"{i}-1", "f", "v"] for i in range(1, 4)]
    r = await ahttp.post("/pipeline", json=rows)
    assert r.json() == [{"result": f"{i}-1"} for i in range(1, 4)]
    r, _ = await asyncio.wait_for(waiter, 6)
    assert result_of(r) == [["s", [["1-1", ["f", "v"]]]]]
    later = await call(ahttp, "XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    assert [e[0] for e in result_of(later)[0][1]] == ["2-1", "3-1"]


# --------------------------------------------------------------------------- consumer groups


async def group(ahttp: httpx.AsyncClient) -> None:
    """An empty stream ``s`` with group ``g`` at ``$``."""
    assert result_of(await call(ahttp, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")) == "OK"


def readgroup(consumer: str, block: str = "5000") -> list[str]:
    """XREADGROUP of new entries (``>``) for ``consumer`` of group ``g``."""
    return ["XREADGROUP", "GROUP", "g", consumer, "BLOCK", block, "STREAMS", "s", ">"]


async def test_xreadgroup_block_woken_by_xadd(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """A blocked group reader gets the new entry and it becomes pending for that consumer."""
    await group(ahttp)
    waiter = bg.spawn(timed(ahttp, *readgroup("c1")))
    await still_waiting(server, waiter)
    await call(ahttp, "XADD", "s", "1-1", "f", "v")
    added_at = time.monotonic()
    r, arrived_at = await asyncio.wait_for(waiter, 6)
    assert result_of(r) == [["s", [["1-1", ["f", "v"]]]]]
    assert arrived_at - added_at < WAKE_LIMIT
    assert result_of(await call(ahttp, "XPENDING", "s", "g")) == [1, "1-1", "1-1", [["c1", "1"]]]


async def test_noack_waiter_leaves_nothing_pending(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """A blocked XREADGROUP NOACK is served the entry without adding it to the PEL."""
    await group(ahttp)
    args = ["XREADGROUP", "GROUP", "g", "c1", "NOACK", "BLOCK", "5000", "STREAMS", "s", ">"]
    waiter = bg.spawn(timed(ahttp, *args))
    await still_waiting(server, waiter)
    await call(ahttp, "XADD", "s", "1-1", "f", "v")
    r, _ = await asyncio.wait_for(waiter, 6)
    assert result_of(r) == [["s", [["1-1", ["f", "v"]]]]]
    assert result_of(await call(ahttp, "XPENDING", "s", "g")) == [0, None, None, None]


async def test_history_read_never_blocks(ahttp: httpx.AsyncClient) -> None:
    """XREADGROUP BLOCK with an ID other than ``>`` reads the consumer's PEL and returns at once,
    even when that is empty (redis-server answers ``[["s", []]]``)."""
    await group(ahttp)
    t0 = time.monotonic()
    r = await call(ahttp, "XREADGROUP", "GROUP", "g", "c1", "BLOCK", "3000", "STREAMS", "s", "0")
    assert result_of(r) == [["s", []]]
    assert time.monotonic() - t0 < WAKE_LIMIT


async def test_timed_out_group_read_creates_no_consumer(ahttp: httpx.AsyncClient) -> None:
    """redis-server 7.0 only creates the consumer when it serves it: a blocked XREADGROUP that
    times out leaves XINFO CONSUMERS empty."""
    await group(ahttp)
    assert result_of(await call(ahttp, *readgroup("c1", "100"))) is None
    assert result_of(await call(ahttp, "XINFO", "CONSUMERS", "s", "g")) == []


async def test_each_entry_goes_to_one_waiting_consumer_fcfs(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """Three consumers blocked on ``>``, three XADDs: each consumer gets one different entry,
    in the order the consumers started waiting (Redis serves blocked clients FIFO)."""
    await group(ahttp)
    waiters = {}
    for name in ("c1", "c2", "c3"):
        waiters[name] = bg.spawn(timed(ahttp, *readgroup(name)))
        await still_waiting(server, waiters[name], len(waiters))  # in this order
    for i in (1, 2, 3):
        assert result_of(await call(ahttp, "XADD", "s", f"{i}-1", "n", str(i))) == f"{i}-1"
    got = {}
    for name, task in waiters.items():
        r, _ = await asyncio.wait_for(task, 6)
        got[name] = result_of(r)
    assert got == {
        "c1": [["s", [["1-1", ["n", "1"]]]]],
        "c2": [["s", [["2-1", ["n", "2"]]]]],
        "c3": [["s", [["3-1", ["n", "3"]]]]],
    }
    pending = result_of(await call(ahttp, "XPENDING", "s", "g"))
    assert pending == [3, "1-1", "3-1", [["c1", "1"], ["c2", "1"], ["c3", "1"]]]


async def test_concurrent_xadds_each_served_once(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """Twenty blocked consumers, twenty XADDs sent at once: every entry is delivered exactly once
    and every consumer gets exactly one (redis-server serves blocked clients after each command,
    so one XADD never feeds two readers and a reader never gets two XADDs' entries)."""
    await group(ahttp)
    n = 20
    waiters = [bg.spawn(timed(ahttp, *readgroup(f"c{i}", "4000"))) for i in range(n)]
    await still_waiting(server, waiters[-1], n)
    adds = await asyncio.gather(*(call(ahttp, "XADD", "s", "*", "i", str(i)) for i in range(n)))
    ids = sorted(result_of(r) for r in adds)
    delivered: list[str] = []
    for w in waiters:
        r, _ = await asyncio.wait_for(w, 6)
        got = result_of(r)
        assert got is not None, "a consumer was left waiting while entries went elsewhere"
        [[key, batch]] = got
        assert key == "s"
        assert len(batch) == 1, batch
        delivered.append(batch[0][0])
    assert sorted(delivered) == ids
    pending = result_of(await call(ahttp, "XPENDING", "s", "g"))
    assert pending[0] == n


async def test_one_entry_many_group_waiters(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """One XADD with three consumers waiting: exactly one (the first) gets it, the others keep
    waiting and time out with null — the entry is never delivered twice."""
    await group(ahttp)
    waiters = {}
    for name in ("c1", "c2", "c3"):
        waiters[name] = bg.spawn(timed(ahttp, *readgroup(name, "1500")))
        await still_waiting(server, waiters[name], len(waiters))  # in this order
    await call(ahttp, "XADD", "s", "1-1", "f", "v")
    results = {}
    for name, task in waiters.items():
        r, _ = await asyncio.wait_for(task, 5)
        results[name] = result_of(r)
    assert results == {"c1": [["s", [["1-1", ["f", "v"]]]]], "c2": None, "c3": None}
    assert result_of(await call(ahttp, "XPENDING", "s", "g")) == [1, "1-1", "1-1", [["c1", "1"]]]


async def test_transaction_goes_to_first_group_waiter_whole(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """Two XADDs in one /multi-exec with two consumers waiting: like redis-server (checked with
    redis-cli), the first waiter gets both entries and the second keeps waiting (null)."""
    await group(ahttp)
    first = bg.spawn(timed(ahttp, *readgroup("c1", "3000")))
    await still_waiting(server, first)
    second = bg.spawn(timed(ahttp, *readgroup("c2", "1000")))
    await still_waiting(server, second, 2)
    rows = [["XADD", "s", "1-1", "f", "v"], ["XADD", "s", "2-1", "f", "w"]]
    assert (await ahttp.post("/multi-exec", json=rows)).json() == [
        {"result": "1-1"},
        {"result": "2-1"},
    ]
    r, _ = await asyncio.wait_for(first, 5)
    assert result_of(r) == [["s", [["1-1", ["f", "v"]], ["2-1", ["f", "w"]]]]]
    r, _ = await asyncio.wait_for(second, 5)
    assert result_of(r) is None


async def abandon(server: Server, *commands: list[str]) -> None:
    """Send each command on a connection of its own, then drop them all while the server waits.

    The clients are built before any request is sent (building one takes a while); every
    request is blocked at the server before it is abandoned.
    """
    clients = [httpx.AsyncClient(base_url=server.url, timeout=30) for _ in commands]
    try:
        tasks = [
            asyncio.create_task(call(c, *args)) for c, args in zip(clients, commands, strict=True)
        ]
        await parked_async(server, len(commands))
        assert not any(t.done() for t in tasks), "a blocking call answered before it was abandoned"
        for t in tasks:
            t.cancel()
        for t in tasks:
            with pytest.raises(asyncio.CancelledError):
                await t
    finally:
        for c in clients:
            await c.aclose()


async def test_disconnected_group_reader_gets_nothing(
    server: Server, ahttp: httpx.AsyncClient
) -> None:
    """A client that goes away stops waiting: the next entry is not assigned to the departed
    consumer (XPENDING stays empty) and a live consumer gets it instead."""
    await group(ahttp)
    await abandon(server, readgroup("c1", "0"))
    await parked_async(server, 0)  # the server noticed the closed connection
    await call(ahttp, "XADD", "s", "1-1", "f", "v")
    # No wait needed: a waiter is served inside XADD's atomic step (in Redis, before any later
    # command runs), so a wrong delivery is in the PEL by the time XADD has answered.
    assert result_of(await call(ahttp, "XPENDING", "s", "g")) == [0, None, None, None]
    r = await call(ahttp, "XREADGROUP", "GROUP", "g", "c2", "COUNT", "10", "STREAMS", "s", ">")
    assert result_of(r) == [["s", [["1-1", ["f", "v"]]]]]


async def test_disconnected_reader_does_not_steal_from_live_one(
    bg: Background, server: Server, ahttp: httpx.AsyncClient
) -> None:
    """A departed waiter ahead in the queue must not take the entry from a live waiter behind it."""
    await group(ahttp)
    await abandon(server, readgroup("gone", "0"))
    live = bg.spawn(timed(ahttp, *readgroup("live")))
    await still_waiting(server, live)
    await call(ahttp, "XADD", "s", "1-1", "f", "v")
    added_at = time.monotonic()
    r, arrived_at = await asyncio.wait_for(live, 6)
    assert result_of(r) == [["s", [["1-1", ["f", "v"]]]]]
    assert arrived_at - added_at < WAKE_LIMIT
    assert result_of(await call(ahttp, "XPENDING", "s", "g")) == [1, "1-1", "1-1", [["live", "1"]]]


async def test_many_abandoned_waiters_leak_nothing(
    server: Server, ahttp: httpx.AsyncClient
) -> None:
    """Twenty abandoned BLOCK 0 requests (plain and group) leave no waiter behind: new entries
    all go to the one live consumer and nothing is pending for the departed ones."""
    await group(ahttp)
    await abandon(
        server,
        *(readgroup(f"gone{i}", "0") for i in range(10)),
        *(["XREAD", "BLOCK", "0", "STREAMS", "s", "$"] for _ in range(10)),
    )
    await parked_async(server, 0)  # the server noticed every closed connection
    for i in range(1, 6):
        await call(ahttp, "XADD", "s", f"{i}-1", "n", str(i))
    # No wait needed: a waiter is served inside XADD's atomic step (in Redis, before any later
    # command runs), so a wrong delivery is in the PEL by the time XADD has answered.
    assert result_of(await call(ahttp, "XPENDING", "s", "g")) == [0, None, None, None]
    r = await call(ahttp, "XREADGROUP", "GROUP", "g", "live", "STREAMS", "s", ">")
    got = result_of(r)
    assert [e[0] for e in got[0][1]] == ["1-1", "2-1", "3-1", "4-1", "5-1"]


async def test_group_destroyed_while_waiting(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """XGROUP DESTROY wakes the blocked XREADGROUP at once with Redis's NOGROUP error."""
    await group(ahttp)
    waiter = bg.spawn(timed(ahttp, *readgroup("c1", "5000")))
    await still_waiting(server, waiter)
    assert result_of(await call(ahttp, "XGROUP", "DESTROY", "s", "g")) == 1
    destroyed_at = time.monotonic()
    r, arrived_at = await asyncio.wait_for(waiter, 6)
    assert error_text(r) == NOGROUP_WHILE_BLOCKED
    assert arrived_at - destroyed_at < WAKE_LIMIT


async def test_stream_deleted_while_group_waiting(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """DEL of the stream wakes the blocked XREADGROUP at once with Redis's UNBLOCKED error."""
    await group(ahttp)
    waiter = bg.spawn(timed(ahttp, *readgroup("c1", "5000")))
    await still_waiting(server, waiter)
    assert result_of(await call(ahttp, "DEL", "s")) == 1
    deleted_at = time.monotonic()
    r, arrived_at = await asyncio.wait_for(waiter, 6)
    assert error_text(r) == STREAM_DELETED_WHILE_BLOCKED
    assert arrived_at - deleted_at < WAKE_LIMIT


async def test_flushall_while_group_waiting(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """FLUSHALL deletes the stream under a blocked XREADGROUP: same UNBLOCKED error as DEL
    (redis-server 7.0.15 does this for FLUSHDB/FLUSHALL, checked with redis-cli)."""
    await group(ahttp)
    waiter = bg.spawn(timed(ahttp, *readgroup("c1", "5000")))
    await still_waiting(server, waiter)
    assert result_of(await call(ahttp, "FLUSHALL")) == "OK"
    flushed_at = time.monotonic()
    r, arrived_at = await asyncio.wait_for(waiter, 6)
    assert error_text(r) == STREAM_DELETED_WHILE_BLOCKED
    assert arrived_at - flushed_at < WAKE_LIMIT


async def test_consumer_deleted_while_waiting_is_recreated(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """XGROUP DELCONSUMER doesn't unblock the reader; when an entry comes it is delivered and the
    consumer exists again, owning it (redis-server 7.0.15, checked with redis-cli)."""
    await group(ahttp)
    waiter = bg.spawn(timed(ahttp, *readgroup("c1", "5000")))
    await still_waiting(server, waiter)
    assert result_of(await call(ahttp, "XGROUP", "DELCONSUMER", "s", "g", "c1")) in (0, 1)
    await still_waiting(server, waiter, hold_s=0.2)  # DELCONSUMER leaves it blocked
    await call(ahttp, "XADD", "s", "1-1", "f", "v")
    r, _ = await asyncio.wait_for(waiter, 6)
    assert result_of(r) == [["s", [["1-1", ["f", "v"]]]]]
    assert result_of(await call(ahttp, "XPENDING", "s", "g")) == [1, "1-1", "1-1", [["c1", "1"]]]
    consumers = result_of(await call(ahttp, "XINFO", "CONSUMERS", "s", "g"))
    assert [(c[1], c[3]) for c in consumers] == [("c1", 1)]


async def test_recreated_stream_with_smaller_ids_does_not_wake_dollar(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """``$`` is fixed when the call starts (5-0 here): after DEL, an XADD of 1-1 is not "new" for
    the reader, which times out with null like on redis-server."""
    await call(ahttp, "XADD", "s", "5-0", "f", "v")
    t0 = time.monotonic()
    waiter = bg.spawn(timed(ahttp, "XREAD", "BLOCK", "1000", "STREAMS", "s", "$"))
    await still_waiting(server, waiter)
    await call(ahttp, "DEL", "s")
    await call(ahttp, "XADD", "s", "1-1", "f", "v")
    r, arrived_at = await asyncio.wait_for(waiter, 5)
    assert result_of(r) is None
    assert arrived_at - t0 >= 0.95


async def test_stream_deleted_while_plain_reader_waits(
    server: Server, bg: Background, ahttp: httpx.AsyncClient
) -> None:
    """A plain XREAD is *not* woken by DEL: it keeps waiting and times out with null (Redis 7.0)."""
    await call(ahttp, "XADD", "s", "1-1", "f", "v")
    t0 = time.monotonic()
    waiter = bg.spawn(timed(ahttp, "XREAD", "BLOCK", "1000", "STREAMS", "s", "$"))
    await still_waiting(server, waiter)
    assert result_of(await call(ahttp, "DEL", "s")) == 1
    r, arrived_at = await asyncio.wait_for(waiter, 5)
    assert result_of(r) is None
    assert arrived_at - t0 >= 0.95


# --------------------------------------------------------------------------- redis-server check


def _blocked_redis_reply(real_redis: Any, args: list[str], then: list[str]) -> str:
    """Run ``args`` (a blocking call) on one connection and ``then`` on another; the error text."""
    import redis

    out: list[str] = []

    def blocked() -> None:
        conn = redis.Redis(connection_pool=real_redis.connection_pool)
        try:
            out.append(repr(conn.execute_command(*args)))
        except redis.ResponseError as e:
            out.append(str(e))

    t = threading.Thread(target=blocked)
    t.start()
    parked(real_redis, 1)
    real_redis.execute_command(*then)
    t.join(6)
    assert not t.is_alive()
    return out[0]


@pytest.mark.redis
def test_redis_texts_for_deleted_while_blocked(real_redis: Any) -> None:
    """The constants above are what redis-server itself replies (guards the test's own premise)."""
    key = f"api-blocking-{uuid.uuid4().hex}"
    blocked = ["XREADGROUP", "GROUP", "g", "c1", "BLOCK", "5000", "STREAMS", key, ">"]
    try:
        real_redis.execute_command("XGROUP", "CREATE", key, "g", "$", "MKSTREAM")
        text = _blocked_redis_reply(real_redis, blocked, ["XGROUP", "DESTROY", key, "g"])
        assert text == NOGROUP_WHILE_BLOCKED
        real_redis.execute_command("XGROUP", "CREATE", key, "g", "$", "MKSTREAM")
        text = _blocked_redis_reply(real_redis, blocked, ["DEL", key])
        assert text == STREAM_DELETED_WHILE_BLOCKED
    finally:
        real_redis.delete(key)


def test_sync_clients_from_threads_also_wake(server: Server, xs: Commands) -> None:
    """The same wake-up seen from plain blocking HTTP clients on threads (no asyncio involved)."""
    out: list[Any] = []

    def reader() -> None:
        with httpx.Client(base_url=server.url, timeout=10) as c:
            r = c.post("/", json=["XREAD", "BLOCK", "5000", "STREAMS", "s", "$"])
            out.append((r.json(), time.monotonic()))

    t = threading.Thread(target=reader)
    t.start()
    parked(server, 1)
    assert xs("XADD", "s", "1-1", "f", "v") == "1-1"
    added_at = time.monotonic()
    t.join(6)
    assert not t.is_alive()
    body, arrived_at = out[0]
    assert body == {"result": [["s", [["1-1", ["f", "v"]]]]]}
    assert arrived_at - added_at < WAKE_LIMIT
