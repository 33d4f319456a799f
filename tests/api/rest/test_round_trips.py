"""How many backend calls a route makes: one on the hot path, a second only to explain an
ambiguous answer (app/api/rest/explain.py). On Redis each call is a round trip and two calls
are not one atomic step, so a route that looked before it acted would be slower and could
answer for a state that no single moment had."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest

from app.backends.base import Backend
from app.backends.embedded import EmbeddedBackend
from app.engine.store import Store
from app.main import create_app
from app.settings import Settings

# Operations, not the attributes or the scope every REST request opens (``answering``).
NOT_OPERATIONS = ("name", "stateless", "checks_commands", "answering")
OPERATIONS = [n for n in dir(Backend) if not n.startswith("_") and n not in NOT_OPERATIONS]


class Counting(EmbeddedBackend):
    """The embedded engine, recording the name of each Backend operation called."""

    def __init__(self) -> None:
        super().__init__(Store())
        self.calls: list[str] = []
        for name in OPERATIONS:
            setattr(self, name, self._recorded(name, getattr(self, name)))

    def _recorded(
        self, name: str, method: Callable[..., Awaitable[Any]]
    ) -> Callable[..., Awaitable[Any]]:
        async def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return await method(*args, **kwargs)

        return call


@pytest.fixture
async def setup() -> AsyncIterator[tuple[httpx.AsyncClient, Counting]]:
    backend = Counting()
    app = create_app(Settings(), backend=backend)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://xs") as client:
        for argv in (
            ["XADD", "s", "1-0", "f", "v"],
            ["XADD", "s", "2-0", "f", "v"],
            ["XGROUP", "CREATE", "s", "g", "0"],
            ["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"],
        ):
            r = await client.post("/", json=argv)
            assert r.status_code == 200, r.text
        yield client, backend


G = "/v1/streams/s/groups/g"
N = "/v1/streams/s/groups/nope"
CLAIM = {"consumer": "bob", "min_idle_ms": 0, "ids": ["1-0"]}
AUTOCLAIM = {"consumer": "bob", "min_idle_ms": 0}

# (method, path, body, status, the backend operations called in order)
CASES: list[tuple[str, str, Any, int, list[str]]] = [
    ("POST", f"{G}/acks", {"ids": ["1-0"]}, 200, ["ack"]),
    ("POST", f"{G}/acks", {"ids": ["9-0"]}, 200, ["ack", "group"]),  # 0: is the group there?
    ("POST", f"{N}/acks", {"ids": ["1-0"]}, 404, ["ack", "group"]),
    ("POST", f"{N}/acks", {"ids": ["bad"]}, 404, ["group"]),  # the path's 404 first
    ("POST", f"{G}/claims", CLAIM, 200, ["claim"]),
    ("POST", f"{N}/claims", CLAIM, 404, ["claim"]),
    ("POST", f"{G}/autoclaims", AUTOCLAIM, 200, ["autoclaim"]),
    ("POST", f"{N}/autoclaims", AUTOCLAIM, 404, ["autoclaim"]),
    ("GET", f"{G}/consumers", None, 200, ["consumers"]),
    ("GET", f"{N}/consumers", None, 404, ["consumers"]),
    ("PUT", f"{G}/consumers/carol", None, 201, ["create_consumer", "consumers"]),
    ("PUT", f"{N}/consumers/carol", None, 404, ["create_consumer"]),
    # DELCONSUMER's 0 cannot tell "deleted" from "not there": the one look kept first.
    ("DELETE", f"{G}/consumers/alice", None, 200, ["consumers", "delete_consumer"]),
    ("POST", "/v1/streams/s/groups", {"name": "h"}, 201, ["create_group", "group"]),
    ("POST", "/v1/streams/none/groups", {"name": "h"}, 404, ["create_group"]),
    ("DELETE", G, None, 204, ["destroy_group"]),
    ("DELETE", N, None, 404, ["destroy_group"]),
    ("POST", "/v1/streams/s/trim", {"maxlen": 1}, 200, ["trim"]),
    ("POST", "/v1/streams/none/trim", {"maxlen": 1}, 404, ["trim", "stream_info"]),
    ("GET", "/v1/streams/s/entries", None, 200, ["range"]),
    ("GET", "/v1/streams?count=100", None, 200, ["scan", "stream_infos"]),
    # A group shown with its policy: the stream's policies in one call, for a page too.
    ("GET", G, None, 200, ["group", "delivery_policies"]),
    ("GET", "/v1/streams/s/groups", None, 200, ["groups", "delivery_policies"]),
    ("GET", f"{G}/policy", None, 404, ["delivery_policy"]),
    ("GET", f"{N}/policy", None, 404, ["delivery_policy"]),
    ("PUT", f"{G}/policy", {"visibility_timeout_ms": 10}, 200, ["set_delivery_policy"]),
    ("PUT", f"{N}/policy", {"visibility_timeout_ms": 0}, 404, ["group"]),  # the path's 404
    ("DELETE", f"{G}/policy", None, 404, ["set_delivery_policy"]),
    # Then whether the stream is there, for the retention's state (waiting or active).
    ("PUT", "/v1/streams/s/retention", {"max_len": 5}, 200, ["set_retention", "stream_infos"]),
    ("DELETE", "/v1/streams/s/retention", None, 404, ["set_retention"]),
    ("POST", "/v1/streams/none/redrive", {}, 404, ["redrive"]),
]


@pytest.mark.parametrize(("method", "path", "body", "status", "calls"), CASES)
async def test_a_route_acts_first(
    setup: tuple[httpx.AsyncClient, Counting],
    method: str,
    path: str,
    body: Any,
    status: int,
    calls: list[str],
) -> None:
    client, backend = setup
    backend.calls.clear()
    r = await client.request(method, path, json=body)
    assert r.status_code == status, r.text
    assert backend.calls == calls
