"""Polling a condition until it holds: the loop every wait of the tests is built on.

Kept apart from tests/support/waiting.py, which counts parked readers through the test
servers of tests/conftest.py: conftest itself waits for its servers with ``until``.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

TIMEOUT_S = 10.0  # long enough for a loaded 2-core box; a condition that holds comes far sooner
POLL_S = 0.01


def until(
    cond: Callable[[], T],
    timeout_s: float = TIMEOUT_S,
    what: str = "the condition",
    poll_s: float = POLL_S,
) -> T:
    """Poll ``cond()`` until it is truthy and return its value; an AssertionError naming
    ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout_s} s")
        time.sleep(poll_s)


async def until_async(
    cond: Callable[[], T | Awaitable[T]],
    timeout_s: float = TIMEOUT_S,
    what: str = "the condition",
    poll_s: float = POLL_S,
) -> T:
    """``until`` on the event loop, which keeps running between polls; ``cond`` may be a
    coroutine function."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = cond()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout_s} s")
        await asyncio.sleep(poll_s)
