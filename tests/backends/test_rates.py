"""Credentials' rates on both backends: the Lua script in front of Redis (lua/rate.lua) and
the engine's table spend alike (the same GCRA as app/access/rates.py), step for step."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import pytest

from app.access.rates import Mode, Rate
from app.backends.embedded import EmbeddedBackend
from app.backends.redis import RedisBackend
from app.engine.store import Store
from tests.backends.test_redis_backend import backend_url  # noqa: F401  (the fixture)

pytestmark = pytest.mark.redis


@pytest.fixture
async def backend(backend_url: str) -> AsyncIterator[RedisBackend]:  # noqa: F811
    b = RedisBackend.from_url(backend_url, block_connections=4)
    await b.start()
    yield b
    await b.close()


async def test_redis_spends_as_the_engine_does(backend: RedisBackend) -> None:
    embedded = EmbeddedBackend(Store())
    rng = random.Random(7)
    texts = ("10/s:3", "1000/s", "7/min:2", "3/h", "10M/s:1M", "100k/min")
    rates = [Rate.parse(t) for t in texts]
    for i, rate in enumerate(rates):
        key = f"walk-{i}-{rng.random()}"
        now = 1_900_000_000_000_000
        for _ in range(300):
            now += rng.choice([0, 0, 1, 999, 50_000, 100_000, 2_000_000])
            cost = rng.choice([1, 1, 1, 2, rate.burst // 2 + 1, 3 * rate.burst])
            mode = rng.choice(list(Mode))
            want = await embedded.spend_rate(key, rate, cost, mode, now_us=now)
            got = await backend.spend_rate(key, rate, cost, mode, now_us=now)
            assert got == want, (rate, now, cost, mode)


async def test_an_idle_credential_leaves_nothing_in_redis(backend: RedisBackend) -> None:
    rate = Rate.parse("1000/s")
    await backend.spend_rate("idle-one", rate)
    name = "xs:rate:idle-one"
    ttl = int(await backend.router.call_plain(name, "PTTL", name))
    # Gone a millisecond or two after its arrival time: expiring by then, or already gone
    # (-2) on a loaded machine; never kept without an expiry (-1).
    assert ttl == -2 or 0 < ttl <= 2, ttl
