"""Connections and routing: one command, a sequence on one connection, a script, a write.

- Redis Cluster: a command goes to the master serving its key; a MOVED / ASK for a sequence
  refreshes the slot map and resends it once. SCAN walks the masters one after another
  (sorted by address); the cursor carries the master's index in its low 10 bits and that
  master's own cursor above them, so a cursor is valid while the set of masters stays the same.
- A caller cancelled while a command is on its way sees ``CancelledError``, even if the reply
  came back meanwhile (cancel.py: redis-py on Python 3.11 may drop it).
- A single command that answers at once goes through ``Mux`` (mux.py): the commands of
  concurrent requests share one connection per node, written together once per loop turn.
  In a cluster, a MOVED / ASK / TRYAGAIN / CLUSTERDOWN reply to it (nothing ran) hands it to
  redis-py's cluster path, which follows the redirect as before; a connection that failed
  has the slot map learnt again before the next command. A node redis-py reaches over TLS
  (or with settings ``Mux`` does not speak) stays on redis-py's path.
- ``wait_replicas`` > 0: each write is followed, on the same connection, by ``WAIT n
  timeout``; fewer confirmations raise ``ReplicasUnavailable`` (the write itself stays).
- Redis's trouble is never the request's: an error reply for a passing state of the server
  (CLUSTERDOWN, TRYAGAIN, MASTERDOWN, LOADING, READONLY... ``FAULT_CODES``) raises
  ``RedisFault`` with Redis's text, and no connection, no answer in time or no master known
  for a slot raise ``RedisUnavailable``: both ``BackendUnavailable``, which every surface
  answers 503 with ``Retry-After``. ``shards()`` reports each master's state for /readyz.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

from redis.asyncio import Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.connection import AbstractConnection, Connection, UnixDomainSocketConnection
from redis.exceptions import (
    AskError,
    ClusterDownError,
    MovedError,
    RedisClusterException,
    ResponseError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from app.backends.errors import (
    RedisUnavailable,
    ReplicasUnavailable,
)
from app.backends.idempotency import StillRunning
from app.backends.redis.cancel import cancellable
from app.backends.redis.features import Features, Version, info_field, parse_version
from app.backends.redis.idempotent import LEASE_LOST, attempt, next_write, writes
from app.backends.redis.mux import Mux
from app.backends.redis.parse import (
    Arg,
    Raw,
    decode,
    encode,
    redis_error,
)
from app.backends.redis.scripts import (
    eval_keys,
)
from app.backends.shards import ShardHealth, assess, unreachable
from app.engine.commands.keys import SCAN_COUNT, invalid_cursor
from app.engine.commands.table import COMMANDS
from app.engine.errors import CommandError

SCAN_NODE_BITS = 10  # a cluster SCAN cursor: master index in the low bits (up to 1024)
# Redis out of reach for a command: no connection, no answer in time, or (a cluster) no
# master known for the slot and the slot map could not be learnt again.
UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError, RedisClusterException)
# A cluster's replies for a slot on the move or a cluster in trouble: nothing ran, and
# redis-py's cluster path knows how to follow each (``call_plain``).
REDIRECTS = (MovedError, AskError, TryAgainError, ClusterDownError)


class Router:
    """One client (standalone or cluster), the node for a key, and the WAIT after a write."""

    def __init__(
        self,
        client: Redis | RedisCluster,
        *,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
        multiplex: bool = True,
    ) -> None:
        self.client = client
        # single commands through ``Mux``, else redis-py's path (a test may switch it)
        self.multiplex = multiplex
        self._muxes: dict[str, Mux | None] = {}  # by node name ('' standalone)
        self._relearn = False  # a multiplexed connection failed: learn the slot map again
        self._relearning: asyncio.Future[None] | None = None
        self.cluster = isinstance(client, RedisCluster)
        self.name = "redis-cluster" if self.cluster else "redis"
        self.wait_replicas = wait_replicas
        self.wait_timeout_ms = wait_timeout_ms
        self.features: Features | None = None  # learnt by ``start``
        _raw_replies(client)

    async def start(self) -> None:
        """Connect (a cluster learns its slots), check Redis answers, and learn what it can
        do (``features``)."""
        if self.cluster:
            await self.cluster_client.initialize()
        await self.call(None, "PING")
        await self.learn_features()

    async def learn_features(self) -> Features:
        """The server's version (INFO server; in a cluster the lowest of the masters') and
        its ``stream-node-max-entries`` (None where CONFIG GET is refused, as managed Redis
        may), kept for the commands that depend on them (features.py)."""
        nodes: list[ClusterNode | None] = list(self.masters()) if self.cluster else [None]
        versions: list[Version] = []
        entries: list[int] = []
        known = True
        for node in nodes:
            try:  # refused (an ACL without INFO): unknown, served as the oldest
                info = decode(await self.call(None, "INFO", "server", node=node))
            except CommandError:
                info = ""
            versions.append(parse_version(info_field(info, "redis_version") or "0.0.0"))
            try:
                reply = await self.call(None, "CONFIG", "GET", "stream-node-max-entries", node=node)
                entries.append(int(reply[1]))
            except (CommandError, IndexError, ValueError):
                known = False
        node_entries = (min(entries), max(entries)) if known and entries else None
        self.features = Features(min(versions), node_entries)
        return self.features

    async def server_features(self) -> Features:
        """``features``, learnt now if ``start`` was not called."""
        if self.features is None:
            return await self.learn_features()
        return self.features

    async def close(self) -> None:
        for mux in self._muxes.values():
            if mux is not None:
                mux.close()
        self._muxes.clear()
        await self.client.aclose()

    def _mux(self, node: ClusterNode | None) -> Mux | None:
        """The multiplexer for ``node`` (None: the one redis-server), made on first use;
        None where redis-py's path serves it (``multiplex`` off, TLS...)."""
        if not self.multiplex:
            return None
        name = node.name if node is not None else ""
        try:
            return self._muxes[name]
        except KeyError:
            pass
        cls: type[AbstractConnection]
        if node is not None:
            cls, settings = node.connection_class, node.connection_kwargs
        else:
            assert isinstance(self.client, Redis)
            pool = self.client.connection_pool
            cls, settings = pool.connection_class, pool.connection_kwargs
        mux = None
        if cls in (Connection, UnixDomainSocketConnection):
            timeout = settings.get("socket_timeout", 5.0)
            mux = Mux.of(
                {k: v for k, v in settings.items() if not k.startswith("socket_")},
                timeout=5.0 if timeout is None else timeout,
                connect_timeout=settings.get("socket_connect_timeout") or 5.0,
            )
        self._muxes[name] = mux
        return mux

    async def _relearn_slots(self) -> None:
        """The slot map learnt again after a multiplexed connection failed (a master may
        have gone): once for all the callers waiting meanwhile."""
        if self._relearning is None:
            self._relearn = False

            async def relearn() -> None:
                try:
                    await self.refresh_slots()
                except BaseException:
                    self._relearn = True
                    raise
                finally:
                    self._relearning = None

            self._relearning = asyncio.ensure_future(relearn())
        await asyncio.shield(self._relearning)

    async def shards(self, timeout_s: float) -> list[ShardHealth]:
        """Each master's health (app/backends/shards.py), probed at once on a connection of
        its own (no retry, no slot-map refresh: a probe must not disturb the traffic): its
        INFO replication and CLUSTER INFO. A master that does not answer within
        ``timeout_s`` is unreachable."""
        masters: list[ClusterNode | None] = list(self.masters()) if self.cluster else [None]
        return list(await asyncio.gather(*(self._shard(m, timeout_s) for m in masters)))

    async def _shard(self, node: ClusterNode | None, timeout_s: float) -> ShardHealth:
        if node is not None:
            name = node.name
        else:
            assert isinstance(self.client, Redis)
            kw = self.client.connection_pool.connection_kwargs
            name = f"{kw.get('host', 'localhost')}:{kw.get('port', 6379)}"
            name = kw.get("path") or name  # a unix socket
        # CLUSTER INFO on a server without cluster support is an error: no cluster state.
        probe: list[list[Arg]] = [["INFO", "replication"], ["CLUSTER", "INFO"]]
        try:
            info, cluster = await asyncio.wait_for(self._on_connection(node, probe), timeout_s)
        except TimeoutError:
            return unreachable(name, f"no answer in {timeout_s:g} s")
        except RedisUnavailable as e:
            return unreachable(name, e.text.removeprefix("ERR the Redis backend is unavailable: "))
        if isinstance(info, ResponseError):  # it answers, but not this (NOAUTH...)
            return ShardHealth(name, None, redis_error(info).text)
        state = None if isinstance(cluster, ResponseError) else decode(cluster)
        return assess(name, decode(info), state, self.wait_replicas)

    @property
    def cluster_client(self) -> RedisCluster:
        """The client, known to be a cluster's (the caller checked ``cluster``)."""
        assert isinstance(self.client, RedisCluster)
        return self.client

    async def refresh_slots(self) -> None:
        """Learn the slot map again (after a MOVED / ASK: the slot moved, nothing ran)."""
        await self.cluster_client.nodes_manager.initialize()

    def node(self, key: str | None) -> ClusterNode | None:
        """The master serving ``key`` (cluster), the default node for no key, None standalone."""
        if not self.cluster:
            return None
        if key is None:
            return self.cluster_client.get_default_node()
        try:
            # keyslot() hashes bytes as they are (the stub says str): a key need not be UTF-8.
            return self.cluster_client.get_node_from_key(encode(key))  # type: ignore[arg-type]
        except SlotNotCoveredError as e:  # no master known for it (a failover under way)
            raise RedisUnavailable(str(e)) from None

    def slot(self, key: str) -> int:
        return self.cluster_client.keyslot(encode(key)) if self.cluster else 0

    def masters(self) -> list[ClusterNode]:
        return sorted(self.cluster_client.get_primaries(), key=lambda n: n.name)

    async def call(self, key: str | None, *args: Arg, node: ClusterNode | None = None) -> Raw:
        """One command, routed by ``key`` (or to ``node``); an error reply raises its class.
        Inside an idempotent request (``idempotent.attempt``) a write is kept (``_kept``)."""
        if node is None and attempt() is not None and writes(args):
            return _one(await self._kept([list(args)], wait=False), args)
        return await self.call_plain(key, *args, node=node)

    async def call_plain(self, key: str | None, *args: Arg, node: ClusterNode | None = None) -> Raw:
        """``call``, never kept."""
        try:
            if self.cluster:
                # redis-py learns the cluster again where it closed it (after CLUSTERDOWN)
                await self.cluster_client.initialize()
                if self._relearn or self._relearning is not None:
                    await self._relearn_slots()
                target = node if node is not None else self.node(key)
                mux = self._mux(target) if target is not None else None
                if mux is not None:
                    try:
                        return await mux.call(args)
                    except REDIRECTS:
                        pass  # nothing ran: redis-py's path below follows it
                    except UNREACHABLE:
                        self._relearn = True
                        raise
                return await cancellable(
                    self.cluster_client.execute_command(*args, target_nodes=target)
                )
            mux = self._mux(None)
            if mux is not None:
                return await mux.call(args)
            return await cancellable(self.client.execute_command(*args))
        except ResponseError as e:
            raise redis_error(e, args) from None
        except UNREACHABLE as e:
            raise RedisUnavailable(str(e)) from None

    async def sequence(self, key: str | None, commands: list[list[Arg]]) -> list[Raw]:
        """Several commands on one connection, back to back (MULTI ... EXEC, a write then
        WAIT) on the node serving ``key``: every reply in order, an error reply as its
        ``ResponseError``. In a cluster, a MOVED / ASK reply (the slot moved: nothing ran)
        refreshes the slot map and the sequence is sent once more to the new owner. Inside
        an idempotent request, lines that write are kept as one (``_kept_sequence``)."""
        if attempt() is not None and any(writes(c) for c in commands):
            return await self._kept_sequence(commands)
        return await self._sequence(key, commands)

    async def _sequence(self, key: str | None, commands: list[list[Arg]]) -> list[Raw]:
        for again in range(2):
            replies = await self._on_connection(self.node(key), commands)
            moved = any(isinstance(r, MovedError | AskError) for r in _flat(replies))
            if not (self.cluster and moved) or again:
                return replies
            await self.refresh_slots()
        raise AssertionError("unreachable")

    async def pipelined(self, commands: Sequence[tuple[str, list[Arg]]]) -> list[Raw]:
        """Commands each routed by its key, in one pipeline, not a transaction: on
        redis-server one connection and one round trip; in a cluster redis-py's cluster
        pipeline sends each master its keys' commands at once, all masters concurrently, and
        resends one by one any a MOVED / ASK / TRYAGAIN answered (a slot on the move). Every
        reply in order: an error reply as its ``ResponseError``, a node out of reach as
        ``RedisUnavailable`` (not raised: the caller reads the replies in order)."""
        try:
            if self.cluster:
                cpipe = self.cluster_client.pipeline()
                for key, args in commands:
                    cpipe.execute_command(*args, target_nodes=self.node(key))
                replies = await cancellable(cpipe.execute(raise_on_error=False))
            else:
                assert isinstance(self.client, Redis)
                async with self.client.pipeline(transaction=False) as pipe:
                    for _, args in commands:
                        pipe.execute_command(*args)
                    replies = await cancellable(pipe.execute(raise_on_error=False))
        except UNREACHABLE as e:
            raise RedisUnavailable(str(e)) from None
        return [RedisUnavailable(str(r)) if isinstance(r, UNREACHABLE) else r for r in replies]

    async def _on_connection(
        self, node: ClusterNode | None, commands: list[list[Arg]]
    ) -> list[Raw]:
        """``commands`` on one connection; one left with replies unread (a timeout, a
        cancelled caller) is closed, never reused."""
        # WAIT may take its whole timeout: reads allow that much more than redis-py's 5 s.
        timeout = 5.0 + self.wait_timeout_ms / 1000
        try:
            if node is None:
                assert isinstance(self.client, Redis)
                pool = self.client.connection_pool
                conn = await pool.get_connection()  # type: ignore[no-untyped-call]
                try:
                    return await cancellable(_exchange(conn, commands, timeout))
                finally:
                    await pool.release(conn)
            conn = node.acquire_connection()
            try:
                return await cancellable(_exchange(conn, commands, timeout))
            finally:
                node.release(conn)
        except UNREACHABLE as e:
            raise RedisUnavailable(str(e)) from None

    async def write(self, key: str | None, *args: Arg) -> Raw:
        """A write; with ``wait_replicas``, followed by WAIT on the same connection. Inside
        an idempotent request it is kept (``_kept``)."""
        if attempt() is not None:
            return _one(await self._kept([list(args)], wait=bool(self.wait_replicas)), args)
        if not self.wait_replicas:
            return await self.call(key, *args)
        reply, acked = await self.sequence(key, [list(args), self.wait_args()])
        if isinstance(reply, ResponseError):
            raise redis_error(reply, args)
        self.check_acked(acked)
        return reply

    async def _kept(self, lines: list[list[Arg]], *, wait: bool) -> list[Raw]:
        """``lines`` as one script that keeps their replies in the request's record
        (app/backends/redis/idempotent.py), or the replies an earlier attempt's same write
        got; with ``wait``, followed by WAIT on the same connection."""
        earlier, line = next_write(lines)
        if earlier is not None:
            return earlier
        current = attempt()
        assert current is not None
        sent = [line, self.wait_args()] if wait else [line]
        replies = await self._sequence(current.record, sent)
        reply = replies[0]
        if isinstance(reply, ResponseError):
            error = redis_error(reply)
            if error.text == LEASE_LOST:
                raise StillRunning
            raise error
        if wait:
            self.check_acked(replies[1])
        assert isinstance(reply, list)
        return reply

    async def _kept_sequence(self, commands: list[list[Arg]]) -> list[Raw]:
        """A MULTI ... EXEC block or a pipeline (each maybe followed by WAIT) as ``_kept``,
        its replies shaped as the sequence's would be."""
        wait = bool(commands) and _name(commands[-1][0]) == "wait"
        body = commands[:-1] if wait else commands
        multi = bool(body) and _name(body[0][0]) == "multi"
        lines = body[1:-1] if multi else body
        replies = await self._kept(lines, wait=wait)
        out: list[Raw] = [b"OK", *([b"QUEUED"] * len(lines)), replies] if multi else replies
        return [*out, self.wait_replicas] if wait else out

    def wait_args(self) -> list[Arg]:
        return ["WAIT", self.wait_replicas, self.wait_timeout_ms]

    def check_acked(self, acked: Raw) -> None:
        if isinstance(acked, ResponseError):
            raise redis_error(acked)
        if int(acked) < self.wait_replicas:
            raise ReplicasUnavailable(int(acked), self.wait_replicas)

    async def script(self, script: str, key: str, *args: Arg, write: bool = False) -> Raw:
        """``script`` over ``key``, with ``args`` as ARGV; ``write``: followed by WAIT."""
        line = eval_keys(script, [key], args)
        if write:
            return await self.write(key, *line)
        return await self.call(key, *line)

    async def cluster_scan(self, cursor_text: str, options: list[Arg]) -> Raw:
        masters = self.masters()
        try:
            cursor = int(cursor_text)
        except ValueError:
            raise invalid_cursor() from None
        index, node_cursor = cursor & ((1 << SCAN_NODE_BITS) - 1), cursor >> SCAN_NODE_BITS
        if cursor < 0 or index >= len(masters):
            raise invalid_cursor()
        # A master done before the page holds COUNT keys hands over to the next at once: an
        # empty keyspace ends in one call and a MATCH page is not cut at a node's edge.
        want = _scan_count(options)
        found: list[Raw] = []
        while True:
            nxt, keys = await self.call(None, "SCAN", node_cursor, *options, node=masters[index])
            found += keys
            if int(nxt):
                return [str((int(nxt) << SCAN_NODE_BITS) | index).encode(), found]
            index += 1
            if index == len(masters):
                return [b"0", found]
            if len(found) >= want:
                return [str(index).encode(), found]
            node_cursor = 0


def _one(replies: list[Raw], args: Sequence[Arg]) -> Raw:
    """The one reply of a kept line: an error reply raised as its class."""
    reply = replies[0]
    if isinstance(reply, ResponseError):
        raise redis_error(reply, args)
    return reply


def _name(arg: Arg) -> str:
    return (arg.decode("latin-1") if isinstance(arg, bytes) else str(arg)).lower()


def _scan_count(options: Sequence[Arg]) -> int:
    """SCAN's COUNT among its options (name and value pairs; the last one given, as Redis
    reads them), else Redis's default. A malformed one is Redis's to refuse, on the first call."""
    want = SCAN_COUNT
    for opt, value in zip(options[::2], options[1::2], strict=False):
        name = encode(opt) if isinstance(opt, str) else opt
        if isinstance(name, bytes) and name.lower() == b"count":
            with contextlib.suppress(ValueError, TypeError):
                want = int(value)
    return want


def _raw_replies(client: Redis | RedisCluster) -> None:
    """Drop redis-py's reply parsing for every command this backend sends, so replies come
    as Redis sent them. A cluster client keeps the callbacks it needs itself (CLUSTER SLOTS,
    COMMAND)."""
    names = {name.upper() for name in COMMANDS} | {"EVAL", "TIME", "WAIT", "MULTI", "EXEC"}
    for table in (client.response_callbacks, getattr(client, "result_callbacks", {})):
        for name in list(table):
            if name.upper() in names or name.upper().split(" ")[0] in names:
                del table[name]


async def _exchange(
    conn: AbstractConnection, commands: list[list[Arg]], timeout: float
) -> list[Raw]:
    out: list[Raw] = []
    try:
        await conn.send_packed_command(conn.pack_commands(commands))
        for _ in commands:
            try:
                out.append(await conn.read_response(timeout=timeout))
            except ResponseError as e:
                out.append(e)
    except BaseException:
        await conn.disconnect()  # replies may still be on their way: never reuse it
        raise
    return out


def _flat(replies: list[Raw]) -> list[Raw]:
    """Replies and the replies inside them one level down (EXEC's array)."""
    out = list(replies)
    for r in replies:
        if isinstance(r, list):
            out += r
    return out
