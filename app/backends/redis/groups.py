"""Groups, consumers and pending entries: the typed operations, as Redis replies to them.

The caps on groups and consumers (``max_stream_groups``, ``max_group_consumers``) and the
listing limit go through the scripts of caps.py when a limit is set; else the command goes
to Redis as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.backends.redis import caps
from app.backends.redis.parse import (
    Arg,
    Raw,
    _b,
    _claimed,
    _id,
    _map,
    _opt_int,
    _opt_sid,
    _s,
    _sid,
)
from app.backends.redis.routing import (
    Router,
)
from app.engine.commands.groups import (
    AutoClaimArgs,
    ClaimArgs,
    PendingArgs,
    no_such_group,
)
from app.engine.errors import NoSuchKey
from app.engine.ids import StreamID
from app.engine.replies import (
    AutoClaim,
    ConsumerInfo,
    GroupInfo,
    PendingRow,
    PendingSummary,
)
from app.engine.stream import Entry


class Groups(Router):
    """XGROUP, XINFO GROUPS / CONSUMERS, XPENDING, XACK, XCLAIM and XAUTOCLAIM."""

    async def groups(self, key: str, start: str = "", count: int = 0) -> list[GroupInfo]:
        rows = await self._listing(key, None, start, count)
        out = []
        for raw in rows:
            g = _map(raw)
            out.append(
                GroupInfo(
                    _s(g["name"]),
                    int(g["consumers"]),
                    int(g["pending"]),
                    _sid(g["last-delivered-id"]),
                    _opt_int(g["entries-read"]),
                    _opt_int(g["lag"]),
                )
            )
        return out

    async def _listing(self, key: str, group: str | None, start: str, count: int) -> Raw:
        """XINFO GROUPS / CONSUMERS rows: whole, or a page cut by Redis (caps.py)."""
        if not (count or self.limits.reply_entries):
            line: list[Arg] = ["XINFO", "GROUPS", _b(key)]
            if group is not None:
                line = ["XINFO", "CONSUMERS", _b(key), _b(group)]
            return await self._call(key, *line)
        raw_group = None if group is None else _b(group)
        line, finish = caps.listing(self.limits, _b(key), raw_group, _b(start), count)
        return finish(await self._call(key, *line))

    async def group(self, key: str, name: str) -> GroupInfo:
        try:
            found = [g for g in await self.groups(key, name, 1) if g.name == name]
        except NoSuchKey:
            found = []
        if not found:
            raise no_such_group(key, name)
        return found[0]

    async def create_group(
        self, key: str, name: str, id_text: str, mkstream: bool, entries_read: int | None
    ) -> None:
        argv: list[Arg] = ["XGROUP", "CREATE", _b(key), _b(name), _b(id_text)]
        if mkstream:
            argv.append("MKSTREAM")
        if entries_read is not None:
            argv += ["ENTRIESREAD", entries_read]
        if self.limits.stream_groups:
            line, finish = caps.new_group(self.limits, key, argv)
            finish(await self._write(key, *line))
            return
        await self._write(key, *argv)

    async def set_group_id(
        self, key: str, name: str, id_text: str, entries_read: int | None
    ) -> None:
        argv: list[Arg] = ["XGROUP", "SETID", _b(key), _b(name), _b(id_text)]
        if entries_read is not None:
            argv += ["ENTRIESREAD", entries_read]
        await self._group_admin(key, name, argv)

    async def destroy_group(self, key: str, name: str) -> bool:
        return bool(await self._write(key, "XGROUP", "DESTROY", _b(key), _b(name)))

    async def consumers(
        self, key: str, group: str, start: str = "", count: int = 0
    ) -> list[ConsumerInfo]:
        out = []
        for raw in await self._listing(key, group, start, count):
            c = _map(raw)
            out.append(ConsumerInfo(_s(c["name"]), int(c["pending"]), int(c["idle"])))
        return out

    async def create_consumer(self, key: str, group: str, consumer: str) -> bool:
        argv: list[Arg] = ["XGROUP", "CREATECONSUMER", _b(key), _b(group), _b(consumer)]
        if self.limits.group_consumers:
            line, finish = caps.new_consumer(self.limits, group, argv)
            return bool(finish(await self._write(key, *line)))
        return bool(await self._group_admin(key, group, argv))

    async def delete_consumer(self, key: str, group: str, consumer: str) -> int:
        argv: list[Arg] = ["XGROUP", "DELCONSUMER", _b(key), _b(group), _b(consumer)]
        return int(await self._group_admin(key, group, argv))

    async def _group_admin(self, key: str, group: str, argv: list[Arg]) -> Raw:
        """XGROUP SETID / CREATECONSUMER / DELCONSUMER, with Redis's own errors."""
        return await self._write(key, *argv)

    async def ack(self, key: str, group: str, ids: Sequence[StreamID]) -> int:
        if not ids:
            return 0
        return int(await self._write(key, "XACK", _b(key), _b(group), *map(_id, ids)))

    async def pending_summary(self, key: str, group: str) -> PendingSummary:
        count, first, last, consumers = await self._call(key, "XPENDING", _b(key), _b(group))
        return PendingSummary(
            int(count),
            _opt_sid(first),
            _opt_sid(last),
            [(_s(name), int(n)) for name, n in consumers or []],
        )

    async def pending(self, args: PendingArgs) -> list[PendingRow]:
        argv: list[Arg] = ["XPENDING", _b(args.key), _b(args.group)]
        if args.min_idle_ms:
            argv += ["IDLE", args.min_idle_ms]
        argv += [_id(args.start), _id(args.end), max(args.count, 0)]
        if args.consumer is not None:
            argv.append(_b(args.consumer))
        rows = await self._call(args.key, *argv)
        return [PendingRow(_sid(r[0]), _s(r[1]), int(r[2]), int(r[3])) for r in rows]

    async def claim(self, args: ClaimArgs) -> list[Entry | StreamID]:
        if not args.ids:
            await self.pending_summary(args.key, args.group)  # NOGROUP when there is none
            return []
        argv: list[Arg] = [
            "XCLAIM",
            _b(args.key),
            _b(args.group),
            _b(args.consumer),
            args.min_idle_ms,
            *map(_id, args.ids),
        ]
        if args.idle_ms is not None:
            argv += ["IDLE", args.idle_ms]
        if args.time_ms is not None:
            argv += ["TIME", args.time_ms]
        if args.retry_count is not None:
            argv += ["RETRYCOUNT", args.retry_count]
        if args.force:
            argv.append("FORCE")
        if args.justid:
            argv.append("JUSTID")
        if args.last_id is not None:
            argv += ["LASTID", _id(args.last_id)]
        return _claimed(
            await self._with_room(args.key, args.group, args.consumer, argv), args.justid
        )

    async def autoclaim(self, args: AutoClaimArgs) -> AutoClaim:
        argv: list[Arg] = [
            "XAUTOCLAIM",
            _b(args.key),
            _b(args.group),
            _b(args.consumer),
            args.min_idle_ms,
            _id(args.start),
            "COUNT",
            args.count,
        ]
        if args.justid:
            argv.append("JUSTID")
        nxt, claimed, deleted = await self._with_room(args.key, args.group, args.consumer, argv)
        return AutoClaim(_sid(nxt), _claimed(claimed, args.justid), [_sid(x) for x in deleted])

    async def _with_room(self, key: str, group: str, consumer: str, argv: list[Arg]) -> Raw:
        """XCLAIM / XAUTOCLAIM, refused when ``consumer`` would be one too many."""
        if not self.limits.group_consumers:
            return await self._write(key, *argv)
        line, finish = caps.room_then(self.limits, [_b(key)], group, _b(consumer), argv)
        return finish(await self._write(key, *line))
