"""The background retention (app/delivery/retention.py) against a backend that records each
call: which streams a sweep trims with which retention, in bounded steps that let other tasks
run between them, and faults that are counted without ending the sweep."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from pydantic import ValidationError

from app.backends import Backend
from app.backends.embedded import EmbeddedBackend
from app.delivery import Retainer
from app.engine.clock import ManualClock
from app.engine.commands.streams import RangeArgs
from app.engine.delivery import Retention
from app.engine.errors import CommandError, WrongType
from app.engine.ids import MAX_ID, MIN_ID
from app.engine.replies import ScanPage
from app.engine.store import Store
from app.settings import Settings
from tests.support.waiting import until_async

DAY = Retention(max_age_ms=86_400_000)
SHORT = Retention(max_len=10)


@dataclass
class Recorder:
    """The four backend methods a sweep uses. ``over``: entries each stream is over its
    bound (each step removes up to the limit of them); ``broken``: streams whose step fails."""

    own: dict[str, Retention] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)
    over: dict[str, int] = field(default_factory=dict)
    broken: dict[str, Exception] = field(default_factory=dict)
    calls: list[tuple[str, Retention, int]] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    async def retentions(self) -> dict[str, Retention]:
        return dict(self.own)

    async def scan(self, cursor: int, match: str | None, count: int | None) -> ScanPage:
        page = self.keys[cursor : cursor + 2]  # two a page: the sweep must follow the cursor
        nxt = cursor + 2 if cursor + 2 < len(self.keys) else 0
        return ScanPage(nxt, page)

    async def enforce_retention(self, key: str, retention: Retention, limit: int) -> int:
        self.calls.append((key, retention, limit))
        self.log.append("step")
        if key in self.broken:
            raise self.broken[key]
        n = min(limit, self.over.get(key, 0))
        self.over[key] = self.over.get(key, 0) - n
        return n


def retainer(rec: Recorder, **kw: Any) -> tuple[Retainer, list[int], list[int]]:
    trimmed: list[int] = []
    failed: list[int] = []
    r = Retainer(
        cast(Backend, rec),
        trimmed=trimmed.append,
        failed=lambda: failed.append(1),
        **kw,
    )
    return r, trimmed, failed


async def test_a_stream_is_trimmed_in_steps_until_one_removes_nothing() -> None:
    rec = Recorder(own={"orders": DAY}, over={"orders": 2_500})
    r, trimmed, _ = retainer(rec, step=1_000)
    assert await r.sweep() == 2_500
    assert rec.calls == [("orders", DAY, 1_000)] * 4  # 1000, 1000, 500, then 0
    assert trimmed == [1_000, 1_000, 500]


async def test_other_tasks_run_between_two_steps() -> None:
    rec = Recorder(own={"orders": DAY}, over={"orders": 3_000})
    r, _, _ = retainer(rec, step=1_000)
    done = False

    async def other() -> None:
        while not done:
            rec.log.append("other")
            await asyncio.sleep(0)

    task = asyncio.create_task(other())
    await asyncio.sleep(0)
    await r.sweep()
    done = True
    await task
    steps = [i for i, what in enumerate(rec.log) if what == "step"]
    assert len(steps) == 4
    for a, b in itertools.pairwise(steps):
        assert "other" in rec.log[a:b], rec.log


async def test_glob_defaults_apply_to_matching_streams_and_a_streams_own_wins() -> None:
    rec = Recorder(
        own={"logs-a": SHORT},
        keys=["logs-a", "logs-b", "orders", "logs-c", "metrics-x"],
        over={"logs-a": 5, "logs-b": 5, "logs-c": 5, "orders": 5, "metrics-x": 5},
    )
    defaults = [("logs-*", DAY), ("metrics-*", SHORT), ("*", Retention(max_len=1))]
    r, _, _ = retainer(rec, defaults=defaults[:2])
    assert await r.sweep() == 20
    trimmed_with = {key: ret for key, ret, _ in rec.calls}
    assert trimmed_with == {"logs-a": SHORT, "logs-b": DAY, "logs-c": DAY, "metrics-x": SHORT}
    assert r.default_for("orders") is None
    r.defaults = defaults
    assert r.default_for("metrics-x") == SHORT  # the first glob that matches
    assert r.default_for("orders") == Retention(max_len=1)


async def test_without_defaults_nothing_is_scanned() -> None:
    rec = Recorder(keys=["logs-a"], over={"logs-a": 5})
    r, _, _ = retainer(rec)
    assert await r.sweep() == 0
    assert rec.calls == []


async def test_a_failing_stream_is_counted_and_the_sweep_goes_on() -> None:
    rec = Recorder(
        own={"a": DAY, "b": DAY, "c": DAY},
        over={"a": 5, "c": 5},
        broken={"b": CommandError("ERR backend trouble")},
    )
    r, _, failed = retainer(rec)
    assert await r.sweep() == 10
    assert failed == [1]
    assert await r.sweep() == 0
    assert failed == [1, 1]  # counted every time it fails


async def test_a_key_of_another_type_is_passed_over_without_a_fault() -> None:
    rec = Recorder(keys=["logs-a", "logs-b"], over={"logs-b": 5})
    rec.broken["logs-a"] = WrongType()
    r, _, failed = retainer(rec, defaults=[("logs-*", DAY)])
    assert await r.sweep() == 5
    assert failed == []


async def test_the_task_sweeps_only_once_ready_and_survives_a_failing_listing() -> None:
    rec = Recorder(own={"a": DAY}, over={"a": 5})
    ready = False
    asked: list[bool] = []

    def is_ready() -> bool:
        asked.append(ready)
        return ready

    r, trimmed, failed = retainer(rec, interval_s=0.001, ready=is_ready)

    async def broken() -> dict[str, Retention]:
        raise ConnectionError("redis away")

    rec.retentions = broken  # type: ignore[method-assign]
    task = asyncio.create_task(r.run())
    await until_async(lambda: len(asked) >= 3, what="readiness asked three times")
    assert failed == [] and trimmed == []  # asked three times, not ready: no sweep at all
    ready = True
    await until_async(lambda: failed, what="the failing listing counted")
    assert not task.done()  # a failing listing is counted, and the task goes on
    del rec.retentions
    await until_async(lambda: trimmed, what="a sweep that trims")
    task.cancel()
    assert trimmed == [5]


async def test_on_the_embedded_engine_a_sweep_trims_by_age_in_steps() -> None:
    """The sweep over the real backend: entries older than max_age_ms by the backend's clock
    go, whole nodes first, then the node holding the boundary exactly, in steps of at most
    ``step``."""
    clock = ManualClock(1_000)
    store = Store(clock=clock)
    backend = EmbeddedBackend(store)
    for ms in range(1, 501):  # 5 nodes of 100 entries, IDs 1-0 .. 500-0
        store.execute(["XADD", "logs", f"{ms}-0", "n", str(ms)])
    await backend.set_retention("logs", Retention(max_age_ms=1_000))
    clock.set(1_250)  # entries before 250-0 are too old: two whole nodes, 49 of the third
    steps: list[int] = []
    r = Retainer(cast(Backend, backend), step=100, trimmed=steps.append)
    assert await r.sweep() == 249
    assert steps == [100, 100, 49]  # a node a step, then the boundary's node exactly
    assert store.execute(["XLEN", "logs"]) == 251
    assert await r.sweep() == 0


async def test_one_sweep_removes_the_old_entries_of_a_quiet_stream() -> None:
    """Three entries, the first two older than the age: the sweep after they aged removes
    them, though their node is far from full (MINID ``~`` alone would keep them forever)."""
    clock = ManualClock(1_000)
    store = Store(clock=clock)
    backend = EmbeddedBackend(store)
    for sid in ("1-0", "2-0", "1000-0"):
        store.execute(["XADD", "quiet", sid, "n", sid])
    await backend.set_retention("quiet", Retention(max_age_ms=3_600_000))
    r = Retainer(cast(Backend, backend))
    assert await r.sweep() == 0  # none is older than the age yet
    clock.set(3_600_500)  # 1-0 and 2-0 are now older than the age, 1000-0 is not
    assert await r.sweep() == 2
    left = await backend.range(RangeArgs("quiet", MIN_ID, MAX_ID))
    assert [str(e.id) for e in left] == ["1000-0"]


def test_glob_defaults_come_from_the_environment_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    both = '{"logs-*": {"max_age_ms": 60000}, "*": {"max_len": 5}}'
    monkeypatch.setenv("XSTREAMS_RETENTION", both)
    assert Settings().retention_defaults() == [
        ("logs-*", Retention(max_age_ms=60_000)),
        ("*", Retention(max_len=5)),
    ]
    monkeypatch.setenv("XSTREAMS_RETENTION", '{"logs-*": {"max_len": -1}}')
    with pytest.raises(ValidationError, match="retention for 'logs-\\*': ERR max_len must be"):
        Settings()
    monkeypatch.setenv("XSTREAMS_RETENTION", '{"logs-*": {}}')
    with pytest.raises(ValidationError, match="needs max_age_ms, max_len or max_bytes"):
        Settings()
