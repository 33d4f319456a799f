"""The storage book: a prefix measured now and then, appends counted in between, an append
that would pass the quota refused (app/api/quotas.py)."""

from __future__ import annotations

import asyncio

import pytest

from app.access.quotas import StorageQuota
from app.api.quotas import QuotaFull, StorageBook
from app.engine.replies import Storage


class Measured:
    """A KeyspaceRole's ``storage`` whose answer the test sets, counting the walks."""

    def __init__(self) -> None:
        self.now = Storage()
        self.walks = 0

    async def storage(self, prefix: str) -> Storage:
        self.walks += 1
        await asyncio.sleep(0)
        return self.now


async def test_appends_count_until_the_next_measurement() -> None:
    keyspace, clock = Measured(), [0.0]
    book = StorageBook(lambda: keyspace, refresh_s=5, clock=lambda: clock[0])  # type: ignore[arg-type,return-value]
    quota = StorageQuota(entries=10)
    await book.admit("a:", quota, 6, 60)
    await book.admit("a:", quota, 4, 40)
    with pytest.raises(QuotaFull) as full:
        await book.admit("a:", quota, 1, 10)
    assert full.value.part == "entries" and "10" in full.value.text
    assert keyspace.walks == 1
    # A trim elsewhere shows at the next measurement, not before.
    keyspace.now = Storage(streams=1, entries=3, bytes=30)
    with pytest.raises(QuotaFull):
        await book.admit("a:", quota, 1, 10)
    clock[0] = 5.0
    await book.admit("a:", quota, 7, 70)
    assert await book.usage("a:") == Storage(1, 10, 100)
    assert keyspace.walks == 2


async def test_bytes_bound_and_prefixes_are_apart() -> None:
    keyspace = Measured()
    book = StorageBook(lambda: keyspace, refresh_s=60)  # type: ignore[arg-type,return-value]
    quota = StorageQuota(bytes=100)
    await book.admit("a:", quota, 1, 100)
    with pytest.raises(QuotaFull) as full:
        await book.admit("a:", quota, 1, 1)
    assert full.value.part == "bytes"
    await book.admit("b:", quota, 1, 100)  # another prefix, its own usage


async def test_one_walk_serves_requests_that_arrive_together() -> None:
    keyspace = Measured()
    book = StorageBook(lambda: keyspace, refresh_s=60)  # type: ignore[arg-type,return-value]
    await asyncio.gather(*(book.admit("a:", StorageQuota(entries=100), 1, 1) for _ in range(20)))
    assert keyspace.walks == 1
    assert (await book.usage("a:")).entries == 20
