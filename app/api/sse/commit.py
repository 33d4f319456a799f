"""Events show only durable writes: each source waits for the journal before it pushes.

With ``--fsync always`` an XADD's reply leaves only once its record is committed; an event
for that entry must not leave earlier, or a subscriber could see an entry that a crash then
loses (redis-server with ``appendfsync always`` likewise sends blocked readers nothing before
the fsync). In the other modes this returns at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from app.durability import Durability, StorageUnavailable

__all__ = ["committed"]

RETRY_S = 0.5  # while the database is away, events wait for it


async def committed(durability: Durability, keys: Iterable[str] | None) -> None:
    """Return once what was read of ``keys`` (None: any key) is as durable as the mode
    promises."""
    while True:
        try:
            await durability.wait_visible(keys)
            return
        except StorageUnavailable:
            await asyncio.sleep(RETRY_S)
