"""The embedded backend: the in-process engine behind the ``Backend`` protocol.

Each operation is one atomic engine step through ``Store.run`` (its effects reach the journal
as one record, and the readers it made ready are served inside it), so an entry appended over
REST goes to exactly one waiting consumer, as on the command endpoint. A read that must wait
parks on the store's waiters and stops at once when the client goes away (``ClientGone``).

Durability is the request protocol's, kept here once for every surface (docs/architecture.md,
"The request protocol"): given the journal's ``Durability``, a write is refused before it runs
while storage cannot make it durable, and every answer, errors included (a 404 or a 409 shows
state too), waits until the journal records behind the keys it is about are as durable as the
fsync mode promises. A typed operation's keys are its arguments'; a command's come from the
command table's key positions, so a reply about one stream never waits on another's records.
A pipeline waits once for all its keys (one group commit). A read whose client left answers
nobody, so it waits for nothing.

The class is put together from halves of one concern each: ``durable.DurableAnswers``
(refusing writes, waiting for durability once per request, Idempotency-Key blocks) and
``commands.CommandEndpoint`` (one command, a pipeline, a transaction, with the engine's fast
paths). The surface has checked access before; this backend runs the command table itself
(``checks_commands``), so a line the table refuses is refused here and counted in INFO's
stats, as redis-server counts a rejected call.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.access.rates import Decision, Mode, Rate
from app.backends.base import CommandTimer, Gone
from app.backends.embedded.commands import CommandEndpoint
from app.backends.embedded.rates import RateBook
from app.durability import Durability
from app.engine.blocking import Block
from app.engine.commands import groups as ops
from app.engine.commands import info
from app.engine.commands import policy as policies
from app.engine.commands import webhook_ops as hooks
from app.engine.commands.bulk import xadd_batch
from app.engine.commands.claims import AutoClaimArgs, ClaimArgs, xautoclaim, xclaim
from app.engine.commands.deletes import xackdel, xdelex
from app.engine.commands.groups import PendingArgs
from app.engine.commands.guarded import Guard, append_guarded
from app.engine.commands.nack import NackArgs, xnack
from app.engine.commands.reads import ReadRequest, resolve_read, xread
from app.engine.commands.streams import (
    RangeArgs,
    XAddArgs,
    XSetIdArgs,
    xadd,
    xdel,
    xrange,
    xsetid,
    xtrim,
)
from app.engine.commands.xcfgset import XCfgSetArgs, xcfgset
from app.engine.delivery import (
    DeliveryPolicy,
    DeliveryStats,
    RedriveArgs,
    Redriven,
    Retention,
    Webhook,
)
from app.engine.errors import NotFound, WrongType
from app.engine.ids import StreamID
from app.engine.keyspace import Keyspace
from app.engine.refs import RefPolicy
from app.engine.replies import (
    AutoClaim,
    ConsumerInfo,
    GroupInfo,
    PendingRow,
    PendingSummary,
    ScanPage,
    Storage,
    StreamFullInfo,
    StreamInfo,
    StreamRead,
)
from app.engine.store import Store
from app.engine.stream import Entry, TrimSpec
from app.engine.waiting import ClientGone, wait
from app.engine.webhook_health import HealthUpdate, WebhookHealth, merged


def _read(ks: Keyspace, request: ReadRequest) -> list[StreamRead] | Block | None:
    return xread(ks, resolve_read(ks, request))


class EmbeddedBackend(CommandEndpoint):
    """The engine in this process: one keyspace, one event loop (Redis's single writer)."""

    name = "embedded"
    stateless = False  # the keyspace lives here: one worker only
    checks_commands = True  # see Backend.checks_commands

    def __init__(
        self,
        store: Store,
        *,
        durability: Durability | None = None,
        timer: CommandTimer | None = None,
        pipeline_slice_ms: int = 5,
    ) -> None:
        self.store = store
        # None: nothing to wait for (no journal: tests, `--fsync off` without storage).
        self.durability = durability
        self.timer = timer
        # A /pipeline that held the event loop this long lets other requests run, then goes on.
        self.pipeline_slice_s = pipeline_slice_ms / 1000
        self._running: set[str] = set()  # idempotent requests under way, by ticket name
        # Webhooks' health by (stream, group, name, URL): kept in memory, not journaled
        # (app/engine/webhook_health.py says why).
        self._health: dict[tuple[str, str, str, str], WebhookHealth] = {}
        self.rates = RateBook()

    async def start(self) -> None:
        return None

    async def spend_rate(
        self,
        key: str,
        rate: Rate,
        cost: int = 1,
        mode: Mode = Mode.TAKE,
        now_us: int | None = None,
    ) -> Decision:
        return self.rates.spend(key, rate, cost, mode, now_us)

    async def close(self) -> None:
        return None

    # --- streams ----------------------------------------------------------------------
    async def scan(self, cursor: int, match: str | None, count: int | None) -> ScanPage:
        try:
            return self.store.keyspace.scan(cursor, count or 10, match, None)
        finally:
            await self._visible(None)  # a listing shows every key's existence

    async def stream_info(self, key: str) -> StreamInfo:
        try:
            return info.stream_info(self.store.keyspace, key)
        finally:
            await self._visible((key,))

    async def stream_infos(self, keys: Sequence[str]) -> list[StreamInfo | None]:
        """All in one engine step (nothing awaits between keys)."""
        out: list[StreamInfo | None] = []
        for key in keys:
            try:
                out.append(info.stream_info(self.store.keyspace, key))
            except (NotFound, WrongType):
                out.append(None)
        await self._visible(keys)
        return out

    async def stream_full_info(self, key: str, count: int) -> StreamFullInfo:
        try:
            return info.stream_full_info(self.store.keyspace, key, count)
        finally:
            await self._visible((key,))

    async def storage(self, prefix: str) -> Storage:
        streams = entries = size = 0
        for key, stream in list(self.store.keyspace.streams.items()):
            if key.startswith(prefix):
                streams += 1
                entries += stream.length
                size += sum(node.lp_bytes for node in stream.nodes)
        return Storage(streams, entries, size)

    async def delete_stream(self, key: str) -> bool:
        self._writable()
        try:
            return self.store.run(Keyspace.delete, key)
        finally:
            await self._visible((key,))

    async def trim(self, key: str, spec: TrimSpec) -> int:
        self._writable()
        try:
            return self.store.run(xtrim, key, spec)
        finally:
            await self._visible((key,))

    async def set_id(self, args: XSetIdArgs) -> None:
        self._writable()
        try:
            self.store.run(xsetid, args)
        finally:
            await self._visible((args.key,))

    async def configure_idmp(self, args: XCfgSetArgs) -> None:
        self._writable()
        try:
            self.store.run(xcfgset, args)
        finally:
            await self._visible((args.key,))

    # --- entries ----------------------------------------------------------------------
    async def append(self, batch: Sequence[XAddArgs]) -> list[StreamID | None]:
        self._writable()
        try:
            if len(batch) == 1:
                return [self.store.run(xadd, batch[0])]
            return list(self.store.run(xadd_batch, list(batch)))
        finally:
            await self._visible({a.key for a in batch})

    async def append_guarded(
        self, batch: Sequence[XAddArgs], guard: Guard, record: XAddArgs | None = None
    ) -> list[StreamID | None] | None:
        self._writable()
        try:
            return self.store.run(append_guarded, list(batch), guard, record)
        finally:
            await self._visible({a.key for a in batch} | {guard.key})

    async def range(self, args: RangeArgs, rev: bool = False) -> list[Entry]:
        try:
            return xrange(self.store.keyspace, args, rev=rev) or []
        finally:
            await self._visible((args.key,))

    async def delete_entries(self, key: str, ids: Sequence[StreamID]) -> int:
        self._writable()
        try:
            return self.store.run(xdel, key, list(ids))
        finally:
            await self._visible((key,))

    async def delete_with_policy(
        self, key: str, ids: Sequence[StreamID], policy: RefPolicy
    ) -> list[int]:
        self._writable()
        try:
            return self.store.run(xdelex, key, list(ids), policy)
        finally:
            await self._visible((key,))

    async def read(self, request: ReadRequest, gone: Gone | None = None) -> list[StreamRead]:
        """XREAD / XREADGROUP. A group read writes (deliveries, the PEL): refused while
        storage cannot take it. A blocked read served by another client's write waits for
        that write's record too: it shows it."""
        self._refuse_blocking(request.block_ms is not None)
        if request.group is not None:
            self._writable()
        try:
            reply = self.store.run(_read, request)
            if isinstance(reply, Block):
                reply = await wait(self.store, reply, gone)
        except ClientGone:
            raise
        except Exception:
            await self._visible(request.keys)
            raise
        await self._visible(request.keys)
        result: list[StreamRead] = reply or []
        return result

    # --- groups and consumers ---------------------------------------------------------
    async def groups(self, key: str, start: str = "", count: int = 0) -> list[GroupInfo]:
        try:
            return info.groups_info(self.store.keyspace, key, start, count)
        finally:
            await self._visible((key,))

    async def create_group(
        self, key: str, name: str, id_text: str, mkstream: bool, entries_read: int | None
    ) -> None:
        self._writable()
        try:
            self.store.run(ops.xgroup_create, key, name, id_text, mkstream, entries_read)
        finally:
            await self._visible((key,))

    async def set_group_id(
        self, key: str, name: str, id_text: str, entries_read: int | None
    ) -> None:
        self._writable()
        try:
            self.store.run(ops.xgroup_setid, key, name, id_text, entries_read)
        finally:
            await self._visible((key,))

    async def destroy_group(self, key: str, name: str) -> bool:
        self._writable()
        try:
            return bool(self.store.run(ops.xgroup_destroy, key, name))
        finally:
            await self._visible((key,))

    async def group(self, key: str, name: str) -> GroupInfo:
        try:
            stream, group = ops.find_group(self.store.keyspace, key, name)
            return info.group_info(stream, group)
        finally:
            await self._visible((key,))

    async def consumers(
        self, key: str, group: str, start: str = "", count: int = 0
    ) -> list[ConsumerInfo]:
        try:
            return info.consumers_info(self.store.keyspace, key, group, start, count)
        finally:
            await self._visible((key,))

    async def create_consumer(self, key: str, group: str, consumer: str) -> bool:
        self._writable()
        try:
            return bool(self.store.run(ops.xgroup_createconsumer, key, group, consumer))
        finally:
            await self._visible((key,))

    async def delete_consumer(self, key: str, group: str, consumer: str) -> int:
        self._writable()
        try:
            return self.store.run(ops.xgroup_delconsumer, key, group, consumer)
        finally:
            await self._visible((key,))

    # --- pending entries --------------------------------------------------------------
    async def ack(self, key: str, group: str, ids: Sequence[StreamID]) -> int:
        self._writable()
        try:
            return self.store.run(ops.xack, key, group, list(ids))
        finally:
            await self._visible((key,))

    async def ack_delete(
        self, key: str, group: str, ids: Sequence[StreamID], policy: RefPolicy
    ) -> list[int]:
        self._writable()
        try:
            return self.store.run(xackdel, key, group, list(ids), policy)
        finally:
            await self._visible((key,))

    async def nack(self, args: NackArgs) -> int:
        self._writable()
        try:
            return self.store.run(xnack, args)
        finally:
            await self._visible((args.key,))

    async def pending_summary(self, key: str, group: str) -> PendingSummary:
        try:
            return ops.xpending_summary(self.store.keyspace, key, group)
        finally:
            await self._visible((key,))

    async def pending(self, args: PendingArgs) -> list[PendingRow]:
        try:
            return ops.xpending_range(self.store.keyspace, args)
        finally:
            await self._visible((args.key,))

    async def claim(self, args: ClaimArgs) -> list[Entry | StreamID]:
        self._writable()
        try:
            return self.store.run(xclaim, args)
        finally:
            await self._visible((args.key,))

    async def autoclaim(self, args: AutoClaimArgs) -> AutoClaim:
        self._writable()
        try:
            return self.store.run(xautoclaim, args)
        finally:
            await self._visible((args.key,))

    # --- delivery policies and retention ---------------------------------------------
    async def delivery_policy(self, key: str, group: str) -> DeliveryPolicy | None:
        try:
            return ops.find_group(self.store.keyspace, key, group)[1].policy
        finally:
            await self._visible((key,))

    async def delivery_policies(self, key: str) -> dict[str, DeliveryPolicy]:
        try:
            stream = self.store.keyspace.get(key)
            if stream is None:
                return {}
            return {n: g.policy for n, g in stream.groups.items() if g.policy is not None}
        finally:
            await self._visible((key,))

    async def set_delivery_policy(
        self, key: str, group: str, policy: DeliveryPolicy | None
    ) -> bool:
        self._writable()
        try:
            return self.store.run(policies.set_policy, key, group, policy)
        finally:
            await self._visible((key,))

    async def redrive(self, args: RedriveArgs) -> Redriven:
        self._writable()
        try:
            return self.store.run(policies.redrive, args)
        finally:
            await self._visible((args.key,))

    async def retention(self, key: str) -> Retention | None:
        try:
            return self.store.keyspace.retention.get(key)
        finally:
            await self._visible((key,))

    async def set_retention(self, key: str, retention: Retention | None) -> bool:
        self._writable()
        try:
            return self.store.run(policies.set_retention, key, retention)
        finally:
            await self._visible((key,))

    async def retentions(self) -> dict[str, Retention]:
        return dict(self.store.keyspace.retention)

    async def enforce_retention(self, key: str, retention: Retention, limit: int) -> int:
        self._writable()
        try:
            return self.store.run(policies.enforce_retention, key, retention, limit)
        finally:
            await self._visible((key,))

    async def delivery_stats(self) -> list[DeliveryStats]:
        return policies.delivery_stats(self.store.keyspace)

    # --- webhooks ---------------------------------------------------------------------
    async def webhooks(self, key: str | None = None, group: str | None = None) -> list[Webhook]:
        try:
            return hooks.webhooks(self.store.keyspace, key, group)
        finally:
            await self._visible(None if key is None else (key,))

    async def set_webhook(self, hook: Webhook) -> bool:
        self._writable()
        try:
            return self.store.run(hooks.set_webhook, hook)
        finally:
            await self._visible((hook.stream,))

    async def delete_webhook(self, key: str, group: str, name: str) -> bool:
        self._writable()
        try:
            return self.store.run(hooks.delete_webhook, key, group, name)
        finally:
            await self._visible((key,))

    async def webhook_health(self, hooks: Sequence[Webhook]) -> list[WebhookHealth | None]:
        return [self._health.get((h.stream, h.group, h.name, h.url)) for h in hooks]

    async def record_webhook_health(self, hook: Webhook, update: HealthUpdate) -> None:
        key = (hook.stream, hook.group, hook.name, hook.url)
        self._health[key] = merged(self._health.get(key), update)
