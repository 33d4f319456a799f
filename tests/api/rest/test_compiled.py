"""The compiled /v1 routes (app/api/rest/compiled.py) answer exactly as FastAPI's own
routing and solving do, valid requests and invalid ones alike.

Two apps on in-memory stores with the same manual clock: one as ``xstreams serve`` builds it
(``FastRoutes`` first in its router), one without ``FastRoutes``, so FastAPI solves every
request as before. Each request goes to both in turn, so both stores go through the same
states; status, headers (but the request ID) and body bytes must be the same, and so must
what /metrics counts by route.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.api.rest.common import RestRoute
from app.api.rest.compiled import Compiled, FastRoutes
from app.api.rest.paths import in_order
from app.engine.clock import ManualClock
from app.engine.store import Store
from app.main import create_app
from app.settings import Settings
from tests.api.inproc import InprocTransport

JSON = {"content-type": "application/json"}
S = "/v1/streams/s"
G = f"{S}/groups/g"
E3 = "1700000000000-3"  # the entry the group reads first

# (method, path, query, body, headers): a JSON body is a value, raw bytes are sent as they are.
Case = tuple[str, str, list[tuple[str, str]], Any, dict[str, str]]
CASES: list[Case] = [
    # appends: forms, batches, explicit IDs, trims, and what FastAPI refuses
    ("POST", f"{S}/entries", [], {"fields": {"a": "1", "b": "2"}}, JSON),
    ("POST", f"{S}/entries", [], {"fields": [["a", "1"], ["a", "2"]]}, JSON),
    (
        "POST",
        f"{S}/entries",
        [],
        {"entries": [{"fields": {"n": "1"}}, {"fields": {"n": "2"}}]},
        JSON,
    ),
    ("POST", f"{S}/entries", [], {"id": "1-1", "fields": {"a": "1"}}, JSON),
    ("POST", f"{S}/entries", [], {"id": "nope", "fields": {"a": "1"}}, JSON),
    ("POST", f"{S}/entries", [], {"id": "9999999999999-5", "fields": {"x": "y"}}, JSON),
    ("POST", f"{S}/entries", [], {"fields": {"a": "1"}, "trim": {"maxlen": 3}}, JSON),
    ("POST", f"{S}/entries", [], {"fields": {"a": "1"}, "trim": {"maxlen": -3}}, JSON),
    ("POST", f"{S}/entries", [], {"fields": {"a": "1"}, "unknown": True}, JSON),
    ("POST", f"{S}/entries", [], {"fields": {}}, JSON),
    ("POST", f"{S}/entries", [], {"fields": {"a": 1}}, JSON),
    ("POST", f"{S}/entries", [], {}, JSON),
    ("POST", f"{S}/entries", [], [], JSON),
    ("POST", f"{S}/entries", [], None, JSON),
    ("POST", f"{S}/entries", [], b'{"fields": {"a": "1"}', JSON),
    ("POST", f"{S}/entries", [], b'{"fields": {"a": "1"}}', {}),
    ("POST", f"{S}/entries", [], b'{"fields": {"a": "1"}}', {"content-type": "text/plain"}),
    ("POST", f"{S}/entries", [], b'{"fields": {"a": "1"}}', {"content-type": "application/x+json"}),
    ("POST", f"{S}/entries", [], b'{"fields": {"a": "1"}}', {"content-type": "Application/JSON"}),
    ("POST", f"{S}/entries", [], b"", JSON),
    ("POST", f"{S}/entries", [("id", "1-1")], {"fields": {"q": "1"}}, JSON),
    ("POST", "/v1/streams/missing/entries", [], {"fields": {"a": "1"}, "nomkstream": True}, JSON),
    ("POST", "/v1/streams/%FF%FE/entries", [], b'{"fields": {"\\udcff": "\\udcfe"}}', JSON),
    ("POST", f"{S}/entries/", [], {"fields": {"a": "1"}}, JSON),
    ("PUT", f"{S}/entries", [], {"fields": {"a": "1"}}, JSON),
    # ranges, polls and their parameters
    ("GET", f"{S}/entries", [], None, {}),
    ("GET", f"{S}/entries", [("count", "2")], None, {}),
    ("GET", f"{S}/entries", [("count", "2"), ("count", "3")], None, {}),
    ("GET", f"{S}/entries", [("count", "0")], None, {}),
    ("GET", f"{S}/entries", [("count", "-1")], None, {}),
    ("GET", f"{S}/entries", [("count", "abc")], None, {}),
    ("GET", f"{S}/entries", [("count", "")], None, {}),
    ("GET", f"{S}/entries", [("count", " 2")], None, {}),
    ("GET", f"{S}/entries", [("count", "2.0")], None, {}),
    ("GET", f"{S}/entries", [("count", "100000")], None, {}),
    ("GET", f"{S}/entries", [("count", "99999999999999999999999")], None, {}),
    ("GET", f"{S}/entries", [("order", "desc"), ("count", "2")], None, {}),
    ("GET", f"{S}/entries", [("order", "DESC")], None, {}),
    ("GET", f"{S}/entries", [("start", "(1-1"), ("end", "+")], None, {}),
    ("GET", f"{S}/entries", [("start", "bad")], None, {}),
    ("GET", f"{S}/entries", [("fields", "pairs")], None, {}),
    ("GET", f"{S}/entries", [("fields", "nope")], None, {}),
    ("GET", f"{S}/entries", [("after", "0"), ("count", "1")], None, {}),
    ("GET", f"{S}/entries", [("after", "$"), ("block_ms", "1")], None, {}),
    ("GET", f"{S}/entries", [("block_ms", "5")], None, {}),
    ("GET", f"{S}/entries", [("block_ms", "x"), ("after", "0")], None, {}),
    ("GET", f"{S}/entries", [("whatever", "1")], None, {}),
    ("GET", "/v1/streams/missing/entries", [], None, {}),
    ("GET", "/v1/streams/%FF%FE/entries", [("fields", "pairs")], None, {}),
    ("GET", f"{S}/entries/1-1", [], None, {}),
    ("GET", f"{S}/entries/1-2", [], None, {}),
    ("GET", f"{S}/entries/x", [], None, {}),
    ("GET", "/v1/read", [("stream", "s"), ("after", "0"), ("count", "2")], None, {}),
    ("GET", "/v1/read", [("stream", "s"), ("stream", "missing"), ("after", "0")], None, {}),
    ("GET", "/v1/read", [], None, {}),
    ("GET", "/v1/streams", [("count", "10")], None, {}),
    ("GET", "/v1/streams", [("match", "s*"), ("cursor", "0")], None, {}),
    ("GET", f"{S}", [("full", "true"), ("count", "2")], None, {}),
    ("GET", f"{S}", [("full", "maybe")], None, {}),
    # groups, consumers, reads, acks, claims
    ("POST", f"{S}/groups", [], {"name": "g", "id": "0"}, JSON),
    ("POST", f"{S}/groups", [], {"name": "g", "id": "0"}, JSON),
    ("POST", f"{S}/groups", [], {"name": "h", "id": "nope"}, JSON),
    ("POST", f"{S}/groups", [], {"name": "", "id": "0"}, JSON),
    ("GET", f"{S}/groups", [], None, {}),
    ("GET", f"{G}", [], None, {}),
    ("GET", f"{S}/groups/none", [], None, {}),
    ("POST", f"{G}/consumers/c/reads", [], {"id": ">", "count": 2}, JSON),
    ("POST", f"{G}/consumers/c/reads", [("fields", "pairs")], {"id": ">", "count": 1}, JSON),
    ("POST", f"{G}/consumers/c/reads", [], {"id": "0"}, JSON),
    ("POST", f"{G}/consumers/c/reads", [], {"id": ">", "count": "many"}, JSON),
    ("POST", f"{G}/consumers/c/reads", [], {"id": ">", "noack": "perhaps"}, JSON),
    ("POST", f"{S}/groups/none/consumers/c/reads", [], {"count": 1}, JSON),
    ("GET", f"{G}/pending", [], None, {}),
    ("GET", f"{G}/pending", [("start", "-"), ("end", "+"), ("count", "5")], None, {}),
    ("GET", f"{G}/pending", [("consumer", "c"), ("min_idle_ms", "0"), ("count", "5")], None, {}),
    ("GET", f"{G}/pending", [("min_idle_ms", "-1"), ("count", "5")], None, {}),
    ("GET", f"{G}/consumers", [], None, {}),
    ("POST", f"{G}/acks", [], {"ids": ["1700000000000-2"]}, JSON),
    ("POST", f"{G}/acks", [], {"ids": []}, JSON),
    ("POST", f"{G}/acks", [], {"ids": ["bad"]}, JSON),
    ("POST", f"{G}/claims", [], {"consumer": "d", "min_idle_ms": 0, "ids": [E3]}, JSON),
    ("POST", f"{G}/autoclaims", [], {"consumer": "d", "min_idle_ms": 0}, JSON),
    ("POST", f"{G}/nacks", [], {"ids": [E3], "mode": "fail"}, JSON),
    ("POST", f"{G}/nacks", [], {"ids": [E3], "mode": "sometimes"}, JSON),
    ("PUT", f"{G}/consumers/e", [], None, {}),
    ("DELETE", f"{G}/consumers/e", [], None, {}),
    ("PATCH", f"{G}", [], {"last_delivered_id": "0"}, JSON),
    ("PATCH", f"{G}", [], {"last_delivered_id": "0", "entries_read": -1}, JSON),
    # deletes
    ("DELETE", f"{S}/entries", [("id", "1-1"), ("id", "1-1")], None, {}),
    ("DELETE", f"{S}/entries", [("id", "9999999999999-5"), ("policy", "ACKED")], None, {}),
    ("DELETE", f"{S}/entries", [("id", "1-1"), ("policy", "sometimes")], None, {}),
    ("DELETE", f"{S}/entries", [], None, {}),
    ("DELETE", f"{S}/entries/1-1", [], None, {}),
    ("DELETE", f"{S}/groups/g", [], None, {}),
    ("POST", f"{S}/trim", [], {"maxlen": 1}, JSON),
    ("DELETE", f"{S}", [], None, {}),
    ("DELETE", f"{S}", [], None, {}),
]


def _app(fast: bool) -> FastAPI:
    app = create_app(Settings(), store=Store(clock=ManualClock()))
    if not fast:
        app.router.routes[:] = [r for r in app.router.routes if not isinstance(r, FastRoutes)]
    return app


def _client(app: FastAPI) -> httpx.Client:
    return httpx.Client(transport=InprocTransport(app), base_url="http://xs", timeout=30)


@pytest.fixture
def pair() -> Iterator[tuple[httpx.Client, httpx.Client]]:
    with _client(_app(True)) as fast, _client(_app(False)) as slow:
        yield fast, slow


def _send(client: httpx.Client, case: Case) -> tuple[int, list[tuple[str, str]], bytes]:
    method, path, query, body, headers = case
    content = body if isinstance(body, bytes) else None
    json = None if isinstance(body, bytes) or (body is None and method != "POST") else body
    if body is None and method == "POST":
        content = b"null"
    r = client.request(method, path, params=query, content=content, json=json, headers=headers)
    kept = [(k, v) for k, v in r.headers.multi_items() if k.lower() != "x-request-id"]
    return r.status_code, kept, r.content


def test_the_hot_operations_are_compiled() -> None:
    """Appends, ranges, polls, group reads and acks skip FastAPI's solving: a FastAPI that
    changed what ``Compiled`` reads would quietly send them the slow way."""
    (fast,) = [r for r in _app(True).router.routes if isinstance(r, FastRoutes)]
    names = {c.route.name for c in fast.compiled}
    hot = {"append_entries", "list_entries", "read_group", "ack_entries", "get_entry"}
    assert hot <= names, hot - names


def test_every_rest_route_but_the_event_streams_is_compiled() -> None:
    """A route that stops compiling (a FastAPI upgrade, a parameter of a new kind) would still
    answer alike, the slow way: this names it. The event streams answer a stream, not a
    model, and FastAPI serves them."""
    app = _app(True)
    (fast,) = [r for r in app.router.routes if isinstance(r, FastRoutes)]
    compiled = {c.route.name for c in fast.compiled}
    rest = {r.name for r in in_order(app.router.routes) if isinstance(r, RestRoute)}
    assert rest - compiled == {"stream_events", "streams_events", "consumer_events"}
    assert len(compiled) >= 40


def test_valid_requests_take_the_compiled_path_and_invalid_ones_fastapis(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Solving answers values for what FastAPI accepts and hands the rest over: a fast path
    that quietly handed everything to FastAPI would still answer alike."""
    solved: list[bool] = []
    values = Compiled.values

    def spy(self: Compiled, request: Any) -> dict[str, Any] | None:
        got = values(self, request)
        solved.append(got is not None)
        return got

    monkeypatch.setattr(Compiled, "values", spy)
    with _client(_app(True)) as fast:
        valid: list[Case] = [
            ("POST", f"{S}/entries", [], {"fields": {"a": "1"}}, JSON),
            ("POST", f"{S}/entries", [], {"entries": [{"fields": {"n": "1"}}] * 2}, JSON),
            ("GET", f"{S}/entries", [], None, {}),
            ("GET", f"{S}/entries", [("order", "desc"), ("count", "2")], None, {}),
        ]
        for case in valid:
            assert _send(fast, case)[0] < 400, case
        assert solved == [True] * len(valid)
        solved.clear()
        invalid: list[Case] = [
            ("POST", f"{S}/entries", [], {"fields": {}}, JSON),
            ("GET", f"{S}/entries", [("count", "abc")], None, {}),
        ]
        for case in invalid:
            assert _send(fast, case)[0] in (400, 422), case
        assert solved == [False] * len(invalid)
        solved.clear()
        untyped: Case = ("POST", f"{S}/entries", [], b'{"fields": {"a": "1"}}', {})
        assert _send(fast, untyped)[0] == 415  # refused before either path solves it
        assert solved == []


def test_every_case_answers_alike(pair: tuple[httpx.Client, httpx.Client]) -> None:
    fast, slow = pair
    for case in CASES:
        assert _send(fast, case) == _send(slow, case), case


def test_metrics_count_the_same_routes(pair: tuple[httpx.Client, httpx.Client]) -> None:
    fast, slow = pair
    for case in CASES[:30]:
        _send(fast, case)
        _send(slow, case)

    def counted(client: httpx.Client) -> list[str]:
        text = client.get("/metrics").text
        return sorted(line for line in text.splitlines() if line.startswith("xstreams_http_"))

    got = counted(fast)
    assert any('route="/v1/streams/{stream}/entries"' in line for line in got)
    # Latencies differ run to run; counts and labels may not.
    assert [line for line in got if "_count" in line or "_total" in line] == [
        line for line in counted(slow) if "_count" in line or "_total" in line
    ]
