"""The Redis backend: the Backend protocol served by redis-server or Redis Cluster.

Redis decides every semantic rule; this package only builds Redis argv from the engine's
typed arguments (the one place allowed to) and parses Redis's raw replies into the engine's
reply objects, so REST, SSE and the command endpoint shape them exactly as they shape the
embedded engine's. Front-ends keep no state: any number of them may share one Redis.

Split by concern, as redis-py keeps connections, commands and reply parsing apart. Each
concern is one object, given the objects it needs when it is made; ``RedisBackend`` only
builds them and hands each protocol method to the one that serves it. Each module's
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
  router: the typed operations;
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
from app.backends.redis.delivery import RedisDelivery
from app.backends.redis.groups import Groups
from app.backends.redis.idempotent import attempt, idempotent
from app.backends.redis.passthrough import Passthrough
from app.backends.redis.reads import Reads
from app.backends.redis.routing import Router
from app.backends.redis.streams import Streams
from app.backends.redis.urls import BlockPools, cluster_address, connect
from app.backends.redis.webhooks import Webhooks
from app.backends.shards import ShardHealth
from app.engine.commands.claims import AutoClaimArgs, ClaimArgs
from app.engine.commands.groups import PendingArgs
from app.engine.commands.nack import NackArgs
from app.engine.commands.reads import ReadRequest, may_block
from app.engine.commands.streams import RangeArgs, XAddArgs, XSetIdArgs
from app.engine.commands.xcfgset import XCfgSetArgs
from app.engine.delivery import (
    DeliveryPolicy,
    DeliveryStats,
    RedriveArgs,
    Redriven,
    Retention,
    Webhook,
)
from app.engine.errors import CommandError
from app.engine.ids import StreamID
from app.engine.limits import Limits
from app.engine.refs import RefPolicy
from app.engine.replies import (
    AutoClaim,
    CommandReply,
    ConsumerInfo,
    GroupInfo,
    PendingRow,
    PendingSummary,
    ScanPage,
    StreamFullInfo,
    StreamInfo,
    StreamRead,
)
from app.engine.stream import Entry, TrimSpec
from app.engine.webhook_health import HealthUpdate, WebhookHealth

__all__ = ["RedisBackend", "cluster_address"]


class RedisBackend:
    """The Backend protocol over redis-py's asyncio clients (standalone or cluster): each
    method is the one of the object that serves it (this package's docstring)."""

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
        self._delivery = delivery = RedisDelivery(router)
        self._webhooks = Webhooks(router, delivery)
        self._passthrough = Passthrough(router, reads, limits, delivery)
        self._streams = Streams(router, reads, limits)
        self._groups = Groups(router, limits)
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

    # --- command endpoint: Passthrough ------------------------------------------------
    async def command(self, argv: Sequence[str], gone: Gone | None = None) -> CommandReply:
        _refuse_blocking(may_block(argv))
        return await self._passthrough.command(argv, gone)

    async def pipeline(
        self, commands: Sequence[Sequence[str]], gone: Gone | None = None
    ) -> list[CommandReply | CommandError]:
        _refuse_blocking(any(may_block(argv) for argv in commands))
        return await self._passthrough.pipeline(commands, gone)

    async def multi_exec(
        self, commands: Sequence[Sequence[str]]
    ) -> list[CommandReply | CommandError]:
        return await self._passthrough.multi_exec(commands)

    # --- streams and entries: Streams -------------------------------------------------
    async def scan(self, cursor: int, match: str | None, count: int | None) -> ScanPage:
        return await self._streams.scan(cursor, match, count)

    async def stream_info(self, key: str) -> StreamInfo:
        return await self._streams.stream_info(key)

    async def stream_infos(self, keys: Sequence[str]) -> list[StreamInfo | None]:
        return await self._streams.stream_infos(keys)

    async def stream_full_info(self, key: str, count: int) -> StreamFullInfo:
        return await self._streams.stream_full_info(key, count)

    async def delete_stream(self, key: str) -> bool:
        gone = await self._streams.delete_stream(key)
        await self._delivery.forget_stream(key)
        return gone

    async def trim(self, key: str, spec: TrimSpec) -> int:
        return await self._streams.trim(key, spec)

    async def set_id(self, args: XSetIdArgs) -> None:
        await self._streams.set_id(args)

    async def configure_idmp(self, args: XCfgSetArgs) -> None:
        await self._streams.configure_idmp(args)

    async def append(self, batch: Sequence[XAddArgs]) -> list[StreamID | None]:
        return await self._streams.append(batch)

    async def range(self, args: RangeArgs, rev: bool = False) -> list[Entry]:
        return await self._streams.range(args, rev)

    async def delete_entries(self, key: str, ids: Sequence[StreamID]) -> int:
        return await self._streams.delete_entries(key, ids)

    async def delete_with_policy(
        self, key: str, ids: Sequence[StreamID], policy: RefPolicy
    ) -> list[int]:
        return await self._streams.delete_with_policy(key, ids, policy)

    async def read(self, request: ReadRequest, gone: Gone | None = None) -> list[StreamRead]:
        _refuse_blocking(request.block_ms is not None)
        return await self._streams.read(request, gone)

    # --- groups, consumers and pending entries: Groups --------------------------------
    async def groups(self, key: str, start: str = "", count: int = 0) -> list[GroupInfo]:
        return await self._groups.groups(key, start, count)

    async def group(self, key: str, name: str) -> GroupInfo:
        return await self._groups.group(key, name)

    async def create_group(
        self, key: str, name: str, id_text: str, mkstream: bool, entries_read: int | None
    ) -> None:
        await self._groups.create_group(key, name, id_text, mkstream, entries_read)

    async def set_group_id(
        self, key: str, name: str, id_text: str, entries_read: int | None
    ) -> None:
        await self._groups.set_group_id(key, name, id_text, entries_read)

    async def destroy_group(self, key: str, name: str) -> bool:
        gone = await self._groups.destroy_group(key, name)
        if gone:
            await self._delivery.forget_group(key, name)
        return gone

    async def consumers(
        self, key: str, group: str, start: str = "", count: int = 0
    ) -> list[ConsumerInfo]:
        return await self._groups.consumers(key, group, start, count)

    async def create_consumer(self, key: str, group: str, consumer: str) -> bool:
        return await self._groups.create_consumer(key, group, consumer)

    async def delete_consumer(self, key: str, group: str, consumer: str) -> int:
        return await self._groups.delete_consumer(key, group, consumer)

    async def ack(self, key: str, group: str, ids: Sequence[StreamID]) -> int:
        return await self._groups.ack(key, group, ids)

    async def ack_delete(
        self, key: str, group: str, ids: Sequence[StreamID], policy: RefPolicy
    ) -> list[int]:
        return await self._groups.ack_delete(key, group, ids, policy)

    async def nack(self, args: NackArgs) -> int:
        return await self._groups.nack(args)

    async def pending_summary(self, key: str, group: str) -> PendingSummary:
        return await self._groups.pending_summary(key, group)

    async def pending(self, args: PendingArgs) -> list[PendingRow]:
        return await self._groups.pending(args)

    async def claim(self, args: ClaimArgs) -> list[Entry | StreamID]:
        return await self._groups.claim(args)

    async def autoclaim(self, args: AutoClaimArgs) -> AutoClaim:
        return await self._groups.autoclaim(args)

    # --- delivery policies and retention: RedisDelivery ------------------------------
    async def delivery_policy(self, key: str, group: str) -> DeliveryPolicy | None:
        return await self._delivery.delivery_policy(key, group)

    async def delivery_policies(self, key: str) -> dict[str, DeliveryPolicy]:
        return await self._delivery.delivery_policies(key)

    async def set_delivery_policy(
        self, key: str, group: str, policy: DeliveryPolicy | None
    ) -> bool:
        return await self._delivery.set_delivery_policy(key, group, policy)

    async def redrive(self, args: RedriveArgs) -> Redriven:
        return await self._delivery.redrive(args)

    async def retention(self, key: str) -> Retention | None:
        return await self._delivery.retention(key)

    async def set_retention(self, key: str, retention: Retention | None) -> bool:
        return await self._delivery.set_retention(key, retention)

    async def retentions(self) -> dict[str, Retention]:
        return await self._delivery.retentions()

    async def enforce_retention(self, key: str, retention: Retention, limit: int) -> int:
        return await self._delivery.enforce_retention(key, retention, limit)

    async def delivery_stats(self) -> list[DeliveryStats]:
        return await self._delivery.delivery_stats()

    # --- webhooks: Webhooks -------------------------------------------------------------
    async def webhooks(self, key: str | None = None, group: str | None = None) -> list[Webhook]:
        return await self._webhooks.webhooks(key, group)

    async def set_webhook(self, hook: Webhook) -> bool:
        return await self._webhooks.set_webhook(hook)

    async def delete_webhook(self, key: str, group: str, name: str) -> bool:
        return await self._webhooks.delete_webhook(key, group, name)

    async def webhook_health(self, hooks: Sequence[Webhook]) -> list[WebhookHealth | None]:
        return await self._webhooks.webhook_health(hooks)

    async def record_webhook_health(self, hook: Webhook, update: HealthUpdate) -> None:
        await self._webhooks.record_webhook_health(hook, update)


def _refuse_blocking(blocks: bool) -> None:
    """Inside an idempotent request a read that may block is refused (``BLOCKING_REFUSED``)."""
    if blocks and attempt() is not None:
        raise blocking_refused()
