"""What the /ds surface keeps in this process: a lock per stream and when each stream was
last read or written (the sliding ``Stream-TTL``).

The lock only saves work: requests of one process that would decide on the same record take
turns instead of one writing and the others deciding again. Correctness does not rest on it:
every write is guarded by the record it was decided on (``meta.guard``), which also holds
across front-ends."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["DsState"]


class DsState:
    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._users: dict[str, int] = {}
        self.touched: dict[str, int] = {}

    @asynccontextmanager
    async def serialized(self, key: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(key, asyncio.Lock())
        self._users[key] = self._users.get(key, 0) + 1
        try:
            async with lock:
                yield
        finally:
            self._users[key] -= 1
            if not self._users[key]:
                del self._users[key], self._locks[key]

    def touch(self, key: str) -> None:
        """Only for a stream with a ``Stream-TTL``: nothing else reads it, and a front-end
        should not hold an entry for every stream it ever served."""
        self.touched[key] = int(time.time() * 1000)

    def forget(self, key: str) -> None:
        self.touched.pop(key, None)
