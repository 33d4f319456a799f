"""Parking a blocked read until it is served, times out, or its client goes away.

The only async module of the engine. Every way out (served, timeout, disconnect) first
unregisters the waiter synchronously, so no entry is ever handed to a reader that has
already stopped waiting; the ``finally`` makes a cancelled request leak nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from app.engine.blocking import Block, Served
from app.engine.commands import Command
from app.engine.errors import CommandError
from app.engine.replies import CommandReply
from app.engine.store import Store

_TIMED_OUT = object()
_GONE = object()


class ClientGone(Exception):
    """The client disconnected while its read was blocked."""


Disconnected = Callable[[], Awaitable[Any]]
"""Makes an awaitable that finishes when the client goes away."""


async def wait(
    store: Store, block: Block, disconnected: Disconnected | None = None
) -> Served | None:
    """Wait for ``block`` to be served; None at timeout (Redis's nil)."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Any] = loop.create_future()
    blocked = store.keyspace.blocked

    def deliver(reply: Any) -> None:
        if not fut.done():
            fut.set_result(reply)

    waiter = blocked.add(block, deliver)

    def finish(value: object) -> None:
        if not fut.done():
            blocked.remove(waiter)
            fut.set_result(value)

    timer = (
        loop.call_later(block.timeout_ms / 1000, finish, _TIMED_OUT) if block.timeout_ms else None
    )
    wake: asyncio.TimerHandle | None = None

    def look_again() -> None:
        """A CLAIM read's pending entries may be idle enough now: offer its keys again, and
        wait for the next such moment if that served nothing."""
        nonlocal wake
        wake = None
        if fut.done() or waiter.done:
            return
        now = store.clock.now_ms()
        store.poke(block.keys)
        if not fut.done() and not waiter.done:
            if block.wake_at_ms is not None and block.wake_at_ms <= now:
                block.wake_at_ms = None  # nothing came of it: wait for a write instead
            schedule_wake()

    def schedule_wake() -> None:
        nonlocal wake
        if wake is not None:
            wake.cancel()
            wake = None
        if block.wake_at_ms is None or fut.done():
            return
        delay_ms = max(block.wake_at_ms - store.clock.now_ms(), 0)
        wake = loop.call_later(delay_ms / 1000 + 0.001, look_again)

    block.rearm = schedule_wake
    schedule_wake()
    watcher: asyncio.Task[None] | None = None
    if disconnected is not None:
        gone = disconnected

        async def watch() -> None:
            await gone()
            finish(_GONE)

        watcher = asyncio.ensure_future(watch())
    try:
        result = await fut
    finally:
        blocked.remove(waiter)
        if timer is not None:
            timer.cancel()
        if wake is not None:
            wake.cancel()
        if watcher is not None:
            watcher.cancel()
    if result is _TIMED_OUT:
        return None
    if result is _GONE:
        raise ClientGone
    if isinstance(result, CommandError):
        raise result
    served: Served = result
    return served


async def execute(
    store: Store,
    argv: Sequence[str],
    disconnected: Disconnected | None = None,
    cmd: Command | None = None,
) -> CommandReply:
    """Run a command, waiting on the server if it blocks (XREAD / XREADGROUP BLOCK);
    ``cmd``: its table entry, when the caller looked it up already."""
    if cmd is None:
        cmd = store.command(argv)
    reply = store.execute(argv, cmd=cmd)
    if isinstance(reply, Block):
        try:
            reply = await wait(store, reply, disconnected)
        except CommandError as e:
            store.finished(cmd, e)
            raise
        store.finished(cmd)
    return reply
