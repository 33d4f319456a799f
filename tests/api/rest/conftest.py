"""Fixtures for the REST resources: a client on the shared ``xstreams serve`` subprocess, and
an in-thread server whose store the test can inspect (blocked readers, clocks).

``api`` talks to the real server the CLI starts (tests/conftest.py's ``server``), flushed
before each test through the command endpoint (``xs``), so every case runs against what a
user would run.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import uvicorn

from app.engine.clock import ManualClock
from app.engine.store import Store
from app.main import create_app
from app.settings import Settings
from tests.conftest import Commands, free_port
from tests.support.waiting import until

PROBLEM_JSON = "application/problem+json"


@pytest.fixture
def api(xs: Commands) -> Iterator[httpx.Client]:
    """An HTTP client on the shared server (flushed by ``xs``)."""
    with httpx.Client(base_url=str(xs.client.base_url), timeout=30) as client:
        yield client


def problem(r: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    """Assert ``r`` is an RFC 9457 problem with this status (and Redis code); its body."""
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["content-type"] == PROBLEM_JSON
    body: dict[str, Any] = r.json()
    assert body["status"] == status
    assert body["type"] == "about:blank"
    assert isinstance(body["detail"], str) and body["detail"]  # for people: its words may change
    assert body["code"] == body["error"].split(" ", 1)[0]
    if code is not None:
        assert body["code"] == code, body
    return body


def add(api: httpx.Client, stream: str, *pairs: tuple[str, str], id: str = "*") -> str:
    """Append one entry (pairs form); its ID."""
    r = api.post(
        f"/v1/streams/{stream}/entries", json={"id": id, "fields": [list(p) for p in pairs]}
    )
    assert r.status_code == 201, r.text
    ids: list[str] = r.json()["ids"]
    return ids[0]


@dataclass
class Local:
    """An in-thread uvicorn serving an in-memory store the test can look into, on a manual
    clock the test moves (idle times, claims)."""

    url: str
    store: Store
    clock: ManualClock
    client: httpx.Client


@pytest.fixture
def local() -> Iterator[Local]:
    clock = ManualClock()
    store = Store(clock=clock)
    app = create_app(Settings(), store=store)
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    until(lambda: server.started, 10, "the in-thread server started")
    url = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=url, timeout=30) as client:
        yield Local(url, store, clock, client)
    server.should_exit = True
    thread.join(10)
