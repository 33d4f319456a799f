"""The embedded backend: the in-process engine behind the ``Backend`` protocol.

Each operation is one atomic engine step through ``Store.run`` (its effects reach the journal
as one record, and the readers it made ready are served inside it), so an entry appended over
REST goes to exactly one waiting consumer, as on the command endpoint. A read that must wait
parks on the store's waiters and stops at once when the client goes away (``ClientGone``).

Nothing here awaits durability: the surface makes every answer, errors included, wait for the
records behind it (``Durability.wait_visible``), which only it knows how to scope.

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
from collections.abc import Sequence

from app.backends.base import CommandTimer, Gone, JsonReply
from app.engine.blocking import Block
from app.engine.commands import groups as ops
from app.engine.commands import info
from app.engine.commands.bulk import run_at, xadd_batch
from app.engine.commands.groups import AutoClaimArgs, ClaimArgs, PendingArgs
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
from app.engine.errors import CommandError, NotFound, WrongType
from app.engine.ids import StreamID
from app.engine.keyspace import Keyspace
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
from app.engine.store import Store
from app.engine.stream import Entry, TrimSpec
from app.engine.waiting import wait


def _read(ks: Keyspace, request: ReadRequest) -> list[StreamRead] | Block | None:
    return xread(ks, resolve_read(ks, request))


class EmbeddedBackend:
    """The engine in this process: one keyspace, one event loop (Redis's single writer)."""

    name = "embedded"
    stateless = False  # the keyspace lives here: one worker only
    checks_commands = True  # see Backend.checks_commands

    def __init__(
        self, store: Store, *, timer: CommandTimer | None = None, pipeline_slice_ms: int = 5
    ) -> None:
        self.store = store
        self.timer = timer
        # A /pipeline that held the event loop this long lets other requests run, then goes on.
        self.pipeline_slice_s = pipeline_slice_ms / 1000

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    # --- command endpoint -------------------------------------------------------------
    async def command(self, argv: Sequence[str], gone: Gone | None = None) -> JsonReply:
        """Run one command; a read that must wait parks until served, timed out, cancelled
        or its client gone (``gone``)."""
        store = self.store
        cmd = store.command(argv)  # a refusal is counted in INFO's stats, as Redis counts it
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
        to one key run as one engine call, each still answered (and counted) as its own."""
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
            run = run_at(store.keyspace, commands, i, serve_between=True)
            if run:
                t0 = time.perf_counter()
                outcomes = store.append_run(run)
                if timer is not None:
                    each = (time.perf_counter() - t0) / len(outcomes)
                    for _ in outcomes:  # counted as the XADDs they are
                        timer.command("xadd", each)
                out.extend(outcomes)
                i += len(outcomes)
                continue
            try:
                out.append(await self.command(commands[i], gone))
            except CommandError as e:
                out.append(e)
            i += 1
        return out

    async def multi_exec(self, commands: Sequence[Sequence[str]]) -> list[JsonReply | CommandError]:
        """MULTI/EXEC as one engine step (``Store.execute_atomic``), timed whole as ``exec``
        with each of its commands counted, as Redis's commandstats count them."""
        store = self.store
        started = time.perf_counter()
        results = store.execute_atomic(commands)  # EXECABORT: raised, nothing ran
        timer = self.timer
        if timer is not None:
            timer.command("exec", time.perf_counter() - started)
            for args in commands:
                timer.counted(store.command(args, counted=False).name)
        return results

    # --- streams ----------------------------------------------------------------------
    async def scan(self, cursor: int, match: str | None, count: int | None) -> ScanPage:
        return self.store.keyspace.scan(cursor, count or 10, match, None)

    async def stream_info(self, key: str) -> StreamInfo:
        return info.stream_info(self.store.keyspace, key)

    async def stream_infos(self, keys: Sequence[str]) -> list[StreamInfo | None]:
        """All in one engine step (nothing awaits between keys)."""
        out: list[StreamInfo | None] = []
        for key in keys:
            try:
                out.append(info.stream_info(self.store.keyspace, key))
            except (NotFound, WrongType):
                out.append(None)
        return out

    async def stream_full_info(self, key: str, count: int) -> StreamFullInfo:
        return info.stream_full_info(self.store.keyspace, key, count)

    async def delete_stream(self, key: str) -> bool:
        return self.store.run(Keyspace.delete, key)

    async def trim(self, key: str, spec: TrimSpec) -> int:
        return self.store.run(xtrim, key, spec)

    async def set_id(self, args: XSetIdArgs) -> None:
        self.store.run(xsetid, args)

    # --- entries ----------------------------------------------------------------------
    async def append(self, batch: Sequence[XAddArgs]) -> list[StreamID | None]:
        if len(batch) == 1:
            return [self.store.run(xadd, batch[0])]
        return list(self.store.run(xadd_batch, list(batch)))

    async def range(self, args: RangeArgs, rev: bool = False) -> list[Entry]:
        return xrange(self.store.keyspace, args, rev=rev) or []

    async def delete_entries(self, key: str, ids: Sequence[StreamID]) -> int:
        return self.store.run(xdel, key, list(ids))

    async def read(self, request: ReadRequest, gone: Gone | None = None) -> list[StreamRead]:
        reply = self.store.run(_read, request)
        if isinstance(reply, Block):
            reply = await wait(self.store, reply, gone)
        result: list[StreamRead] = reply or []
        return result

    # --- groups and consumers ---------------------------------------------------------
    async def groups(self, key: str, start: str = "", count: int = 0) -> list[GroupInfo]:
        return info.groups_info(self.store.keyspace, key, start, count)

    async def create_group(
        self, key: str, name: str, id_text: str, mkstream: bool, entries_read: int | None
    ) -> None:
        self.store.run(ops.xgroup_create, key, name, id_text, mkstream, entries_read)

    async def set_group_id(
        self, key: str, name: str, id_text: str, entries_read: int | None
    ) -> None:
        self.store.run(ops.xgroup_setid, key, name, id_text, entries_read)

    async def destroy_group(self, key: str, name: str) -> bool:
        return bool(self.store.run(ops.xgroup_destroy, key, name))

    async def group(self, key: str, name: str) -> GroupInfo:
        stream, group = ops.find_group(self.store.keyspace, key, name)
        return info.group_info(stream, group)

    async def consumers(
        self, key: str, group: str, start: str = "", count: int = 0
    ) -> list[ConsumerInfo]:
        return info.consumers_info(self.store.keyspace, key, group, start, count)

    async def create_consumer(self, key: str, group: str, consumer: str) -> bool:
        return bool(self.store.run(ops.xgroup_createconsumer, key, group, consumer))

    async def delete_consumer(self, key: str, group: str, consumer: str) -> int:
        return self.store.run(ops.xgroup_delconsumer, key, group, consumer)

    # --- pending entries --------------------------------------------------------------
    async def ack(self, key: str, group: str, ids: Sequence[StreamID]) -> int:
        return self.store.run(ops.xack, key, group, list(ids))

    async def pending_summary(self, key: str, group: str) -> PendingSummary:
        return ops.xpending_summary(self.store.keyspace, key, group)

    async def pending(self, args: PendingArgs) -> list[PendingRow]:
        return ops.xpending_range(self.store.keyspace, args)

    async def claim(self, args: ClaimArgs) -> list[Entry | StreamID]:
        return self.store.run(ops.xclaim, args)

    async def autoclaim(self, args: AutoClaimArgs) -> AutoClaim:
        return self.store.run(ops.xautoclaim, args)
