"""Fixtures for the engine unit tests: a Store on a ManualClock, no server, no network."""

from __future__ import annotations

import pytest

from app.engine.clock import ManualClock
from app.engine.store import Store
from tests.engine.helpers import T0, Journal


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def store(clock: ManualClock) -> Store:
    return Store(clock=clock)


@pytest.fixture
def journal(store: Store) -> Journal:
    """``store``'s journal, in memory (``helpers.recovered`` replays it)."""
    j = Journal()
    store.journal = j
    return j
