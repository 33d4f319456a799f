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

The command endpoint's three calls keep the engine's fast paths here, behind the protocol:
consecutive plain XADDs to one key in a pipeline or a transaction run as one engine call and
one journal record (``commands.bulk``), a long pipeline lets other requests run between its
commands, and each command is timed for ``/metrics`` (``CommandTimer``) as the engine ran it.
The surface has checked access before; this backend runs the command table itself
(``checks_commands``), so a line the table refuses is refused here and counted in INFO's
stats, as redis-server counts a rejected call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, asynccontextmanager
from contextvars import ContextVar, Token
from operator import itemgetter

from app.backends.base import CommandTimer, Gone, JsonReply
from app.backends.idempotency import KeyReused, Run, StillRunning, Ticket, blocking_refused
from app.durability import Durability
from app.engine.blocking import Block
from app.engine.commands import groups as ops
from app.engine.commands import info
from app.engine.commands import policy as policies
from app.engine.commands import webhook_ops as hooks
from app.engine.commands.bulk import auto_run_at, run_at, xadd_batch
from app.engine.commands.claims import AutoClaimArgs, ClaimArgs, xautoclaim, xclaim
from app.engine.commands.deletes import xackdel, xdelex
from app.engine.commands.groups import PendingArgs
from app.engine.commands.nack import NackArgs, xnack
from app.engine.commands.reads import ReadRequest, any_may_block, may_block, resolve_read, xread
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
from app.engine.commands.table import Command, KeyAt, lookup
from app.engine.commands.xcfgset import XCfgSetArgs, xcfgset
from app.engine.delivery import (
    DeliveryPolicy,
    DeliveryStats,
    RedriveArgs,
    Redriven,
    Retention,
    Webhook,
)
from app.engine.errors import CommandError, NotFound, WrongType
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
    StreamFullInfo,
    StreamInfo,
    StreamRead,
)
from app.engine.responses import RESPONSES_KEY
from app.engine.store import Store
from app.engine.stream import Entry, TrimSpec
from app.engine.waiting import ClientGone, wait
from app.engine.webhook_health import HealthUpdate, WebhookHealth, merged


def _read(ks: Keyspace, request: ReadRequest) -> list[StreamRead] | Block | None:
    return xread(ks, resolve_read(ks, request))


class EmbeddedBackend:
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

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    # --- durability -------------------------------------------------------------------
    def _writable(self) -> None:
        """Refuse a write before it runs (``StorageUnavailable``): nothing is applied."""
        if self.durability is not None:
            self.durability.check_writable()

    async def _visible(self, keys: Iterable[str] | None) -> None:
        """Return once what an answer about ``keys`` (None: any key) shows is durable; inside
        ``answering``, note the keys for its end instead."""
        if self.durability is None:
            return
        deferred = _DEFERRED.get()
        if deferred is not None and deferred.task is asyncio.current_task():
            deferred.add(keys)
            return
        await self.durability.wait_visible(keys)

    @asynccontextmanager
    async def answering(self) -> AsyncIterator[None]:
        """See ``Backend.answering``: the calls made inside, by this task, wait for nothing;
        leaving waits once for every key they answered about (errors included), so the
        caller builds its response while the journal commits. Inside ``idempotent`` it is
        that block's: its end waits."""
        outer = _DEFERRED.get()
        if self.durability is None or (outer is not None and outer.task is asyncio.current_task()):
            yield
            return
        deferred = _Deferred(asyncio.current_task())
        token = _DEFERRED.set(deferred)
        try:
            yield
        except ClientGone:
            raise  # nobody reads the answer: nothing to wait for
        except Exception:
            await deferred.wait(self.durability)  # a 404 or a 409 shows state too
            raise
        finally:
            _DEFERRED.reset(token)
        await deferred.wait(self.durability)

    def idempotent(self, ticket: Ticket) -> AbstractAsyncContextManager[Run]:
        """See ``Backend.idempotent``. The kept response is an engine step
        (``responses.remember``) of its own, appended while the journal is held from the
        request's start (``Durability.holding``), so it commits with what the request wrote
        or neither commits: after a crash a retry replays the response or runs for the first
        time, never both. Like ``answering``, the calls inside wait for nothing; leaving
        waits once for every key they answered about and for the kept response."""
        return _Idempotent(self, ticket)

    def _refuse_blocking(self, blocks: bool) -> None:
        """Inside ``idempotent`` a read that may block is refused (``BLOCKING_REFUSED``)."""
        if blocks:
            deferred = _DEFERRED.get()
            if deferred is not None and deferred.idempotent:
                raise blocking_refused()

    # --- command endpoint -------------------------------------------------------------
    async def command(self, argv: Sequence[str], gone: Gone | None = None) -> JsonReply:
        """Run one command; a read that must wait parks until served, timed out, cancelled
        or its client gone (``gone``). Its answer waits for the keys the table says it names
        (a refused line names none: it shows no state)."""
        cmd = self.store.command(argv)  # a refusal is counted in INFO's stats, as Redis counts it
        self._refuse_blocking(may_block(argv))
        if self.durability is None:
            return await self._command(argv, cmd, gone)
        keys = cmd.keys(list(argv))
        if cmd.writes:
            self.durability.check_writable()
        try:
            reply = await self._command(argv, cmd, gone)
        except ClientGone:
            raise
        except Exception:
            await self._visible(keys)  # an error shows state too (NOGROUP)
            raise
        await self._visible(keys)
        return reply

    async def _command(self, argv: Sequence[str], cmd: Command, gone: Gone | None) -> JsonReply:
        store = self.store
        timer = self.timer
        started = time.perf_counter()
        try:
            reply = store.execute(argv, cmd=cmd)
        finally:
            if timer is not None:  # the engine's time: a blocked read's wait is not in it
                timer.command(cmd.name, time.perf_counter() - started)
        if isinstance(reply, Block):  # counted in INFO's stats when it ends, as Redis counts it
            try:
                reply = await wait(store, reply, gone)
            except CommandError as e:
                store.finished(cmd, e)
                raise
            store.finished(cmd)
        return reply

    async def pipeline(
        self, commands: Sequence[Sequence[str]], gone: Gone | None = None
    ) -> list[JsonReply | CommandError]:
        """Each command in order, not atomic: other requests may run between them once the
        pipeline has held the loop ``pipeline_slice_ms`` (by time, not by count: a short
        pipeline runs whole, so its records share one group commit). Consecutive plain XADDs
        to one key run as one engine call, each still answered (and counted) as its own.
        Refused before any runs if one of them writes and storage cannot take it; answered
        once every key any of them names is durable."""
        self._refuse_blocking(any_may_block(commands))
        if self.durability is None:
            return await self._pipeline(commands, gone)
        writes, keys = _scope(commands)
        if writes:
            self.durability.check_writable()
        try:
            out = await self._pipeline(commands, gone)
        except ClientGone:
            raise
        except Exception:
            await self._visible(keys)
            raise
        await self._visible(keys)  # once: one group commit
        return out

    async def _pipeline(
        self, commands: Sequence[Sequence[str]], gone: Gone | None
    ) -> list[JsonReply | CommandError]:
        store = self.store
        timer = self.timer
        out: list[JsonReply | CommandError] = []
        loop = asyncio.get_running_loop()
        slice_s = self.pipeline_slice_s
        started = loop.time()
        i, n = 0, len(commands)
        while i < n:
            if loop.time() - started >= slice_s:
                await asyncio.sleep(0)
                started = loop.time()
            ks = store.keyspace
            auto = auto_run_at(ks, commands, i, serve_between=True)
            run = [] if auto is not None else run_at(ks, commands, i, serve_between=True)
            if auto is not None or run:
                t0 = time.perf_counter()
                outcomes = store.append_auto(*auto) if auto is not None else store.append_run(run)
                if timer is not None:  # counted as the XADDs they are
                    each = (time.perf_counter() - t0) / len(outcomes)
                    timer.command_run("xadd", len(outcomes), each)
                out.extend(outcomes)
                i += len(outcomes)
                continue
            try:
                args = commands[i]
                out.append(await self._command(args, store.command(args), gone))
            except CommandError as e:
                out.append(e)
            i += 1
        return out

    async def multi_exec(self, commands: Sequence[Sequence[str]]) -> list[JsonReply | CommandError]:
        """MULTI/EXEC as one engine step (``Store.execute_atomic``), timed whole as ``exec``
        with each of its commands counted, as Redis's commandstats count them. A transaction
        refused whole (EXECABORT) shows no state and waits for nothing."""
        writes, keys = _scope(commands) if self.durability is not None else (False, [])
        if writes:
            self._writable()
        store = self.store
        started = time.perf_counter()
        results = store.execute_atomic(commands)  # EXECABORT: raised, nothing ran
        timer = self.timer
        if timer is not None:
            timer.command("exec", time.perf_counter() - started)
            for args in commands:
                timer.counted(store.command(args, counted=False).name)
        await self._visible(keys)
        return results

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


class _Idempotent:
    """``EmbeddedBackend.idempotent``: a class, not a generator, on the path of every keyed
    request."""

    __slots__ = ("backend", "deferred", "hold", "run", "ticket", "token")

    def __init__(self, backend: EmbeddedBackend, ticket: Ticket) -> None:
        self.backend = backend
        self.ticket = ticket
        self.run = Run()
        self.deferred: _Deferred | None = None
        self.hold: AbstractContextManager[None] | None = None
        self.token: Token[_Deferred | None] | None = None

    async def __aenter__(self) -> Run:
        backend, ticket = self.backend, self.ticket
        store = backend.store
        found = store.keyspace.responses.get(ticket.name, store.clock.now_ms())
        if found is not None:
            if found.fingerprint != ticket.fingerprint:
                raise KeyReused
            if backend.durability is not None:  # kept a moment ago: replay it once durable
                await backend.durability.wait_visible((RESPONSES_KEY,))
            self.run.stored = found.response
            return self.run
        if ticket.name in backend._running:
            raise StillRunning
        backend._running.add(ticket.name)
        self.deferred = _Deferred(asyncio.current_task(), idempotent=True)
        self.token = _DEFERRED.set(self.deferred)
        if backend.durability is not None:
            self.hold = backend.durability.holding()
            self.hold.__enter__()
        return self.run

    async def __aexit__(self, *exc: object) -> None:
        deferred, token = self.deferred, self.token
        if deferred is None or token is None:
            return  # a replay: nothing ran
        backend, run = self.backend, self.run
        try:
            _DEFERRED.reset(token)
            if run.kept is not None:
                ticket = self.ticket
                backend.store.remember(ticket.name, ticket.fingerprint, run.kept)
                deferred.add((RESPONSES_KEY,))
        finally:
            if self.hold is not None:
                self.hold.__exit__(None, None, None)
            backend._running.discard(self.ticket.name)
        if backend.durability is not None and exc[0] is None:
            await deferred.wait(backend.durability)


def _scope(commands: Sequence[Sequence[str]]) -> tuple[bool, list[str] | None]:
    """Whether any of ``commands`` writes, and every key they name (None: a command over
    the whole keyspace). A line the table refuses names nothing. A run of lines of one
    command and length (a pipeline of XADDs) is looked up once, and a run on one key names
    it once."""
    uniform = _uniform_scope(commands)
    if uniform is not None:
        return uniform
    writes = False
    keys: list[str] | None = []
    cmd: Command | None = None
    name, size = "", -1
    for args in commands:
        if not args:
            continue
        if cmd is None or len(args) != size or args[0] != name or "|" in cmd.name:
            try:
                cmd = lookup(list(args))
            except CommandError:
                cmd = None
                continue
            name, size = args[0], len(args)
        writes = writes or cmd.writes
        if keys is not None:
            named = cmd.keys(list(args))
            if named is None:
                keys = None
            elif len(named) != 1 or not keys or keys[-1] != named[0]:
                keys.extend(named)
    return writes, keys


def _uniform_scope(commands: Sequence[Sequence[str]]) -> tuple[bool, list[str]] | None:
    """``_scope`` of the common pipeline, in C passes: every line the same command on the
    same key at index 1 (a run of XADDs), looked up once. None: not that shape."""
    if len(commands) < 2 or len(set(map(len, commands))) != 1 or len(commands[0]) < 2:
        return None
    if len(set(map(_NAME_KEY, commands))) != 1:
        return None
    try:
        cmd = lookup(list(commands[0]))
    except CommandError:
        return None
    if not isinstance(cmd.keys, KeyAt) or cmd.keys.index != 1 or "|" in cmd.name:
        return None
    return cmd.writes, [commands[0][1]]


_NAME_KEY = itemgetter(0, 1)


class _Deferred:
    """The keys answered about inside one ``answering`` block, by the task that opened it
    (a task it starts, which outlives it, waits for itself)."""

    __slots__ = ("every", "idempotent", "keys", "task")

    def __init__(self, task: asyncio.Task[object] | None, *, idempotent: bool = False) -> None:
        self.task = task
        self.keys: set[str] = set()
        self.every = False
        self.idempotent = idempotent  # a block of ``EmbeddedBackend.idempotent``

    def add(self, keys: Iterable[str] | None) -> None:
        if keys is None:
            self.every = True
        else:
            self.keys.update(keys)

    async def wait(self, durability: Durability) -> None:
        if self.every:
            await durability.wait_visible(None)
        elif self.keys:
            await durability.wait_visible(self.keys)


_DEFERRED: ContextVar[_Deferred | None] = ContextVar("xstreams_deferred_wait", default=None)
