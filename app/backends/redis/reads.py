"""XREAD and XREADGROUP within the limits, for typed reads and the command endpoint alike."""

from __future__ import annotations

import asyncio

from app.backends.base import Gone
from app.backends.redis import caps
from app.backends.redis.blocking import BlockingReads, merge
from app.backends.redis.limits import (
    capped_read,
    group_line,
    group_reply,
    read_head,
    read_request,
)
from app.backends.redis.parse import Arg, Raw, command_argv, encode
from app.backends.redis.routing import Router
from app.engine.commands.reads import ReadRequest
from app.engine.limits import Limits


class Reads:
    """The one path every XREAD / XREADGROUP takes (limits.py says why each step): within
    ``limits`` on ``router``, blocking ones through ``blocking``."""

    def __init__(self, router: Router, blocking: BlockingReads, limits: Limits) -> None:
        self._router = router
        self._blocking = blocking
        self._limits = limits

    async def command(self, args: list[str], gone: Gone | None) -> Raw:
        """XREAD / XREADGROUP as the command endpoint got it, as Redis replies."""
        request = read_request(args)
        if request is None:  # malformed: Redis gives its error
            return await self._router.call(None, *command_argv(args))
        return await self.read(request, gone)

    async def read(self, r: ReadRequest, gone: Gone | None) -> Raw:
        """XREAD / XREADGROUP within the limits (limits.py says how), as Redis replies."""
        limits, router = self._limits, self._router
        limits.check_read_keys(r.command, len(r.keys))
        keys = list(r.keys)
        ids: list[Arg] = [encode(text) for text in r.ids]  # `$`, `>` or an ID: Redis resolves
        group = r.group is not None
        block = r.block_ms is not None
        cap = limits.reply_cap(r.count, len(keys))
        if group and cap is None and limits.group_consumers:
            await self._room_for(r)
        if cap is not None and group:
            raw = await self._group_read(r, cap)
            if raw is not None or not block:
                return raw
            # Nothing to serve now: wait, each stream's part within its share of the limit.
            share = max(1, limits.reply_entries // len(keys))
            count = min(r.count, share) if r.count else share
            return await self._blocking.xread(read_head(r, count), keys, ids, True, True, gone)
        head = read_head(r, r.count if cap is None else cap)
        if not router.cluster and not block:
            raw = await router.call(None, *head, "STREAMS", *map(encode, keys), *ids)
        else:
            raw = await self._blocking.xread(head, keys, ids, block, group, gone)
        if cap is not None:
            raw = capped_read(limits, r.command, cap)(raw)
        return raw

    async def _room_for(self, r: ReadRequest) -> None:
        """An XREADGROUP that ``GROUP_READ`` does not run: its consumer checked against
        ``max_group_consumers`` first, on each slot (see caps.py)."""
        assert r.group is not None and r.consumer is not None
        slots: dict[int, list[str]] = {}
        for key in r.keys:
            slots.setdefault(self._router.slot(key), []).append(key)
        for keys in slots.values():
            line, finish = caps.room_then(
                self._limits, [encode(k) for k in keys], r.group, encode(r.consumer), []
            )
            finish(await self._router.call(keys[0], *line))

    async def _group_read(self, r: ReadRequest, cap: int) -> Raw:
        """XREADGROUP (not blocking) counted first, by ``GROUP_READ``: refused with nothing
        delivered when ``cap`` entries would be. Over several cluster slots, every slot is
        counted (read-only) before any reads, each within what the others left."""
        limits, router = self._limits, self._router
        keys = list(r.keys)
        parts: dict[int, list[int]] = {}
        for i, key in enumerate(keys):
            parts.setdefault(router.slot(key), []).append(i)
        ccap = limits.group_consumers
        if len(parts) == 1:
            return group_reply(limits, r)(
                await router.write(keys[0], *group_line(r, keys, list(r.ids), cap, "read", ccap))
            )
        chunks = [([keys[i] for i in idx], [r.ids[i] for i in idx]) for idx in parts.values()]
        counts = await asyncio.gather(
            *(
                router.call(part[0], *group_line(r, part, ids, cap, "count", ccap))
                for part, ids in chunks
            )
        )
        if any(int(n) < 0 for n in counts):
            assert r.group is not None
            raise limits.too_many_consumers(r.group)
        total = sum(int(n) for n in counts)
        if total >= cap:
            raise limits.too_large(r.command)
        replies = []
        for (part, part_ids), n in zip(chunks, counts, strict=True):
            line = group_line(r, part, part_ids, cap - total + int(n), "read", ccap)
            raw = await router.write(part[0], *line)
            if isinstance(raw, list) and raw[0] == 1:
                replies.append(raw[1])  # else a write raced in: that part stays unread
        return merge(keys, replies)
