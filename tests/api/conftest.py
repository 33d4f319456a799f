"""The tests of app/api (the command endpoint, REST, SSE): each test that reaches a session
server runs on the three targets."""

from __future__ import annotations

import pytest

from tests.support.targets import three_targets


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test under tests/api that reaches ``target`` runs on the three targets (once
    here: a second hook in a sub-folder would parametrize ``target`` twice)."""
    three_targets(metafunc)
