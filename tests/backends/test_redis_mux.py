"""The multiplexer's own paths (app/backends/redis/mux.py, issue 38): one write for the
commands of a loop turn, replies in order, and each fault leaving no waiter with another's
reply. A fake server on loopback replies when and how each test says; the redirects of a
real cluster go back to redis-py's path."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import redis as redis_sync
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from app.backends.errors import RedisUnavailable
from app.backends.redis import RedisBackend
from app.backends.redis.mux import Mux, pack
from app.engine.errors import WrongType
from tests.support.waiting import until_async

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def fake_server(handler: Handler) -> AsyncIterator[int]:
    """A server on a free loopback port that runs ``handler`` for each connection; the
    handlers still running at the end are stopped."""
    running: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        running.add(task)
        try:
            await handler(reader, writer)
        except (asyncio.CancelledError, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            running.discard(task)

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for task in list(running):
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)


async def commands(reader: asyncio.StreamReader, n: int) -> list[list[bytes]]:
    """The next ``n`` commands the client sent (RESP arrays of bulk strings)."""
    out = []
    for _ in range(n):
        count = int((await reader.readline())[1:])
        args = []
        for _ in range(count):
            size = int((await reader.readline())[1:])
            args.append((await reader.readexactly(size + 2))[:-2])
        out.append(args)
    return out


def test_pack_is_redis_py_s_encoding() -> None:
    assert (
        pack(["XADD", b"k\xff", "*", 5])
        == b"*4\r\n$4\r\nXADD\r\n$2\r\nk\xff\r\n$1\r\n*\r\n$1\r\n5\r\n"
    )
    assert pack(["CONFIG GET", "x"]) == pack(["CONFIG", "GET", "x"])
    with pytest.raises(TypeError):
        pack(["SET", True])


async def test_one_write_per_loop_turn_and_replies_in_order() -> None:
    reads = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal reads
        got = b""
        while got.count(b"ECHO") < 20:
            got += await reader.read(65536)
            reads += 1
        # reply in order, each ECHO's argument as a bulk string, and a last error reply
        for n in range(19):
            writer.write(b"$%d\r\n%d\r\n" % (len(str(n)), n))
        writer.write(b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n")
        await writer.drain()
        await reader.read()

    async with fake_server(serve) as port:
        mux = Mux({"host": "127.0.0.1", "port": port})
        await mux._connected()  # connected first: the 20 commands then go in one write
        calls = [mux.call(["ECHO", n]) for n in range(20)]
        got = await asyncio.gather(*calls, return_exceptions=True)
        mux.close()
    assert got[:19] == [str(n).encode() for n in range(19)]
    assert isinstance(got[19], ResponseError) and "WRONGTYPE" in str(got[19])
    assert reads == 1


async def test_a_late_reply_times_out_and_reaches_no_other_waiter() -> None:
    """No reply in time: the command fails as redis-py's socket timeout did, the connection
    is dropped with it, and the next command, on a new connection, gets its own reply even
    though the old one's reply arrives meanwhile."""
    connections = 0
    timed_out, sent_late = asyncio.Event(), asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        first = connections == 1
        while True:
            [(_, arg)] = await commands(reader, 1)
            if first:
                await timed_out.wait()  # answered only after the client gave up
            try:
                writer.write(b"$%d\r\n%b\r\n" % (len(arg), arg))
                await writer.drain()
            finally:
                if first:
                    sent_late.set()

    async with fake_server(serve) as port:
        mux = Mux({"host": "127.0.0.1", "port": port}, timeout=0.1)
        with pytest.raises(RedisTimeoutError, match="Timeout reading from"):
            await mux.call(["ECHO", "late"])
        assert await mux.call(["ECHO", "next"]) == b"next"
        timed_out.set()
        await asyncio.wait_for(sent_late.wait(), 10)  # the late reply, on the old connection
        assert await mux.call(["ECHO", "again"]) == b"again"
        mux.close()
    assert connections == 2


async def test_a_connection_closed_mid_batch_fails_the_rest_and_reconnects() -> None:
    connections = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        if connections == 1:
            await commands(reader, 3)
            writer.write(b"+first\r\n$3\r\nha")  # one reply and half of the next, then gone
            await writer.drain()
            writer.close()
            return
        while True:
            [cmd] = await commands(reader, 1)
            writer.write(b"$%d\r\n%b\r\n" % (len(cmd[1]), cmd[1]))

    async with fake_server(serve) as port:
        mux = Mux({"host": "127.0.0.1", "port": port})
        await mux._connected()
        got = await asyncio.gather(
            *(mux.call(["ECHO", s]) for s in ("a", "b", "c")), return_exceptions=True
        )
        assert got[0] == b"first"
        assert all(isinstance(e, RedisConnectionError) for e in got[1:]), got
        assert await mux.call(["ECHO", "after"]) == b"after"
        mux.close()
    assert connections == 2


async def test_a_cancelled_caller_s_reply_is_dropped_in_its_turn() -> None:
    release, holding = asyncio.Event(), asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            [cmd] = await commands(reader, 1)
            if cmd[1] == b"slow":
                holding.set()
                await release.wait()
            writer.write(b"$%d\r\n%b\r\n" % (len(cmd[1]), cmd[1]))

    async with fake_server(serve) as port:
        mux = Mux({"host": "127.0.0.1", "port": port})
        slow = asyncio.ensure_future(mux.call(["ECHO", "slow"]))
        await holding.wait()  # the server holds the slow reply
        slow.cancel()
        after = asyncio.ensure_future(mux.call(["ECHO", "mine"]))
        pipe = mux._pipe
        assert pipe is not None
        await until_async(lambda: len(pipe._waiting) == 2, what="mine, behind the slow one")
        release.set()
        assert await after == b"mine"
        with pytest.raises(asyncio.CancelledError):
            await slow
        mux.close()


async def test_nothing_listening_is_a_connection_error() -> None:
    async with fake_server(lambda r, w: asyncio.sleep(0)) as port:
        pass  # closed: nothing listens on the port now
    mux = Mux({"host": "127.0.0.1", "port": port})
    with pytest.raises(RedisConnectionError, match="connecting to"):
        await mux.call(["PING"])


async def test_auth_and_select_precede_every_command() -> None:
    seen: list[list[bytes]] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.extend(await commands(reader, 2))
        writer.write(b"+OK\r\n+OK\r\n")
        seen.extend(await commands(reader, 1))
        writer.write(b"+PONG\r\n")
        await reader.read()

    async with fake_server(serve) as port:
        mux = Mux({"host": "127.0.0.1", "port": port, "db": 3, "username": "u", "password": "p"})
        assert await mux.call(["PING"]) == b"PONG"
        mux.close()
    assert seen == [[b"AUTH", b"u", b"p"], [b"SELECT", b"3"], [b"PING"]]


async def test_a_refused_password_is_a_connection_error() -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await commands(reader, 1)
        writer.write(b"-WRONGPASS invalid username-password pair or user is disabled.\r\n")
        await reader.read()

    async with fake_server(serve) as port:
        mux = Mux({"host": "127.0.0.1", "port": port, "password": "p"})
        with pytest.raises(RedisConnectionError, match="invalid username-password"):
            await mux.call(["PING"])


def test_tls_and_settings_beyond_it_keep_redis_py_s_path() -> None:
    backend = RedisBackend.from_url("rediss://127.0.0.1:1/0")
    assert backend.router._mux(None) is None
    assert Mux.of({"host": "h", "port": 1, "client_name": "x"}) is None
    assert Mux.of({"host": "h", "port": 1, "protocol": 3}) is None
    assert Mux.of({"host": "h", "port": 1, "protocol": 2, "credential_provider": None})


async def test_the_backend_answers_a_dead_connection_unavailable_then_recovers() -> None:
    """The backend's view: a connection lost under a command is ``RedisUnavailable`` (503),
    the next command connects again."""
    connections = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await commands(reader, 1)
        if connections == 1:
            return  # closed under the command
        while True:
            writer.write(b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n")
            await commands(reader, 1)

    async with fake_server(serve) as port:
        backend = RedisBackend.from_url(f"redis://127.0.0.1:{port}/0")
        with pytest.raises(RedisUnavailable, match="Connection closed by server"):
            await backend.router.call("s", "XLEN", "s")
        with pytest.raises(WrongType):
            await backend.router.call("s", "XLEN", "s")
        await backend.close()


# --- a real cluster: redirects go back to redis-py's path -----------------------------------
@pytest.fixture
async def cluster(cluster_nodes: list[str]) -> AsyncIterator[RedisBackend]:
    b = RedisBackend.from_url("redis+cluster://" + ",".join(cluster_nodes))
    await b.start()
    yield b
    await b.close()


def _node_client(node: Any) -> redis_sync.Redis:
    return redis_sync.Redis(host=node.host, port=node.port)


async def test_a_moved_reply_is_followed(cluster: RedisBackend) -> None:
    router = cluster.router
    key = "mux-moved"
    owner = router.node(key)
    other = next(n for n in router.masters() if n.name != owner.name)  # type: ignore[union-attr]
    await cluster.command(["XADD", key, "*", "f", "v"])
    assert await router.call_plain(key, "XLEN", key, node=other) == 1
    assert router._mux(other) is not None


async def test_an_ask_reply_is_followed(cluster: RedisBackend) -> None:
    """A slot being migrated: its old owner answers ASK for a key it no longer has, and the
    command goes to the new owner after ASKING."""
    router = cluster.router
    key = "mux-ask"
    slot = router.slot(key)
    source = router.node(key)
    assert source is not None
    dest = next(n for n in router.masters() if n.name != source.name)
    src, dst = _node_client(source), _node_client(dest)
    try:
        dst.execute_command(
            "CLUSTER", "SETSLOT", slot, "IMPORTING", src.execute_command("CLUSTER", "MYID")
        )
        src.execute_command(
            "CLUSTER", "SETSLOT", slot, "MIGRATING", dst.execute_command("CLUSTER", "MYID")
        )
        assert await router.call_plain(key, "XLEN", key) == 0
    finally:
        for c in (src, dst):
            c.execute_command("CLUSTER", "SETSLOT", slot, "STABLE")
            c.close()


def test_it_runs_on_uvloop() -> None:
    """The server runs on uvloop, whose transports are not ``asyncio.Transport``."""
    uvloop = pytest.importorskip("uvloop")

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            [cmd] = await commands(reader, 1)
            writer.write(b"$%d\r\n%b\r\n" % (len(cmd[1]), cmd[1]))

    async def main() -> list[Any]:
        async with fake_server(serve) as port:
            mux = Mux({"host": "127.0.0.1", "port": port})
            got = await asyncio.gather(*(mux.call(["ECHO", str(n)]) for n in range(3)))
            mux.close()
            return got

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        assert runner.run(main()) == [b"0", b"1", b"2"]


async def test_a_lost_cluster_connection_has_the_slot_map_learnt_again(
    cluster: RedisBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As redis-py's cluster path did: a node's connection failing is a 503 for the command,
    and the slot map is learnt again (a master may have gone) before the next one."""
    router = cluster.router
    key = "mux-lost"
    mux = router._mux(router.node(key))
    assert mux is not None
    real_call, relearnt = mux.call, 0

    async def lost(args: Any) -> Any:
        monkeypatch.setattr(mux, "call", real_call)
        raise RedisConnectionError("Connection closed by server.")

    real_refresh = router.refresh_slots

    async def refresh() -> None:
        nonlocal relearnt
        relearnt += 1
        await real_refresh()

    monkeypatch.setattr(mux, "call", lost)
    monkeypatch.setattr(router, "refresh_slots", refresh)
    with pytest.raises(RedisUnavailable):
        await router.call(key, "XLEN", key)
    assert relearnt == 0
    assert await router.call(key, "XLEN", key) == 0
    assert await router.call(key, "XLEN", key) == 0
    assert relearnt == 1
