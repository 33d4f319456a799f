"""Webhooks through the Redis backend (app/backends/redis/webhooks.py): kept in the stream's
policy hash, checked against the group as the engine checks, listed across streams by SCAN,
and gone with their group or stream; the same answers as the embedded engine's."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from app.backends.embedded import EmbeddedBackend
from app.backends.redis import RedisBackend
from app.backends.redis.delivery import policy_key
from app.backends.redis.webhooks import webhook_field
from app.engine.commands.streams import XAddArgs
from app.engine.delivery import DeliveryPolicy, Webhook
from app.engine.errors import NoGroup
from app.engine.store import Store
from app.engine.webhook_health import HealthUpdate, WebhookHealth
from tests.backends.test_redis_backend import _flush_cluster, _standalone_url

pytestmark = pytest.mark.redis

SECRET = "whsec_MDEyMzQ1Njc4OWFiY2RlZg=="


def hook(name: str = "h", stream: str = "s", group: str = "g", **kw: object) -> Webhook:
    return Webhook(stream, group, name, f"https://example.com/{name}", SECRET, **kw)  # type: ignore[arg-type]


@pytest.fixture
async def rb() -> AsyncIterator[RedisBackend]:
    b = RedisBackend.from_url(_standalone_url(), block_connections=4)
    await b.start()
    await b.command(["FLUSHDB"])
    yield b
    await b.close()


async def _groups(b: RedisBackend | EmbeddedBackend, key: str, *groups: str) -> None:
    await b.append([XAddArgs(key, ("f", "v"))])
    for g in groups:
        await b.create_group(key, g, "0", False, None)


async def _scenario(b: RedisBackend | EmbeddedBackend) -> list[object]:
    """What a client sees of the webhooks through one sequence of operations."""
    seen: list[object] = []
    await _groups(b, "s", "g", "g2", "g:x")
    await _groups(b, "t", "g")
    seen.append(await b.set_webhook(hook("b")))
    seen.append(await b.set_webhook(hook("a", batch=5)))
    seen.append(await b.set_webhook(hook("a", paused=True, paused_reason="410 Gone")))
    seen.append(await b.set_webhook(hook("h", group="g2")))
    seen.append(await b.set_webhook(hook("x", group="g:x")))
    seen.append(await b.set_webhook(hook("h", stream="t")))
    seen.append(await b.webhooks())
    seen.append(await b.webhooks("s"))
    seen.append(await b.webhooks("s", "g"))
    seen.append(await b.webhooks("s", "missing"))
    seen.append(await b.webhooks("missing"))
    seen.append(await b.delete_webhook("s", "g", "b"))
    seen.append(await b.delete_webhook("s", "g", "b"))
    for act in (
        b.set_webhook(hook(group="nope")),
        b.delete_webhook("s", "nope", "h"),
        b.set_webhook(hook(stream="missing")),
    ):
        with pytest.raises(NoGroup):
            await act
    # They go with their group (REST or the command endpoint) and their stream
    await b.destroy_group("s", "g2")
    await b.command(["XGROUP", "DESTROY", "s", "g:x"])
    await b.create_group("s", "g2", "0", False, None)
    seen.append(await b.webhooks())
    await b.delete_stream("t")
    await _groups(b, "t", "g")
    seen.append(await b.webhooks())
    return seen


async def test_the_same_answers_as_the_engine(rb: RedisBackend) -> None:
    engine = EmbeddedBackend(Store())
    assert await _scenario(rb) == await _scenario(engine)
    (only,) = await rb.webhooks()
    assert (only.name, only.paused, only.paused_reason, only.secret) == (
        "a",
        True,
        "410 Gone",
        SECRET,
    )


async def test_kept_in_the_policy_hash_beside_a_policy(rb: RedisBackend) -> None:
    await _groups(rb, "s", "g", "gg")
    policy = DeliveryPolicy(backoff_ms=(10,))
    await rb.set_delivery_policy("s", "g", policy)
    await rb.set_webhook(hook())
    await rb.set_webhook(hook(group="gg"))
    fields = await rb.router.call("s", "HKEYS", policy_key("s"))
    assert webhook_field("g", "h") in fields
    # Removing the policy keeps the webhooks; destroying the group "g" keeps "gg"'s (a
    # prefix of its name is no prefix of its field).
    await rb.set_delivery_policy("s", "g", None)
    assert [h.group for h in await rb.webhooks("s")] == ["g", "gg"]
    await rb.command(["XGROUP", "DESTROY", "s", "g"])
    assert [h.group for h in await rb.webhooks("s")] == ["gg"]
    assert await rb.router.call("s", "HLEN", policy_key("s")) == 1
    await rb.pipeline([["DEL", "s"]])
    assert await rb.command(["EXISTS", policy_key("s")]) == 0


async def test_names_of_any_bytes(rb: RedisBackend) -> None:
    group, name = "a:1:\udcff", "b\x00:2"
    await _groups(rb, "s\udcfe", group, "a")
    await rb.set_webhook(hook(name, stream="s\udcfe", group=group))
    await rb.set_webhook(hook(group[:1], stream="s\udcfe", group="a"))
    got = [(h.stream, h.group, h.name) for h in await rb.webhooks()]
    assert got == [("s\udcfe", "a", "a"), ("s\udcfe", group, name)]
    assert await rb.delete_webhook("s\udcfe", group, name)
    assert [h.group for h in await rb.webhooks("s\udcfe")] == ["a"]


@pytest.fixture
async def cluster(cluster_nodes: list[str]) -> AsyncIterator[RedisBackend]:
    _flush_cluster(cluster_nodes)
    b = RedisBackend.from_url("redis+cluster://" + ",".join(cluster_nodes), block_connections=8)
    await b.start()
    yield b
    await b.close()


@pytest.mark.slow
async def test_on_a_cluster_listed_across_masters(cluster: RedisBackend) -> None:
    keys = [f"k{i}" for i in range(12)]  # spread over the three masters' slots
    for key in keys:
        await _groups(cluster, key, "g")
        await cluster.set_webhook(hook(stream=key))
    assert sorted(h.stream for h in await cluster.webhooks()) == sorted(keys)
    assert await cluster.destroy_group("k0", "g")
    assert await cluster.delete_stream("k1")
    assert sorted(h.stream for h in await cluster.webhooks()) == sorted(keys[2:])


@pytest.mark.slow
async def test_health_on_a_cluster_beside_each_stream(cluster: RedisBackend) -> None:
    """Each stream's webhooks' health is kept in its own slot: read and merged on the master
    that holds the stream, listed across masters."""
    hooks = [hook(stream=f"k{i}") for i in range(6)]
    for i, h in enumerate(hooks):
        await _groups(cluster, h.stream, "g")
        await cluster.set_webhook(h)
        update = HealthUpdate(False, i + 1, 500, f"answers 500 ({i})", 1_000 + i)
        await cluster.record_webhook_health(h, update)
    assert await cluster.webhook_health(hooks) == [
        WebhookHealth(500, f"answers 500 ({i})", 1_000 + i, None, i + 1) for i in range(6)
    ]
