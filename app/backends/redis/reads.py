"""XREAD and XREADGROUP within the limits, for typed reads and the command endpoint alike."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable

from app.backends.base import Gone
from app.backends.redis import caps
from app.backends.redis.blocking import BlockingReads, merge, without_block
from app.backends.redis.delivery import POLICY_POLL_MS, applies, gated_read, send_script
from app.backends.redis.limits import (
    Bounded,
    capped_read,
    group_line,
    group_reply,
    read_head,
    read_request,
)
from app.backends.redis.newer import (
    CLAIM_POLL_MS,
    as_claimed,
    claim_id_errors,
    claim_read,
    names_claim,
)
from app.backends.redis.parse import Arg, Raw, command_argv, encode
from app.backends.redis.routing import Router
from app.engine.clock import ManualClock
from app.engine.commands.read_claims import claiming
from app.engine.commands.reads import ReadRequest, parse_read_request
from app.engine.errors import CommandError
from app.engine.keyspace import Keyspace
from app.engine.limits import Limits

# One slot's part of a script read: its finished reply (``Reads._timed_read``).
Part = Callable[[], Awaitable[Raw]]
# What ``Reads._wait_new`` answers past the read's deadline (None: nothing came this time).
_TIMED_OUT: Raw = b"\x00timed out"


def id_errors(r: ReadRequest) -> list[CommandError | None]:
    """Each key's ID error, as the engine finds it (none for ``>``)."""
    if all(text == ">" for text in r.ids):
        return [None] * len(r.ids)
    return claim_id_errors(r)


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
            if names_claim(args) and not (await self._router.server_features()).read_claim:
                parse_read_request(Keyspace(ManualClock(int(time.time() * 1000))), args)
            return await self._router.call(None, *command_argv(args))
        return await self.read(request, gone)

    async def read(self, r: ReadRequest, gone: Gone | None) -> Raw:
        """XREAD / XREADGROUP within the limits (limits.py says how), as Redis replies."""
        limits, router = self._limits, self._router
        limits.check_read_keys(r.command, len(r.keys))
        claim = r.claim_ms is not None and r.group is not None
        if claim and not (await router.server_features()).read_claim:
            return await self._claim_read(r, gone)
        keys = list(r.keys)
        ids: list[Arg] = [encode(text) for text in r.ids]  # `$`, `>` or an ID: Redis resolves
        group = r.group is not None
        block = r.block_ms is not None
        cap = limits.reply_cap(r.count, len(keys))
        gated = False
        if applies(r):
            done, raw = await self._policy_first(r, cap, gone)
            if done:
                return raw
            gated = raw is None  # the fallback ran and found nothing: only the wait is left
            if gated and not block:
                return None
        if group and cap is None and limits.group_consumers and not gated:
            await self._room_for(r)
        if cap is not None and group:
            raw = None if gated else await self._group_read(r, cap)
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

    def _fallback(self, r: ReadRequest, cap: int | None) -> Bounded | list[Arg]:
        """What a group read without a policy sends (non-blocking; one slot): the limit
        script, the consumer cap's, or the plain XREADGROUP."""
        limits = self._limits
        keys = list(r.keys)
        if cap is not None:
            line = group_line(r, keys, list(r.ids), cap, "read", limits.group_consumers)
            return Bounded(line, group_reply(limits, r), writes=True)
        head = without_block(read_head(r, r.count))
        plain: list[Arg] = [*head, "STREAMS", *map(encode, keys), *map(encode, r.ids)]
        if limits.group_consumers:
            assert r.group is not None and r.consumer is not None
            encoded = [encode(k) for k in keys]
            return Bounded(*caps.room_then(limits, encoded, r.group, encode(r.consumer), plain))
        return plain

    async def _policy_first(
        self, r: ReadRequest, cap: int | None, gone: Gone | None
    ) -> tuple[bool, Raw]:
        """A group read of new entries with the policies first (delivery.py): (True, reply)
        when answered; (False, None) when no stream has a policy and the fallback ran and
        found nothing (a blocking read then waits); (False, [...]) when nothing ran (several
        slots, none with a policy): the usual path follows."""
        router = self._router
        keys = list(r.keys)
        errors = id_errors(r)
        slots: dict[int, list[int]] = {}
        for i, key in enumerate(keys):
            slots.setdefault(router.slot(key), []).append(i)
        if len(slots) == 1:
            read = gated_read(self._limits, r, keys, list(r.ids), errors, self._fallback(r, cap))
            raw = await send_script(router, keys[0], read.line)
            got = read.finish(raw)
            if not read.policy(raw):
                if got is not None:
                    return True, got
                return False, None
            if got is not None or r.block_ms is None:
                return True, got
        else:
            found = False
            for idx in slots.values():
                probe = gated_read(
                    self._limits,
                    r,
                    [keys[i] for i in idx],
                    [r.ids[i] for i in idx],
                    [errors[i] for i in idx],
                    None,
                    "probe",
                )
                raw = await send_script(router, keys[idx[0]], probe.line)
                found = probe.policy(raw) or found
            if not found:
                return False, []
        return True, await self._policy_read(r, slots, errors, gone)

    async def _policy_read(
        self,
        r: ReadRequest,
        slots: dict[int, list[int]],
        errors: list[CommandError | None],
        gone: Gone | None,
    ) -> Raw:
        """The policy read on each slot; with BLOCK and nothing there, a plain blocking
        XREADGROUP for new entries, for no longer than until the next pending entry turns
        due (``POLICY_POLL_MS`` at most), then again, until the timeout."""
        router = self._router
        keys = list(r.keys)

        def part(idx: list[int]) -> Part:
            async def run() -> Raw:
                read = gated_read(
                    self._limits,
                    r,
                    [keys[i] for i in idx],
                    [r.ids[i] for i in idx],
                    [errors[i] for i in idx],
                    None,
                    "force" if r.block_ms is None else "wait",
                    waiting=True,
                )
                return read.finish(await send_script(router, keys[idx[0]], read.line))

            return run

        parts = [part(idx) for idx in slots.values()]
        return await self._timed_read(r, parts, POLICY_POLL_MS, gone, lambda fresh: fresh)

    async def _claim_read(self, r: ReadRequest, gone: Gone | None) -> Raw:
        """XREADGROUP ... CLAIM on a server older than 8.4 (newer.py): the script; with
        BLOCK and nothing to answer, a plain blocking XREADGROUP for new entries, for no
        longer than until the next pending entry turns idle enough, then again."""
        router = self._router
        errors = claim_id_errors(r)
        claims = claiming(text == ">" for text in r.ids)
        keys = list(r.keys)
        slots: dict[int, list[int]] = {}
        for i, key in enumerate(keys):
            slots.setdefault(router.slot(key), []).append(i)
        parts = [
            (
                [keys[i] for i in idx],
                [r.ids[i] for i in idx],
                [errors[i] for i in idx],
                [claims[i] for i in idx],
            )
            for idx in slots.values()
        ]
        if len(parts) > 1:  # each key's errors first, in order, as one slot's script would
            for key, text, error in zip(keys, r.ids, errors, strict=True):
                check = claim_read(self._limits, r, [key], [text], [error], [False], "check")
                check.finish(await router.call(key, *check.line))

        def part(
            part_keys: list[str], ids: list[str], errs: list[CommandError | None], cl: list[bool]
        ) -> Part:
            async def run() -> Raw:
                read = claim_read(self._limits, r, part_keys, ids, errs, cl, waiting=True)
                return read.finish(await router.write(part_keys[0], *read.line))

            return run

        runs = [part(*p) for p in parts]
        return await self._timed_read(r, runs, CLAIM_POLL_MS, gone, as_claimed)

    async def _timed_read(
        self,
        r: ReadRequest,
        parts: list[Part],
        poll_ms: int,
        gone: Gone | None,
        shape: Callable[[Raw], Raw],
    ) -> Raw:
        """A script read (CLAIM, a policy) over its slots' ``parts``, each answering its
        reply or ``[None, ms]`` (nothing now; the next pending entry due in ``ms``, -1:
        none); with BLOCK and nothing anywhere, ``_wait_new``, then the scripts again, until
        the timeout. New entries the plain read found are answered in the read's ``shape``."""
        keys = list(r.keys)
        loop = asyncio.get_running_loop()
        deadline = None if not r.block_ms else loop.time() + r.block_ms / 1000
        while True:
            replies = []
            wait = -1
            for run in parts:
                got = await run()
                if isinstance(got, list) and got and got[0] is None:
                    if got[1] >= 0:
                        wait = got[1] if wait < 0 else min(wait, got[1])
                else:
                    replies.append(got)
            reply = merge(keys, replies)
            if reply is not None or r.block_ms is None:
                return reply
            fresh = await self._wait_new(r, wait, poll_ms, deadline, gone)
            if fresh is _TIMED_OUT:
                return None
            if fresh is not None:
                return shape(fresh)

    async def _wait_new(
        self, r: ReadRequest, wait: int, poll_ms: int, deadline: float | None, gone: Gone | None
    ) -> Raw:
        """A script read (CLAIM, a policy) found nothing: a plain blocking XREADGROUP for
        new entries, for no longer than ``wait`` (when the next pending entry turns due; -1:
        none does) nor ``poll_ms`` (an XNACK elsewhere is then seen) nor the deadline. Its
        entries, None when nothing came, ``_TIMED_OUT`` past the deadline."""
        keys = list(r.keys)
        nap = poll_ms if wait < 0 else min(wait, poll_ms)
        if deadline is not None:
            left = (deadline - asyncio.get_running_loop().time()) * 1000
            if left <= 0:
                return _TIMED_OUT
            nap = min(nap, int(left))
        nap = max(nap, 1)  # BLOCK 0 would wait for ever
        count = r.count
        if self._limits.reply_entries:  # a wake-up served within the limit (limits.py)
            share = max(1, self._limits.reply_entries // len(keys))
            count = min(count, share) if count else share
        head = read_head(dataclasses.replace(r, claim_ms=None, block_ms=nap), count)
        ids: list[Arg] = [b">"] * len(keys)
        return await self._blocking.xread(head, keys, ids, True, True, gone)

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
