"""The Redis backend: the Backend protocol served by redis-server or Redis Cluster.

Redis decides every semantic rule; this package only builds Redis argv from the engine's
typed arguments (the one place allowed to) and parses Redis's raw replies into the engine's
reply objects, so REST, SSE and the command endpoint shape them exactly as they shape the
embedded engine's. Front-ends keep no state: any number of them may share one Redis.

Split by concern, as redis-py keeps connections, commands and reply parsing apart. The
client side (router, blocking reads, reads) is objects, each given the ones it needs when it
is made. The Backend's methods are parts of ``RedisBackend`` itself (streams, groups,
delivery, webhooks, the command endpoint), as redis-py builds its client from command
mixins: a method is written once, in its part, and no pass-through repeats it. Each module's
docstring says the choices a caller may rely on:

- urls.py: which client a ``--backend`` URL names, and its blocking-read pools;
- parse.py: bytes, IDs, errors and replies, to and from the engine's types (functions);
- routing.py: ``Router``, the client: routing by key, a sequence on one connection, WAIT
  after a write, SCAN across masters, Redis's faults, the shards' health; cancel.py: a
  cancellation redis-py may drop, raised anyway;
- blocking.py: ``BlockingReads`` over the router: its own bounded connections, XREAD split
  by slot, a client that leaves;
- lua/: every Lua script, a file each, and their loader; scripts.py names them;
  limits.py and caps.py (functions): the engine's limits in front of Redis, as the command
  line to send and how to read its reply;
- reads.py: ``Reads`` over the router and the blocking reads: XREAD / XREADGROUP within
  the limits, typed or raw;
- passthrough.py: ``Passthrough`` over the router and the reads: the command endpoint
  (one command, pipeline, multi-exec);
- streams.py: ``Streams`` over the router and the reads; groups.py: ``Groups`` over the
  router: the typed operations; rates.py: ``Rates``, credentials' request budgets;
- features.py: the server's version, learnt at start, and which of the stream commands Redis
  added after 7.0 it has; newer.py: those commands on a server that lacks them (a script
  where 7.0's commands do the same exactly, else ``NotAvailable``).
- delivery.py: ``RedisDelivery`` over the router: groups' delivery policies (applied by every
  group read, reads.py and passthrough.py), redrive, retention; policy_scripts.py: their
  scripts; webhooks.py: ``Webhooks``, groups' webhooks kept beside their policies.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from app.backends.base import Gone
from app.backends.idempotency import Run, Ticket, blocking_refused
from app.backends.redis.blocking import BlockingReads
from app.backends.redis.groups import Groups
from app.backends.redis.idempotent import attempt, idempotent
from app.backends.redis.passthrough import Passthrough
from app.backends.redis.rates import Rates
from app.backends.redis.reads import Reads
from app.backends.redis.routing import Router
from app.backends.redis.streams import Streams
from app.backends.redis.urls import BlockPools, cluster_address, connect
from app.backends.redis.webhooks import Webhooks
from app.backends.shards import ShardHealth
from app.engine.commands.reads import ReadRequest, may_block
from app.engine.errors import CommandError
from app.engine.limits import Limits
from app.engine.replies import CommandReply, StreamRead

__all__ = ["RedisBackend", "cluster_address"]


class RedisBackend(Passthrough, Streams, Groups, Webhooks, Rates):
    """The Backend protocol over redis-py's asyncio clients (standalone or cluster).

    Its methods are its parts' (this package's docstring), as redis-py's client is put
    together from its command mixins: a new operation is written once, in its part, with no
    pass-through here. This class only connects the parts (the router, the blocking reads,
    the limits they share) and adds what spans two of them: a stream or a group removed
    forgets its policies, and an idempotent request refuses a read that may block."""

    stateless = True
    checks_commands = False  # the surface refuses what the table refuses: Redis never sees it

    def __init__(
        self,
        client: Redis | RedisCluster,
        *,
        block_pools: BlockPools,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
        block_connections: int = 64,
        limits: Limits | None = None,
        idempotency_window_ms: int = 24 * 3600 * 1000,
    ) -> None:
        self.limits = limits = limits or Limits()
        self.idempotency_window_ms = idempotency_window_ms
        router = Router(client, wait_replicas=wait_replicas, wait_timeout_ms=wait_timeout_ms)
        blocking = BlockingReads(router, block_pools, block_connections)
        reads = Reads(router, blocking, limits)
        self.router, self.blocking_reads = router, blocking
        self._router, self._reads, self._limits = router, reads, limits
        self.name = router.name

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
        block_connections: int = 64,
        limits: Limits | None = None,
        idempotency_window_ms: int = 24 * 3600 * 1000,
    ) -> RedisBackend:
        """A backend for ``url`` (app/backends/redis/urls.py), not connected yet."""
        client, block_pools = connect(url, block_connections)
        return cls(
            client,
            block_pools=block_pools,
            wait_replicas=wait_replicas,
            wait_timeout_ms=wait_timeout_ms,
            block_connections=block_connections,
            limits=limits,
            idempotency_window_ms=idempotency_window_ms,
        )

    async def start(self) -> None:
        await self.router.start()

    async def close(self) -> None:
        await self.blocking_reads.close()
        await self.router.close()

    async def shards(self, timeout_s: float) -> list[ShardHealth]:
        return await self.router.shards(timeout_s)

    @asynccontextmanager
    async def answering(self) -> AsyncIterator[None]:
        """Nothing to wait for: a write returned once Redis (and WAIT) answered."""
        yield

    def idempotent(self, ticket: Ticket) -> AbstractAsyncContextManager[Run]:
        """The record lives in Redis, written by the same script as each write (idempotent.py)."""
        router = self.router
        return idempotent(router.call_plain, router.cluster, ticket, self.idempotency_window_ms)

    # --- what the parts do, and more ---------------------------------------------------
    async def command(self, argv: Sequence[str], gone: Gone | None = None) -> CommandReply:
        _refuse_blocking(may_block(argv))
        return await super().command(argv, gone)

    async def pipeline(
        self, commands: Sequence[Sequence[str]], gone: Gone | None = None
    ) -> list[CommandReply | CommandError]:
        _refuse_blocking(any(may_block(argv) for argv in commands))
        return await super().pipeline(commands, gone)

    async def read(self, request: ReadRequest, gone: Gone | None = None) -> list[StreamRead]:
        _refuse_blocking(request.block_ms is not None)
        return await super().read(request, gone)

    async def delete_stream(self, key: str) -> bool:
        gone = await super().delete_stream(key)
        await self.forget_stream(key)
        return gone

    async def destroy_group(self, key: str, name: str) -> bool:
        gone = await super().destroy_group(key, name)
        if gone:
            await self.forget_group(key, name)
        return gone


def _refuse_blocking(blocks: bool) -> None:
    """Inside an idempotent request a read that may block is refused (``BLOCKING_REFUSED``)."""
    if blocks and attempt() is not None:
        raise blocking_refused()
