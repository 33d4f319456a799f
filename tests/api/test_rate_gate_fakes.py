"""The rate gate (app/api/rates.py) against a fake of the rates role: what it answers for
each decision, and that a backend that cannot be asked does not stop requests."""

from __future__ import annotations

from typing import cast

import httpx
from starlette.types import Receive, Scope, Send

from app.access import Grant, Kind, Principal
from app.access.rates import CredentialLimits, Decision, Rate
from app.api.rates import RateDefaults, RateGate
from app.backends.roles import RatesRole
from app.observe.metrics import Metrics
from tests.support.fakes import ScriptedRates

RATE = Rate.parse("10/s:3")
ALICE = Principal("alice", Grant.of(read=["*"]), Kind.JWT, limits=CredentialLimits(RATE))


async def _ok(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ran"})


def _client(rates: ScriptedRates, principal: Principal = ALICE) -> httpx.AsyncClient:
    gate = RateGate(_ok, lambda: cast(RatesRole, rates), Metrics(), RateDefaults(), frozenset())

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        scope.setdefault("state", {})["principal"] = principal  # as the access gate leaves it
        await gate(scope, receive, send)

    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x")


async def test_a_passing_request_runs_and_says_what_is_left() -> None:
    rates = ScriptedRates([Decision(True, 2, 0, 100)])
    async with _client(rates) as c:
        r = await c.get("/v1/streams")
    assert (r.status_code, r.text) == (200, "ran")
    assert r.headers["ratelimit-policy"] == '"requests";q=10;w=1'
    assert r.headers["ratelimit"] == '"requests";r=2;t=1'
    assert rates.spent == [("jwt:alice", RATE, 1)]


async def test_a_refused_request_runs_nothing_and_says_when() -> None:
    rates = ScriptedRates([Decision(False, 0, 1500, 3000)])
    async with _client(rates) as c:
        problem = await c.get("/v1/streams")
        plain = await c.post("/", json=["PING"])
    assert problem.status_code == plain.status_code == 429
    assert problem.headers["content-type"] == "application/problem+json"
    assert plain.json() == {
        "error": "ERR too many requests for this credential (at most 10/s:3); retry after 1500 ms"
    }
    assert plain.headers["retry-after"] == "2"  # whole seconds, rounded up
    assert plain.headers["ratelimit"] == '"requests";r=0;t=3'


async def test_a_backend_that_cannot_be_asked_lets_requests_through() -> None:
    rates = ScriptedRates(fail=ConnectionError("redis away"))
    async with _client(rates) as c:
        r = await c.get("/v1/streams")
    assert (r.status_code, r.text) == (200, "ran") and "ratelimit" not in r.headers


async def test_an_unlimited_credential_spends_nothing() -> None:
    rates = ScriptedRates([Decision(False, 0, 1, 1)])
    bob = Principal("bob", Grant.of(read=["*"]), Kind.JWT)
    async with _client(rates, bob) as c:
        r = await c.get("/v1/streams")
    assert r.status_code == 200 and rates.spent == []
