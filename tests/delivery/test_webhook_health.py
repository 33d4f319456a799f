"""A webhook's health (issue 37), on the embedded backend and on redis-server: what the runner
stores after each attempt (``Backend.webhook_health``), how updates from several processes
add up, and that a new URL starts with none."""

from __future__ import annotations

import threading
import time

import pytest

from app.backends import Backend
from app.engine.delivery import Webhook
from app.engine.webhook_health import (
    HealthUpdate,
    WebhookHealth,
    health_from_text,
    health_text,
    merged,
)
from tests.conftest import free_port
from tests.delivery import test_webhooks as base
from tests.delivery.support import Answer, receiving
from tests.support.waiting import until_async

backend = base.backend  # the two backends' fixture


async def health_of(backend: Backend, hook: Webhook) -> WebhookHealth | None:
    (found,) = await backend.webhook_health([hook])
    return found


async def test_failures_against_a_closed_port_show_in_the_health(backend: Backend) -> None:
    await base.stream(backend, 1)
    h = base.hook(f"http://127.0.0.1:{free_port()}/hook")
    await backend.set_webhook(h)
    started_ms = int(time.time() * 1000)
    assert await health_of(backend, h) is None
    async with base.running(backend, [h]):

        async def failing() -> WebhookHealth | None:
            found = await health_of(backend, h)
            return found if found is not None and found.consecutive_failures >= 3 else None

        found = await until_async(failing, what="three failures in a row")
    assert found.last_status is None  # no answer
    assert found.last_error is not None and "cannot reach http://127.0.0.1:" in found.last_error
    assert found.last_attempt_at_ms is not None and found.last_attempt_at_ms >= started_ms
    assert found.last_success_at_ms is None


async def test_an_answer_then_a_success_show_in_the_health(backend: Backend) -> None:
    await base.stream(backend, 2)
    healed = threading.Event()
    script = lambda n, hit: Answer(204 if healed.is_set() else 503)  # noqa: E731
    with receiving(script) as r:
        h = base.hook(r.url, concurrency=1)
        await backend.set_webhook(h)
        async with base.running(backend, [h]) as (_, metrics, _):

            async def answered() -> WebhookHealth | None:
                found = await health_of(backend, h)
                failing = found is not None and found.consecutive_failures >= 2
                return found if failing else None

            failed = await until_async(answered, what="two 503s stored")
            assert failed.last_status == 503 and failed.last_error == f"{r.url} answers 503"
            assert failed.last_success_at_ms is None
            healed.set()
            await until_async(lambda: base.outcomes(metrics).get("ok") == 2, what="two acked")

            async def succeeded() -> WebhookHealth | None:
                found = await health_of(backend, h)
                return found if found is not None and found.last_status == 204 else None

            ok = await until_async(succeeded, what="a 204 stored")
    assert ok.last_error is None and ok.consecutive_failures == 0
    assert ok.last_success_at_ms is not None and ok.last_success_at_ms == ok.last_attempt_at_ms
    assert failed.last_attempt_at_ms is not None
    assert ok.last_success_at_ms >= failed.last_attempt_at_ms


async def test_a_destination_refused_at_run_time_shows_in_last_error(backend: Backend) -> None:
    """Allowed when set (here: never checked), refused when sent: a name that now resolves
    to a private address shows why its entries fail."""
    await base.stream(backend, 1, policy=None)
    with receiving() as r:
        h = base.hook(r.url)
        await backend.set_webhook(h)
        async with base.running(backend, [h], webhook_allow_private=False):

            async def refused() -> WebhookHealth | None:
                found = await health_of(backend, h)
                return found if found is not None and found.last_error else None

            found = await until_async(refused, what="the refusal stored")
    assert found.last_error == (
        "refused destination: 127.0.0.1 is a loopback address (unless --webhook-allow-private)"
    )
    assert found.consecutive_failures == 1 and found.last_status is None
    assert r.hits == []


async def test_updates_add_up_across_processes_and_a_success_resets(backend: Backend) -> None:
    """Two processes' updates to one webhook: failures are counted together; a success
    anywhere starts the count again; a note (no attempt) keeps the times."""
    await base.stream(backend, 0)
    h = base.hook("https://hooks.example.com/a")
    await backend.set_webhook(h)
    fail = HealthUpdate(False, 2, 500, "answers 500", 1_000)
    await backend.record_webhook_health(h, fail)
    await backend.record_webhook_health(h, fail)  # another process's two failures
    assert await health_of(backend, h) == WebhookHealth(500, "answers 500", 1_000, None, 4)
    success_then_failure = HealthUpdate(True, 1, None, "timeout", 3_000, 2_000)
    await backend.record_webhook_health(h, success_then_failure)
    assert await health_of(backend, h) == WebhookHealth(None, "timeout", 3_000, 2_000, 1)
    await backend.record_webhook_health(h, HealthUpdate(last_error="not run: x"))
    assert await health_of(backend, h) == WebhookHealth(None, "not run: x", 3_000, 2_000, 1)
    # Another URL (the webhook replaced) starts with none; the name's other bytes too.
    moved = base.hook("https://hooks.example.com/b")
    assert await backend.webhook_health([moved, h]) == [None, await health_of(backend, h)]
    odd = base.hook("https://hooks.example.com/a", name="h\x00|\udcff")
    await backend.record_webhook_health(odd, HealthUpdate(True, 0, 204, None, 5, 5))
    assert await health_of(backend, odd) == WebhookHealth(204, None, 5, 5, 0)
    assert (await health_of(backend, h) or WebhookHealth()).consecutive_failures == 1


@pytest.mark.parametrize(
    "health",
    [
        WebhookHealth(),
        WebhookHealth(503, "a | b\nc", 1, 2, 3),
        WebhookHealth(None, "", None, None, 0),
        WebhookHealth(200, None, 10**13, 10**13, 0),
    ],
)
def test_the_stored_text_reads_back(health: WebhookHealth) -> None:
    assert health_from_text(health_text(health)) == health


def test_updates_fold_as_they_apply() -> None:
    a = HealthUpdate(False, 2, 500, "e1", 10)
    b = HealthUpdate(True, 1, None, "e2", 30, 20)
    c = HealthUpdate(False, 1, 502, "e3", 40)
    old = WebhookHealth(None, "e0", 5, 1, 7)
    assert merged(old, a.then(b).then(c)) == merged(merged(merged(old, a), b), c)
    assert merged(old, a.then(b).then(c)) == WebhookHealth(502, "e3", 40, 20, 2)
