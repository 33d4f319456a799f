"""XREAD and XREADGROUP within the limits, for typed reads and the command endpoint alike."""

from __future__ import annotations

import asyncio

from app.backends.base import Gone
from app.backends.redis import caps
from app.backends.redis.blocking import (
    Blocking,
    _merge,
)
from app.backends.redis.limits import (
    _capped_read,
    _group_line,
    _group_reply,
    _read_head,
    _read_request,
)
from app.backends.redis.parse import (
    Arg,
    Raw,
    _argv,
    _b,
)
from app.engine.commands.reads import ReadRequest


class Reads(Blocking):
    """The one path every XREAD / XREADGROUP takes (limits.py says why each step)."""

    async def _command_read(self, args: list[str], gone: Gone | None) -> Raw:
        request = _read_request(args)
        if request is None:  # malformed: Redis gives its error
            return await self._call(None, *_argv(args))
        return await self._read(request, gone)

    async def _read(self, r: ReadRequest, gone: Gone | None) -> Raw:
        """XREAD / XREADGROUP within the limits (limits.py says how), as Redis replies."""
        self.limits.check_read_keys(r.command, len(r.keys))
        keys = list(r.keys)
        ids: list[Arg] = [_b(text) for text in r.ids]  # `$`, `>` or an ID: Redis resolves
        group = r.group is not None
        block = r.block_ms is not None
        cap = self.limits.reply_cap(r.count, len(keys))
        if group and cap is None and self.limits.group_consumers:
            await self._room_for(r)
        if cap is not None and group:
            raw = await self._group_read(r, cap)
            if raw is not None or not block:
                return raw
            # Nothing to serve now: wait, each stream's part within its share of the limit.
            share = max(1, self.limits.reply_entries // len(keys))
            count = min(r.count, share) if r.count else share
            return await self._xread(_read_head(r, count), keys, ids, True, True, gone)
        head = _read_head(r, r.count if cap is None else cap)
        if not self._cluster and not block:
            raw = await self._call(None, *head, "STREAMS", *map(_b, keys), *ids)
        else:
            raw = await self._xread(head, keys, ids, block, group, gone)
        if cap is not None:
            raw = _capped_read(self.limits, r.command, cap)(raw)
        return raw

    async def _room_for(self, r: ReadRequest) -> None:
        """An XREADGROUP that ``GROUP_READ`` does not run: its consumer checked against
        ``max_group_consumers`` first, on each slot (see caps.py)."""
        assert r.group is not None and r.consumer is not None
        slots: dict[int, list[str]] = {}
        for key in r.keys:
            slots.setdefault(self._slot(key), []).append(key)
        for keys in slots.values():
            line, finish = caps.room_then(
                self.limits, [_b(k) for k in keys], r.group, _b(r.consumer), []
            )
            finish(await self._call(keys[0], *line))

    async def _group_read(self, r: ReadRequest, cap: int) -> Raw:
        """XREADGROUP (not blocking) counted first, by ``GROUP_READ``: refused with nothing
        delivered when ``cap`` entries would be. Over several cluster slots, every slot is
        counted (read-only) before any reads, each within what the others left."""
        keys = list(r.keys)
        parts: dict[int, list[int]] = {}
        for i, key in enumerate(keys):
            parts.setdefault(self._slot(key), []).append(i)
        ccap = self.limits.group_consumers
        if len(parts) == 1:
            return _group_reply(self.limits, r)(
                await self._write(keys[0], *_group_line(r, keys, list(r.ids), cap, "read", ccap))
            )
        chunks = [([keys[i] for i in idx], [r.ids[i] for i in idx]) for idx in parts.values()]
        counts = await asyncio.gather(
            *(
                self._call(part[0], *_group_line(r, part, ids, cap, "count", ccap))
                for part, ids in chunks
            )
        )
        if any(int(n) < 0 for n in counts):
            assert r.group is not None
            raise self.limits.too_many_consumers(r.group)
        total = sum(int(n) for n in counts)
        if total >= cap:
            raise self.limits.too_large(r.command)
        replies = []
        for (part, part_ids), n in zip(chunks, counts, strict=True):
            line = _group_line(r, part, part_ids, cap - total + int(n), "read", ccap)
            raw = await self._write(part[0], *line)
            if isinstance(raw, list) and raw[0] == 1:
                replies.append(raw[1])  # else a write raced in: that part stays unread
        return _merge(keys, replies)
