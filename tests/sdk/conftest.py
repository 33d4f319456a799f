"""The Upstash SDK runs against every target (tests/support/targets.py)."""

from __future__ import annotations

import pytest

from tests.support.targets import three_targets


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test here that reaches the session's server runs on the three targets."""
    three_targets(metafunc)
