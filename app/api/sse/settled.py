"""Events show only durable state, and a database that is away only delays them.

The backend answers nothing a crash could take back: with ``--fsync always`` a read that saw
an entry whose record is not committed yet waits for the commit, and fails
(``StorageUnavailable``) while the database is away. A REST request gets that 503; an event
stream instead asks again until the database is back, so its subscribers only wait.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from app.backends.errors import StorageUnavailable

__all__ = ["RETRY_S", "settled"]

T = TypeVar("T")

RETRY_S = 0.5  # while the database is away, events wait for it


async def settled(call: Callable[[], Awaitable[T]]) -> T:
    """``call()``'s answer, asked again while storage cannot make what it shows durable.
    Only for calls that may be asked twice: a read at a position (XREAD, XINFO, a range)."""
    while True:
        try:
            return await call()
        except StorageUnavailable:
            await asyncio.sleep(RETRY_S)
