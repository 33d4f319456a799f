"""The webhook runner (app/delivery) against real receivers on loopback, on the embedded
backend and on redis-server: acknowledgement after 2xx, retries through the group's policy,
the dead-letter stream, 410 pauses, timeouts, Retry-After, the concurrency bound, signatures
checked with the ``standardwebhooks`` package, and entries a dead process left pending.

Time is real but short (tens of ms of back-off); a test waits for what it needs
(``until_async``) and asserts a duration only as a lower bound."""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import pytest
import standardwebhooks

from app.backends import Backend
from app.backends.embedded import EmbeddedBackend
from app.delivery import HookOptions, WebhookRunner, store_pause
from app.delivery.hook import _retry_after
from app.engine.commands.groups import PendingArgs
from app.engine.commands.reads import ReadRequest
from app.engine.commands.streams import RangeArgs, XAddArgs
from app.engine.delivery import DEAD_LETTER_FIELDS, DeliveryPolicy, Webhook, split_dead_letter
from app.engine.ids import MAX_ID, MIN_ID, StreamID, format_id
from app.engine.store import Store
from app.observe.metrics import Metrics
from app.settings import Settings
from tests.delivery.support import Answer, Hit, receiving
from tests.support.waiting import until_async

SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef0123").decode()
RETRY = DeliveryPolicy(backoff_ms=(10,), max_deliveries=20, dead_letter_stream="dead")


@pytest.fixture(params=["embedded", pytest.param("redis", marks=pytest.mark.redis)])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    if request.param == "embedded":
        yield cast(Backend, EmbeddedBackend(Store()))
        return
    from app.backends.redis import RedisBackend
    from tests.backends.test_redis_backend import _standalone_url

    b = RedisBackend.from_url(_standalone_url(), block_connections=8)
    await b.start()
    yield cast(Backend, b)
    await b.close()


class Paused:
    def __init__(self) -> None:
        self.calls: list[tuple[Webhook, str]] = []

    async def __call__(self, hook: Webhook, reason: str) -> None:
        self.calls.append((hook, reason))


@asynccontextmanager
async def running(
    backend: Backend,
    hooks: list[Webhook],
    options: HookOptions | None = None,
    **settings: Any,
) -> AsyncIterator[tuple[WebhookRunner, Metrics, Paused]]:
    """A runner over ``hooks`` (the test may change the list), loopback allowed."""
    base: dict[str, Any] = {
        "webhook_allow_hosts": ["127.0.0.1", "localhost"],
        "webhook_allow_http": True,
        "webhook_allow_private": True,
        "webhook_refresh_s": 0.05,
        "webhook_block_ms": 50,
    }
    metrics, paused = Metrics(), Paused()

    async def source() -> list[Webhook]:
        return list(hooks)

    runner = WebhookRunner(backend, Settings(**{**base, **settings}), source, paused, metrics)
    if options is not None:
        runner.options = options
    task = asyncio.create_task(runner.run())
    try:
        yield runner, metrics, paused
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def stream(
    backend: Backend, n: int, policy: DeliveryPolicy | None = RETRY, key: str = "orders"
) -> list[StreamID]:
    ids = await backend.append([XAddArgs(key, ("n", str(i))) for i in range(n)])
    await backend.create_group(key, "g", "0", True, None)
    if policy is not None:
        await backend.set_delivery_policy(key, "g", policy)
    return [i for i in ids if i is not None]


def hook(url: str, **kw: Any) -> Webhook:
    return Webhook("orders", "g", kw.pop("name", "h"), url, SECRET, **kw)


async def pending(backend: Backend, key: str = "orders") -> list[tuple[StreamID, str, int]]:
    rows = await backend.pending(PendingArgs(key, "g", MIN_ID, MAX_ID, 1000))
    return [(r.id, r.consumer, r.delivery_count) for r in rows]


def verified(hit: Hit) -> Any:
    """The body, once ``standardwebhooks`` has checked its signature."""
    return standardwebhooks.Webhook(SECRET).verify(hit.body, hit.headers)


def outcomes(m: Metrics) -> dict[str, int]:
    out: dict[str, int] = {}
    for labels, n in m.webhook_deliveries:
        out[labels[3]] = out.get(labels[3], 0) + n
    return out


# --- delivery ---------------------------------------------------------------------------------
async def test_a_receiver_that_fails_twice_gets_the_entry_a_third_time_then_it_is_acked(
    backend: Backend,
) -> None:
    (sid,) = await stream(backend, 1)
    script = lambda n, hit: Answer(500 if n < 2 else 204)  # noqa: E731
    with receiving(script) as r:
        async with running(backend, [hook(r.url)]) as (_, metrics, _):
            await until_async(lambda: outcomes(metrics).get("ok") == 1, what="acknowledged")

            async def settled() -> bool:
                return await pending(backend) == []

            await until_async(settled, what="nothing pending")
    bodies = [verified(h) for h in r.hits]
    assert bodies == [
        {
            "stream": "orders",
            "group": "g",
            "id": format_id(sid),
            "fields": {"n": "0"},
            "delivery": d,
        }
        for d in (1, 2, 3)
    ]
    ids = {h.headers["webhook-id"] for h in r.hits}
    assert len(ids) == 1 and ids.pop().startswith("msg_")  # stable across retries
    assert outcomes(metrics) == {"failed": 2, "ok": 1}
    assert {h.headers["content-type"] for h in r.hits} == {"application/json"}


async def test_every_entry_is_delivered_once_and_acknowledged(backend: Backend) -> None:
    ids = await stream(backend, 20, policy=None)
    with receiving() as r:
        async with running(backend, [hook(r.url, concurrency=4)]) as (_, metrics, _):
            await until_async(lambda: outcomes(metrics).get("ok") == 20, what="20 acked")
    assert sorted(b["id"] for b in r.bodies()) == sorted(format_id(i) for i in ids)
    assert await pending(backend) == []
    assert {b["delivery"] for b in r.bodies()} == {1}
    assert len({h.headers["webhook-id"] for h in r.hits}) == 20


async def test_a_batch_is_one_request_with_an_array(backend: Backend) -> None:
    await stream(backend, 5, policy=None)
    with receiving() as r:
        async with running(backend, [hook(r.url, batch=2, concurrency=1)]) as (_, m, _):
            await until_async(lambda: outcomes(m).get("ok") == 3, what="three batches")
    sizes = [len(verified(h)) for h in r.hits]
    assert sizes == [2, 2, 1]
    assert [e["fields"]["n"] for h in r.hits for e in h.json()] == [str(i) for i in range(5)]


async def test_an_entry_that_always_fails_ends_in_the_dead_letter_stream(backend: Backend) -> None:
    policy = DeliveryPolicy(backoff_ms=(5,), max_deliveries=3, dead_letter_stream="dead")
    (sid,) = await stream(backend, 1, policy)
    with receiving(lambda n, hit: Answer(503)) as r:
        async with running(backend, [hook(r.url)]):

            async def dead() -> list[Any]:
                return await backend.range(RangeArgs("dead", MIN_ID, MAX_ID))

            (entry,) = await until_async(dead, what="the entry dead-lettered")
    assert [h.json()["delivery"] for h in r.hits] == [1, 2, 3]
    split = split_dead_letter(tuple(entry.fields))
    assert split is not None
    fields, origin = split
    assert fields == ("n", "0")
    assert (origin.stream, origin.id, origin.group, origin.consumer) == ("orders", sid, "g", "h")
    assert origin.reason == "max_deliveries" and origin.deliveries == 3
    assert await pending(backend) == []
    assert DEAD_LETTER_FIELDS[0] in entry.fields


async def test_a_receiver_that_times_out_is_a_failed_delivery(backend: Backend) -> None:
    policy = DeliveryPolicy(backoff_ms=(5,), max_deliveries=2, dead_letter_stream="dead")
    await stream(backend, 1, policy)
    with receiving(lambda n, hit: Answer(200, delay_s=2.0)) as r:
        async with running(backend, [hook(r.url, timeout_ms=100)]) as (_, metrics, _):
            await until_async(lambda: outcomes(metrics).get("timeout") == 2, what="two timeouts")

            async def dead() -> list[Any]:
                return await backend.range(RangeArgs("dead", MIN_ID, MAX_ID))

            await until_async(dead, what="dead-lettered after two timeouts")
    assert len(r.hits) == 2
    assert "ok" not in outcomes(metrics)


async def test_410_pauses_the_webhook_and_gives_the_entry_back_uncharged(
    backend: Backend,
) -> None:
    (sid,) = await stream(backend, 1, policy=None)
    with receiving(lambda n, hit: Answer(410)) as r:
        hooks = [hook(r.url)]
        async with running(backend, hooks) as (runner, metrics, paused):
            await until_async(lambda: paused.calls, what="the pause callback")
            await until_async(lambda: not runner.running, what="the loop stopped")
            await runner.refresh()  # the source still shows it active: not started again
            assert not runner.running
            ((h, reason),) = paused.calls
            assert h == hooks[0] and "410" in reason
            # The store shows the pause, then a resume: it runs again.
            hooks[0] = hook(r.url, paused=True, paused_reason=reason)
            await runner.refresh()
            assert not runner.running
            hooks[0] = hook(r.url)
            await runner.refresh()
            assert runner.running
    assert outcomes(metrics)["gone"] >= 1
    rows = await pending(backend)
    assert [(i, n) for i, _, n in rows] == [(sid, 0)]  # released (XNACK SILENT): count back


async def test_retry_after_holds_the_entry_at_least_that_long_within_the_bound(
    backend: Backend,
) -> None:
    await stream(backend, 1)
    script = lambda n, hit: Answer(503, (("retry-after", "3600"),)) if n == 0 else Answer()  # noqa: E731
    with receiving(script) as r:
        async with running(backend, [hook(r.url)], webhook_retry_after_max_ms=300) as (
            _,
            metrics,
            _,
        ):
            await until_async(lambda: outcomes(metrics).get("ok") == 1, what="acknowledged")
    first, second = r.hits
    assert second.at - first.at >= 0.3  # held for the bound (not 3600 s, not the 10 ms back-off)
    assert second.json()["delivery"] == 2


async def test_at_most_concurrency_requests_are_in_flight(backend: Backend) -> None:
    await stream(backend, 12, policy=None)
    with receiving() as r:
        r.gate = threading.Event()
        async with running(backend, [hook(r.url, concurrency=3)]) as (_, metrics, _):
            await until_async(lambda: r.active == 3, what="three requests waiting")
            # The consumer took only what it sends: three entries, not twelve.
            assert [c for _, c, _ in await pending(backend)] == ["h"] * 3
            assert sum(metrics.webhook_requests.values()) == 3
            r.gate.set()
            await until_async(lambda: outcomes(metrics).get("ok") == 12, what="all acked")
    assert r.max_active == 3


async def test_entries_a_dead_process_left_pending_are_sent_again(backend: Backend) -> None:
    ids = await stream(backend, 3, policy=None)
    # A previous process took them for the webhook's consumer and died before sending.
    taken = await backend.read(ReadRequest(["orders"], [">"], group="g", consumer="h"))
    assert len(taken[0].entries) == 3
    with receiving() as r:
        options = HookOptions(block_ms=50, refresh_s=0.05, orphan_grace_ms=0)
        async with running(backend, [hook(r.url, timeout_ms=100)], options) as (_, m, _):
            await until_async(lambda: outcomes(m).get("ok") == 3, what="sent again")
    assert sorted(b["id"] for b in r.bodies()) == sorted(format_id(i) for i in ids)
    assert {b["delivery"] for b in r.bodies()} == {2}
    assert await pending(backend) == []


async def test_a_redirect_is_not_followed_and_counts_as_a_failure(backend: Backend) -> None:
    await stream(backend, 1, policy=None)
    with receiving() as elsewhere:
        moved = lambda n, hit: Answer(307, (("location", elsewhere.url),))  # noqa: E731
        with receiving(moved) as r:
            async with running(backend, [hook(r.url)]) as (_, metrics, _):
                await until_async(lambda: outcomes(metrics).get("failed"), what="a failure")
    assert elsewhere.hits == []
    assert [n for _, _, n in await pending(backend)] == [1]  # released, not acknowledged


async def test_a_refused_destination_is_a_failed_delivery_not_a_crash(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    await stream(backend, 2, policy=None)
    with receiving() as r:
        async with running(backend, [hook(r.url)], webhook_allow_private=False) as (
            runner,
            metrics,
            _,
        ):
            await until_async(lambda: outcomes(metrics).get("refused") == 2, what="refused")
            assert runner.running and not next(iter(runner.running.values())).task.done()
    assert r.hits == []
    rows = await pending(backend)
    assert len(rows) == 2
    refusals = [m for m in caplog.messages if "refused destination" in m]
    assert len(refusals) == 1  # once when it starts, not once an entry
    assert "127.0.0.1 is a loopback address" in refusals[0]


async def test_a_webhook_the_rules_refuse_outright_is_not_run(backend: Backend) -> None:
    """http when only https is allowed (or a host off the allow-list): the webhook is not
    run at all, so its group's entries stay unread instead of failing their way to the
    dead-letter stream over a setting; fixing the setting (or the URL) delivers them."""
    await stream(backend, 1, policy=None)
    with receiving() as r:
        async with running(backend, [hook(r.url)], webhook_allow_http=False) as (runner, m, _):
            await runner.refresh()
            assert runner.running == {}
            for _ in range(3):  # a few more refreshes, as the periodic one does: still not run
                await runner.refresh()
                assert runner.running == {}
        assert r.hits == [] and await pending(backend) == []
        async with running(backend, [hook(r.url)]) as (_, m, _):
            await until_async(lambda: outcomes(m).get("ok") == 1, what="delivered once allowed")


async def test_metrics_show_the_outcomes(backend: Backend) -> None:
    await stream(backend, 1, policy=None)
    with receiving() as r:
        async with running(backend, [hook(r.url)]) as (_, metrics, _):
            await until_async(lambda: outcomes(metrics).get("ok") == 1, what="acked")
    text = metrics.exposition().decode()
    assert 'xstreams_webhook_deliveries_total{outcome="ok"} 1.0' in text
    assert "xstreams_webhook_duration_seconds_count 1.0" in text
    assert "xstreams_webhook_in_flight 0.0" in text
    assert "xstreams_webhook_group_deliveries_total{" not in text  # no glob: no per-hook series
    metrics.group_streams = ["ord*"]
    text = metrics.exposition().decode()
    labels = 'group="g",outcome="ok",stream="orders",webhook="h"'
    assert f"xstreams_webhook_group_deliveries_total{{{labels}}} 1.0" in text
    assert "xstreams_metrics_webhooks_omitted 0.0" in text
    metrics.max_groups = 1
    metrics.webhook_deliveries.add(("other", "g", "h2", "ok"))  # a second webhook: past the cap
    metrics.group_streams = ["*"]
    assert "xstreams_metrics_webhooks_omitted 1.0" in metrics.exposition().decode()


# --- the supervisor ---------------------------------------------------------------------------
async def test_the_runner_follows_the_webhooks_as_they_change(backend: Backend) -> None:
    await stream(backend, 0, policy=None)
    with receiving() as r:
        hooks = [hook(r.url, name="a"), hook(r.url, name="b", paused=True)]
        async with running(backend, hooks, webhook_refresh_s=3600) as (runner, metrics, _):
            await until_async(lambda: set(runner.running) == {("orders", "g", "a")}, what="a")
            first = runner.running[("orders", "g", "a")].task
            hooks[0] = hook(r.url, name="a", concurrency=2)  # changed: a new loop
            hooks[1] = hook(r.url, name="b")  # resumed
            await runner.refresh()
            assert set(runner.running) == {("orders", "g", "a"), ("orders", "g", "b")}
            assert first.done() and runner.running[("orders", "g", "a")].task is not first
            await backend.append([XAddArgs("orders", ("n", "x"))])
            await until_async(lambda: outcomes(metrics).get("ok") == 1, what="delivered once")
            del hooks[0]  # deleted: stopped
            await runner.refresh()
            assert set(runner.running) == {("orders", "g", "b")}
            await runner.close()
            assert not runner.running
    assert len(r.hits) == 1


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, None),
        ("120", 120.0),
        (" 0 ", 0.0),
        ("soon", None),
        ("-5", None),
        ("Thu, 01 Jan 1970 00:02:00 GMT", 60.0),  # 120 s since the epoch, 60 s after "now"
    ],
)
def test_retry_after_is_seconds_or_an_http_date(value: str | None, seconds: float | None) -> None:
    assert _retry_after(value, now_s=60.0) == seconds


async def test_wired_to_the_backend_a_410_stores_the_pause(backend: Backend) -> None:
    """As the service wires it: the webhooks from ``Backend.webhooks``, the pause stored
    with ``Backend.set_webhook`` (``store_pause``)."""
    await stream(backend, 1, policy=None)
    settings = Settings(
        webhook_allow_hosts=["127.0.0.1"],
        webhook_allow_http=True,
        webhook_allow_private=True,
        webhook_refresh_s=0.05,
        webhook_block_ms=50,
    )
    with receiving(lambda n, hit: Answer(410)) as r:
        await backend.set_webhook(hook(r.url))
        runner = WebhookRunner(backend, settings, backend.webhooks, store_pause(backend))
        task = asyncio.create_task(runner.run())
        try:

            async def paused() -> bool:
                return any(h.paused for h in await backend.webhooks("orders", "g"))

            await until_async(paused, what="the pause stored")
            await until_async(lambda: not runner.running, what="the loop stopped")
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    (stored,) = await backend.webhooks("orders", "g")
    assert stored.paused and stored.paused_reason is not None and "410" in stored.paused_reason
    assert len(r.hits) == 1


@pytest.mark.redis
async def test_two_front_ends_share_a_webhook_and_never_send_an_entry_twice() -> None:
    """Two processes in front of one Redis each run the webhook (one consumer, shared):
    the group gives each entry to one of them, so every entry is sent once, and both
    send (the work is shared, not duplicated)."""
    from app.backends.redis import RedisBackend
    from tests.backends.test_redis_backend import _standalone_url

    fronts = [RedisBackend.from_url(_standalone_url(), block_connections=8) for _ in range(2)]
    for b in fronts:
        await b.start()
    try:
        await fronts[0].command(["DEL", "orders", "dead"])
        ids = await stream(fronts[0], 200)
        slow = lambda n, hit: Answer(delay_s=0.005)  # noqa: E731 (a script)
        with receiving(slow) as r:
            async with (
                running(fronts[0], [hook(r.url, concurrency=4)]) as (_, m0, _),
                running(fronts[1], [hook(r.url, concurrency=4)]) as (_, m1, _),
            ):

                def done() -> bool:
                    return outcomes(m0).get("ok", 0) + outcomes(m1).get("ok", 0) >= len(ids)

                await until_async(done, timeout_s=30, what="every entry acknowledged")
        sent = [verified(h)["id"] for h in r.hits]
        assert sorted(sent) == sorted(str(i) for i in ids)  # each once, none twice
        assert outcomes(m0).get("ok", 0) > 0 and outcomes(m1).get("ok", 0) > 0
        assert await pending(fronts[0]) == []
    finally:
        for b in fronts:
            await b.close()


class _Acks:
    """A backend that only acknowledges, and records each XACK's IDs."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[list[StreamID]] = []
        self.fail = fail

    async def ack(self, key: str, group: str, ids: list[StreamID]) -> int:
        self.calls.append(list(ids))
        await asyncio.sleep(0)
        if self.fail:
            raise ConnectionError("the backend is away")
        return len(ids)


async def test_the_2xx_of_one_loop_turn_share_one_xack_and_each_waits_for_it() -> None:
    from app.delivery.hook import HookWorker

    hook = Webhook("s", "g", "h", "https://hooks.example.com/", SECRET)
    acks = _Acks()
    worker = HookWorker(cast(Backend, acks), hook, [])
    ids = [StreamID(1, n) for n in range(5)]
    await asyncio.gather(*(worker._ack([i]) for i in ids))
    await worker._ack([StreamID(2, 0)])
    assert acks.calls == [ids, [StreamID(2, 0)]]

    failing = HookWorker(cast(Backend, _Acks(fail=True)), hook, [])
    results = await asyncio.gather(*(failing._ack([i]) for i in ids), return_exceptions=True)
    assert all(isinstance(r, ConnectionError) for r in results)  # each send sees it
