"""Groups, consumers and pending entries: the typed operations, as Redis replies to them.

The caps on groups and consumers (``max_stream_groups``, ``max_group_consumers``) and the
listing limit go through the scripts of caps.py when a limit is set; else the command goes
to Redis as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.backends.redis import caps, newer
from app.backends.redis.parse import (
    Arg,
    Raw,
    as_map,
    decode,
    encode,
    id_arg,
    opt_int,
    parse_claimed,
    parse_id,
    parse_opt_id,
)
from app.backends.redis.routing import Router
from app.engine.commands.claims import AutoClaimArgs, ClaimArgs
from app.engine.commands.groups import PendingArgs, no_such_group
from app.engine.commands.nack import NackArgs
from app.engine.errors import NoSuchKey
from app.engine.ids import StreamID
from app.engine.limits import Limits
from app.engine.refs import RefPolicy
from app.engine.replies import (
    AutoClaim,
    ConsumerInfo,
    GroupInfo,
    PendingRow,
    PendingSummary,
)
from app.engine.stream import Entry


class Groups:
    """XGROUP, XINFO GROUPS / CONSUMERS, XPENDING, XACK, XCLAIM and XAUTOCLAIM, on
    ``_router``. A part of ``RedisBackend``, which sets it."""

    _router: Router
    _limits: Limits

    async def groups(self, key: str, start: str = "", count: int = 0) -> list[GroupInfo]:
        rows = await self._listing(key, None, start, count)
        out = []
        for raw in rows:
            g = as_map(raw)
            out.append(
                GroupInfo(
                    decode(g["name"]),
                    int(g["consumers"]),
                    int(g["pending"]),
                    parse_id(g["last-delivered-id"]),
                    opt_int(g["entries-read"]),
                    opt_int(g["lag"]),
                )
            )
        return out

    async def _listing(self, key: str, group: str | None, start: str, count: int) -> Raw:
        """XINFO GROUPS / CONSUMERS rows: whole, or a page cut by Redis (caps.py)."""
        if not (count or self._limits.reply_entries):
            line: list[Arg] = ["XINFO", "GROUPS", encode(key)]
            if group is not None:
                line = ["XINFO", "CONSUMERS", encode(key), encode(group)]
            return await self._router.call(key, *line)
        raw_group = None if group is None else encode(group)
        line, finish = caps.listing(self._limits, encode(key), raw_group, encode(start), count)
        return finish(await self._router.call(key, *line))

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
        argv: list[Arg] = ["XGROUP", "CREATE", encode(key), encode(name), encode(id_text)]
        if mkstream:
            argv.append("MKSTREAM")
        if entries_read is not None:
            argv += ["ENTRIESREAD", entries_read]
        if self._limits.stream_groups:
            line, finish = caps.new_group(self._limits, key, argv)
            finish(await self._router.write(key, *line))
            return
        await self._router.write(key, *argv)

    async def set_group_id(
        self, key: str, name: str, id_text: str, entries_read: int | None
    ) -> None:
        argv: list[Arg] = ["XGROUP", "SETID", encode(key), encode(name), encode(id_text)]
        if entries_read is not None:
            argv += ["ENTRIESREAD", entries_read]
        await self._group_admin(key, name, argv)

    async def destroy_group(self, key: str, name: str) -> bool:
        return bool(await self._router.write(key, "XGROUP", "DESTROY", encode(key), encode(name)))

    async def consumers(
        self, key: str, group: str, start: str = "", count: int = 0
    ) -> list[ConsumerInfo]:
        out = []
        for raw in await self._listing(key, group, start, count):
            c = as_map(raw)
            out.append(ConsumerInfo(decode(c["name"]), int(c["pending"]), int(c["idle"])))
        return out

    async def create_consumer(self, key: str, group: str, consumer: str) -> bool:
        argv: list[Arg] = ["XGROUP", "CREATECONSUMER", encode(key), encode(group), encode(consumer)]
        if self._limits.group_consumers:
            line, finish = caps.new_consumer(self._limits, group, argv)
            return bool(finish(await self._router.write(key, *line)))
        return bool(await self._group_admin(key, group, argv))

    async def delete_consumer(self, key: str, group: str, consumer: str) -> int:
        argv: list[Arg] = ["XGROUP", "DELCONSUMER", encode(key), encode(group), encode(consumer)]
        return int(await self._group_admin(key, group, argv))

    async def _group_admin(self, key: str, group: str, argv: list[Arg]) -> Raw:
        """XGROUP SETID / CREATECONSUMER / DELCONSUMER, with Redis's own errors."""
        return await self._router.write(key, *argv)

    async def ack(self, key: str, group: str, ids: Sequence[StreamID]) -> int:
        if not ids:
            return 0
        return int(
            await self._router.write(key, "XACK", encode(key), encode(group), *map(id_arg, ids))
        )

    async def ack_delete(
        self, key: str, group: str, ids: Sequence[StreamID], policy: RefPolicy
    ) -> list[int]:
        if not (await self._router.server_features()).ref_policies:
            bounded = newer.deletes(key, group, policy, list(map(id_arg, ids)))
            raw = bounded.finish(await self._router.write(key, *bounded.line))
            return [int(code) for code in raw]
        raw = await self._router.write(
            key,
            "XACKDEL",
            encode(key),
            encode(group),
            policy.value,
            "IDS",
            len(ids),
            *map(id_arg, ids),
        )
        return [int(code) for code in raw]

    async def nack(self, args: NackArgs) -> int:
        # One script on every server: a group with a delivery policy releases at now.
        native = (await self._router.server_features()).xnack
        return int(await self._router.write(args.key, *newer.nack(args, native).line))

    async def pending_summary(self, key: str, group: str) -> PendingSummary:
        count, first, last, consumers = await self._router.call(
            key, "XPENDING", encode(key), encode(group)
        )
        return PendingSummary(
            int(count),
            parse_opt_id(first),
            parse_opt_id(last),
            [(decode(name), int(n)) for name, n in consumers or []],
        )

    async def pending(self, args: PendingArgs) -> list[PendingRow]:
        argv: list[Arg] = ["XPENDING", encode(args.key), encode(args.group)]
        if args.min_idle_ms:
            argv += ["IDLE", args.min_idle_ms]
        argv += [id_arg(args.start), id_arg(args.end), max(args.count, 0)]
        if args.consumer is not None:
            argv.append(encode(args.consumer))
        rows = await self._router.call(args.key, *argv)
        return [PendingRow(parse_id(r[0]), decode(r[1]), int(r[2]), int(r[3])) for r in rows]

    async def claim(self, args: ClaimArgs) -> list[Entry | StreamID]:
        if not args.ids:
            await self.pending_summary(args.key, args.group)  # NOGROUP when there is none
            return []
        argv: list[Arg] = [
            "XCLAIM",
            encode(args.key),
            encode(args.group),
            encode(args.consumer),
            args.min_idle_ms,
            *map(id_arg, args.ids),
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
            argv += ["LASTID", id_arg(args.last_id)]
        return parse_claimed(
            await self._with_room(args.key, args.group, args.consumer, argv), args.justid
        )

    async def autoclaim(self, args: AutoClaimArgs) -> AutoClaim:
        argv: list[Arg] = [
            "XAUTOCLAIM",
            encode(args.key),
            encode(args.group),
            encode(args.consumer),
            args.min_idle_ms,
            id_arg(args.start),
            "COUNT",
            args.count,
        ]
        if args.justid:
            argv.append("JUSTID")
        nxt, claimed, deleted = await self._with_room(args.key, args.group, args.consumer, argv)
        return AutoClaim(
            parse_id(nxt), parse_claimed(claimed, args.justid), [parse_id(x) for x in deleted]
        )

    async def _with_room(self, key: str, group: str, consumer: str, argv: list[Arg]) -> Raw:
        """XCLAIM / XAUTOCLAIM, refused when ``consumer`` would be one too many."""
        if not self._limits.group_consumers:
            return await self._router.write(key, *argv)
        line, finish = caps.room_then(self._limits, [encode(key)], group, encode(consumer), argv)
        return finish(await self._router.write(key, *line))
