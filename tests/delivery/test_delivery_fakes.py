"""A webhook's loop (app/delivery/hook.py) against a fake of the delivery role."""

from __future__ import annotations

import base64
import logging
from typing import cast

import pytest

from app.backends.roles import HookRoles
from app.delivery.hook import HookWorker
from app.engine.delivery import DeliveryPolicy, Webhook
from tests.support.fakes import PolicyOnlyDelivery

SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef0123").decode()
HOOK = Webhook("s", "g", "h", "https://example.com/hook", SECRET)


async def test_the_loop_takes_its_groups_policy() -> None:
    policy = DeliveryPolicy(max_deliveries=3, dead_letter_stream="s:dead")
    fake = PolicyOnlyDelivery({("s", "g"): policy})
    worker = HookWorker(cast(HookRoles, fake), HOOK, lanes=[])
    await worker._check()
    assert worker.policy == policy
    assert fake.asked == [("s", "g")]


async def test_a_group_without_a_policy_is_told_once(caplog: pytest.LogCaptureFixture) -> None:
    fake = PolicyOnlyDelivery()
    worker = HookWorker(cast(HookRoles, fake), HOOK, lanes=[])
    with caplog.at_level(logging.WARNING, logger="xstreams"):
        await worker._check()
        await worker._check()
    assert worker.policy is None
    told = [r for r in caplog.records if "no delivery policy" in r.getMessage()]
    assert len(told) == 1
