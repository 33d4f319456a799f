"""Code that takes one role, run against that role's fake (tests/support/fakes.py)."""

from __future__ import annotations

import base64
from typing import cast

from app.api.sse.tail import READ_BATCH, range_between
from app.backends.roles import TailRoles, WebhooksRole
from app.delivery.health import HealthWriter
from app.engine.delivery import Webhook
from app.engine.ids import StreamID
from app.engine.webhook_health import HealthUpdate
from tests.support.fakes import RangeOnlyStreams, RecordingWebhooks, entries

SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef0123").decode()
HOOK = Webhook("s", "g", "h", "https://example.com/hook", SECRET)


async def test_health_writes_fold_while_one_is_in_flight() -> None:
    fake = RecordingWebhooks()
    writer = HealthWriter(cast(WebhooksRole, fake), HOOK)
    writer.record(HealthUpdate(failures=1, attempt_at_ms=1))
    writer.record(HealthUpdate(failures=1, attempt_at_ms=2))
    await writer.close(1.0)
    assert [u.failures for _, u in fake.writes] == [2]
    assert fake.writes[0][1].attempt_at_ms == 2


async def test_a_failing_health_write_is_logged_not_raised() -> None:
    fake = RecordingWebhooks(fail=ConnectionError("down"))
    writer = HealthWriter(cast(WebhooksRole, fake), HOOK)
    writer.record(HealthUpdate(failures=1, attempt_at_ms=1))
    await writer.close(1.0)
    assert fake.writes == []


async def test_range_between_pages_past_one_batch() -> None:
    fake = RangeOnlyStreams({"s": entries(READ_BATCH + 3)})
    got = await range_between(
        cast(TailRoles, fake), "s", StreamID(1, 0), StreamID(READ_BATCH + 2, 0)
    )
    assert [e.id.ms for e in got] == list(range(2, READ_BATCH + 3))
    assert len(fake.calls) == 2
