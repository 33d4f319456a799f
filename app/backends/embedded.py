"""The embedded backend: the in-process engine behind the ``Backend`` protocol.

Each operation is one atomic engine step through ``Store.run`` (its effects reach the journal
as one record, and the readers it made ready are served inside it), so an entry appended over
REST goes to exactly one waiting consumer, as on the command endpoint. A read that must wait
parks on the store's waiters and stops at once when the client goes away (``ClientGone``).

Nothing here awaits durability: the surface makes every answer, errors included, wait for the
records behind it (``Durability.wait_visible``), which only it knows how to scope.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.backends.base import Gone, JsonReply
from app.engine.blocking import Block
from app.engine.commands import groups as ops
from app.engine.commands import info
from app.engine.commands.bulk import xadd_batch
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
from app.engine.errors import CommandError
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
from app.engine.waiting import execute, wait


def _read(ks: Keyspace, request: ReadRequest) -> list[StreamRead] | Block | None:
    return xread(ks, resolve_read(ks, request))


class EmbeddedBackend:
    """The engine in this process: one keyspace, one event loop (Redis's single writer)."""

    name = "embedded"
    stateless = False  # the keyspace lives here: one worker only

    def __init__(self, store: Store) -> None:
        self.store = store

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    # --- command endpoint -------------------------------------------------------------
    async def command(self, argv: Sequence[str]) -> JsonReply:
        return await execute(self.store, list(argv))

    async def pipeline(self, commands: Sequence[Sequence[str]]) -> list[JsonReply | CommandError]:
        out: list[JsonReply | CommandError] = []
        for argv in commands:
            try:
                out.append(await self.command(argv))
            except CommandError as e:
                out.append(e)
        return out

    async def multi_exec(self, commands: Sequence[Sequence[str]]) -> list[JsonReply | CommandError]:
        return self.store.execute_atomic(commands)

    # --- streams ----------------------------------------------------------------------
    async def scan(self, cursor: int, match: str | None, count: int | None) -> ScanPage:
        return self.store.keyspace.scan(cursor, count or 10, match, None)

    async def stream_info(self, key: str) -> StreamInfo:
        return info.stream_info(self.store.keyspace, key)

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
    async def groups(self, key: str) -> list[GroupInfo]:
        return info.groups_info(self.store.keyspace, key)

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

    async def consumers(self, key: str, group: str) -> list[ConsumerInfo]:
        return info.consumers_info(self.store.keyspace, key, group)

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
