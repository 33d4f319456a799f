"""Storage quotas enforced: an append that would take a prefix past its quota is refused.

Counting what a prefix's streams hold walks them (``KeyspaceRole.storage``: SCAN in Redis),
too slow for every append. So a prefix's usage is measured at most every ``refresh_s`` and
what this process appends meanwhile is added to it (the entries, and the bytes of their
names and values). Trims, deletions and retention show at the next measurement. Behind
several front-ends each adds only its own appends between measurements: a tenant can pass
its quota by what the others append within one period. A quota bounds storage; it is not a
transaction.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from app.access.quotas import StorageQuota
from app.backends.roles import KeyspaceRole
from app.engine.errors import CommandError
from app.engine.replies import Storage

__all__ = ["QuotaFull", "StorageBook"]


class QuotaFull(CommandError):
    """The append would take the prefix past its quota: 507, the text naming the bound."""

    def __init__(self, part: str, used: int, adding: int, limit: int) -> None:
        super().__init__(
            f"ERR storage quota full: {part} {used} + {adding} would pass the quota of"
            f" {limit} {part}; delete or trim streams to make room"
        )
        self.part, self.used, self.adding, self.limit = part, used, adding, limit


@dataclass(slots=True)
class _Measured:
    usage: Storage
    at: float  # monotonic seconds
    added_entries: int = 0
    added_bytes: int = 0


class StorageBook:
    def __init__(
        self,
        backend: Callable[[], KeyspaceRole],
        refresh_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._backend = backend  # asked each time: tests swap the backend after start
        self._refresh_s = refresh_s
        self._clock = clock
        self._seen: dict[str, _Measured] = {}
        self._measuring: dict[str, asyncio.Lock] = {}

    async def usage(self, prefix: str) -> Storage:
        """The prefix's usage as last measured plus this process's appends since."""
        seen = await self._measured(prefix)
        u = seen.usage
        return Storage(u.streams, u.entries + seen.added_entries, u.bytes + seen.added_bytes)

    async def admit(self, prefix: str, quota: StorageQuota, entries: int, size: int) -> None:
        """Raise ``QuotaFull`` when ``entries`` more entries of ``size`` bytes would pass
        ``quota``; else count them as appended (an append refused later is then counted
        until the next measurement: a quota errs on the side of refusing)."""
        seen = await self._measured(prefix)
        used_entries = seen.usage.entries + seen.added_entries
        used_bytes = seen.usage.bytes + seen.added_bytes
        if quota.entries is not None and used_entries + entries > quota.entries:
            raise QuotaFull("entries", used_entries, entries, quota.entries)
        if quota.bytes is not None and used_bytes + size > quota.bytes:
            raise QuotaFull("bytes", used_bytes, size, quota.bytes)
        seen.added_entries += entries
        seen.added_bytes += size

    async def _measured(self, prefix: str) -> _Measured:
        seen = self._seen.get(prefix)
        if seen is not None and self._clock() - seen.at < self._refresh_s:
            return seen
        lock = self._measuring.setdefault(prefix, asyncio.Lock())
        async with lock:  # one measurement at a time per prefix; the others wait for it
            seen = self._seen.get(prefix)
            if seen is not None and self._clock() - seen.at < self._refresh_s:
                return seen
            started = self._clock()
            usage = await self._backend().storage(prefix)
            fresh = self._seen[prefix] = _Measured(usage, started)
            return fresh
