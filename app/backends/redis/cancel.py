"""Cancelling a task that waits on Redis, even where redis-py drops the cancellation.

On Python 3.11 redis-py sends through ``asyncio.wait_for``, which returns the send's result
and drops a cancellation that arrives as the send completes (CPython gh-86296, fixed in
3.12). A task that ignores being cancelled (an event stream whose client left) would then
run on; ``cancellable`` raises the cancellation anyway.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def cancellable(aw: Awaitable[T], since: int | None = None) -> T:
    """``aw``, except that a cancellation requested meanwhile is raised even when ``aw``
    returned: redis-py sends through ``asyncio.wait_for``, which on Python 3.11 returns the
    send's result and drops a cancellation that arrives as the send completes (CPython
    gh-86296, fixed in 3.12). The reply was read in full, so the connection stays usable.
    ``since``: the task's ``cancelling()`` count from an earlier step, whose own dropped
    cancellation (in a connect, say) is raised here too."""
    task = asyncio.current_task()
    before = since if since is not None else cancel_count()
    if task is not None and task.cancelling() > before:
        if inspect.iscoroutine(aw):
            aw.close()  # never started: nothing sent
        raise asyncio.CancelledError
    result = await aw
    if task is not None and task.cancelling() > before:
        raise asyncio.CancelledError
    return result


def cancel_count() -> int:
    """The current task's count of cancellations requested (for ``cancellable``'s ``since``)."""
    task = asyncio.current_task()
    return task.cancelling() if task is not None else 0
