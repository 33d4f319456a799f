"""The retention worker (app/delivery/retention.py) against a fake of its two roles."""

from __future__ import annotations

from typing import cast

from app.backends.roles import RetentionRoles
from app.delivery.retention import Retainer
from app.engine.delivery import Retention
from tests.support.fakes import RecordingRetention

DAY = Retention(max_age_ms=86_400_000)
SHORT = Retention(max_len=10)


async def test_a_sweep_trims_every_stream_and_goes_on_past_a_failing_one() -> None:
    fake = RecordingRetention(
        own={"a": DAY, "b": DAY, "c": SHORT},
        backlog={"a": 5, "c": 2},
        fail={"b": ConnectionError("down")},
    )
    failures: list[None] = []
    trimmed: list[int] = []
    worker = Retainer(
        cast(RetentionRoles, fake),
        step=2,
        failed=lambda: failures.append(None),
        trimmed=trimmed.append,
    )
    assert await worker.sweep() == 7
    assert fake.backlog == {"a": 0, "c": 0}
    assert {k for k, _, _ in fake.steps} == {"a", "b", "c"}  # b failed, c still trimmed
    assert all(limit == 2 for _, _, limit in fake.steps)
    assert ("c", SHORT, 2) in fake.steps
    assert len(failures) == 1
    assert sum(trimmed) == 7


async def test_glob_defaults_apply_over_every_scan_page_and_own_retention_wins() -> None:
    fake = RecordingRetention(
        own={"logs:own": SHORT},
        keys=["logs:1", "other", "logs:2", "logs:own", "logs:3"],
        backlog={"logs:1": 1, "logs:3": 1, "other": 1, "logs:own": 1},
        page=2,
    )
    worker = Retainer(cast(RetentionRoles, fake), defaults=[("logs:*", DAY)])
    assert await worker.sweep() == 4 - 1  # "other" matches no glob
    applied = {(k, r) for k, r, _ in fake.steps}
    assert ("logs:3", DAY) in applied  # on the last SCAN page
    assert ("logs:own", SHORT) in applied and ("logs:own", DAY) not in applied
    assert all(k != "other" for k, _, _ in fake.steps)
