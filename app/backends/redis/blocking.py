"""Blocking reads on connections of their own, and XREAD / XREADGROUP split by slot.

- Blocking reads (``read`` with ``block_ms``, XREAD / XREADGROUP BLOCK through ``command``)
  each hold a connection of their own from a bounded set (``block_connections``); none free
  raises ``BlockPoolExhausted`` at once. A read whose client left, or that was cancelled, has
  its connection closed, never reused: Redis may still answer on it.
- Redis Cluster: a multi-key XREAD / XREADGROUP is split by slot and the parts merged, keys in
  the order given. A blocking one over several slots waits on all and answers with the first
  that has something (plus any that are ready by then); an XREADGROUP ``>`` raced out that way
  may have been delivered by Redis all the same: its entries stay pending (XCLAIM them).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Sequence
from typing import TypeVar

from redis.asyncio import ConnectionPool
from redis.asyncio.cluster import ClusterNode
from redis.exceptions import (
    AskError,
    MovedError,
    ResponseError,
)

from app.backends.base import Gone
from app.backends.errors import (
    BlockPoolExhausted,
    RedisUnavailable,
)
from app.backends.redis.cancel import cancel_count, cancellable
from app.backends.redis.parse import (
    Arg,
    Raw,
    decode,
    encode,
    redis_error,
)
from app.backends.redis.routing import UNREACHABLE, Router
from app.backends.redis.urls import BlockPools
from app.engine.waiting import ClientGone

T = TypeVar("T")


class BlockingReads:
    """XREAD / XREADGROUP over ``router``'s nodes, a blocking one on a connection of its own
    from the pools ``pools`` makes (one per node, made on first use), at most ``connections``
    held at once."""

    def __init__(self, router: Router, pools: BlockPools, connections: int) -> None:
        self._router = router
        self._new_pool = pools
        self._pools: dict[str, ConnectionPool] = {}
        self.connections = connections
        self.held = 0  # connections held by blocking reads now

    async def close(self) -> None:
        for pool in self._pools.values():
            await pool.disconnect()
        self._pools.clear()

    def _reserve(self, n: int) -> None:
        if self.held + n > self.connections:
            raise BlockPoolExhausted(self.connections)
        self.held += n

    def _block_pool(self, node: ClusterNode | None) -> ConnectionPool:
        name = node.name if node is not None else ""
        pool = self._pools.get(name)
        if pool is None:
            pool = self._pools[name] = self._new_pool(node)
        return pool

    async def _blocking_call(self, key: str, args: list[Arg]) -> Raw:
        """One blocking command on a connection of its own (the caller reserved it), on the
        node serving ``key`` (once more after a MOVED / ASK: nothing ran)."""
        for attempt in range(2):
            try:
                return await self._block_on(self._router.node(key), args)
            except (MovedError, AskError) as e:
                if attempt or not self._router.cluster:
                    raise redis_error(e) from None
                await self._router.refresh_slots()
        raise AssertionError("unreachable")

    async def _block_on(self, node: ClusterNode | None, args: list[Arg]) -> Raw:
        """Unless Redis answered, the connection is closed before it goes back to its pool:
        a late reply must never reach the next command sent on it."""
        pool = self._block_pool(node)
        # A cancellation redis-py drops while connecting (its handshake sends through
        # ``wait_for``, see ``cancellable``) must still stop the read: BLOCK 0 never ends.
        since = cancel_count()
        try:
            conn = await pool.get_connection()  # type: ignore[no-untyped-call]
        except UNREACHABLE as e:
            raise RedisUnavailable(str(e)) from None
        answered = False
        try:
            await cancellable(conn.send_command(*args), since)  # not blocked for BLOCK's time
            try:
                # BLOCK decides how long: no socket timeout (redis-py's default is 5 s).
                reply = await cancellable(conn.read_response(timeout=math.inf), since)
            except (MovedError, AskError):
                answered = True
                raise
            except ResponseError as e:
                answered = True
                raise redis_error(e, args) from None
            answered = True
            return reply
        except UNREACHABLE as e:
            raise RedisUnavailable(str(e)) from None
        finally:
            if not answered:
                await conn.disconnect()
            await pool.release(conn)

    async def xread(
        self,
        head: list[Arg],
        keys: list[str],
        ids: list[Arg],
        block: bool,
        group: bool,
        gone: Gone | None,
    ) -> Raw:
        """XREAD / XREADGROUP: ``head`` is the command and its options (BLOCK included when
        ``block``), then ``STREAMS keys ids``. Split by slot in a cluster, merged in key order."""
        parts: dict[int, list[int]] = {}
        for i, key in enumerate(keys):
            parts.setdefault(self._router.slot(key), []).append(i)

        def argv(idx: list[int], h: list[Arg]) -> list[Arg]:
            return [*h, "STREAMS", *(encode(keys[i]) for i in idx), *(ids[i] for i in idx)]

        groups = list(parts.values())
        if not block:
            replies = await asyncio.gather(
                *(self._router.call(keys[idx[0]], *argv(idx, head)) for idx in groups)
            )
            return merge(keys, replies)
        if len(groups) > 1 and group:
            # Serve what is there now first: a raced-out XREADGROUP may lose a delivery.
            now = without_block(head)
            replies = await asyncio.gather(
                *(self._router.call(keys[idx[0]], *argv(idx, now)) for idx in groups)
            )
            merged = merge(keys, replies)
            if merged is not None:
                return merged
        self._reserve(len(groups))
        try:
            calls = [self._blocking_call(keys[idx[0]], argv(idx, head)) for idx in groups]
            return await _until_gone(_first_answer(keys, calls), gone)
        finally:
            self.held -= len(groups)


async def _until_gone(aw: Awaitable[T], gone: Gone | None) -> T:
    """``aw``, unless the client leaves first (then ``ClientGone``; ``aw`` is cancelled)."""
    if gone is None:
        return await aw  # a cancelled caller cancels the read: its connection is closed
    task = asyncio.ensure_future(aw)
    left = asyncio.ensure_future(gone())
    try:
        done, _ = await asyncio.wait({task, left}, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            return task.result()
        raise ClientGone()
    finally:
        left.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


def without_block(head: list[Arg]) -> list[Arg]:
    """An XREAD / XREADGROUP head (up to STREAMS) without its BLOCK option."""
    out: list[Arg] = []
    skip = False
    for h in head:
        if skip:
            skip = False
            continue
        if isinstance(h, str | bytes) and decode(h).lower() == "block":
            skip = True
            continue
        out.append(h)
    return out


def merge(keys: list[str], replies: Sequence[Raw]) -> Raw:
    """Parts of an XREAD reply from several slots, as one reply: streams in the order of
    ``keys``; nil when no part has anything."""
    found: dict[str, Raw] = {}
    for reply in replies:
        for item in reply or []:
            found[decode(item[0])] = item
    if not found:
        return None
    return [found[k] for k in dict.fromkeys(keys) if k in found]


async def _first_answer(keys: list[str], calls: Sequence[Awaitable[Raw]]) -> Raw:
    """Blocking reads on several slots: the first non-nil answer, with any others already
    in; nil when all timed out. The rest are cancelled (their connections closed)."""
    tasks = [asyncio.ensure_future(c) for c in calls]
    try:
        pending = set(tasks)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            ready = [t.result() for t in done]  # an error reply raises here
            if any(r is not None for r in ready):
                ready += [t.result() for t in pending if t.done()]
                return merge(keys, ready)
        return None
    finally:
        for t in tasks:
            if not t.done():
                t.cancel()
        for t in tasks:
            with contextlib.suppress(BaseException):
                await t
