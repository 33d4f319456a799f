"""The /ds surface's tests: most on the embedded app in process; those that take ``api``
run on the three targets (tests/api/conftest.py), against a session server."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import Commands


@pytest.fixture
def api(xs: Commands) -> Iterator[httpx.Client]:
    """An HTTP client on the shared server (flushed by ``xs``)."""
    with httpx.Client(base_url=str(xs.client.base_url), timeout=30) as client:
        yield client
