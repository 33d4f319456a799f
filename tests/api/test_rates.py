"""Requests per credential on the three targets: the budget is spent by every surface, told
in RateLimit headers, refused with 429 and Retry-After in the surface's shape, and held
per credential (app/api/rates.py)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import jwt
import pytest

from tests.support.targets import REDIS_PARAMS, TARGET_PARAMS, Served, served_on
from tests.support.waiting import until_async

SECRET = "an application secret of enough length"
ADMIN = {"Authorization": "Bearer admin"}


def bearer(sub: str, limits: Any = None) -> dict[str, str]:
    claims: dict[str, Any] = {
        "sub": sub,
        "exp": int(time.time()) + 600,
        "xstreams": {"write": ["*"], "read": ["*"]},
    }
    if limits is not None:
        claims["xstreams_limits"] = limits
    return {"Authorization": f"Bearer {jwt.encode(claims, SECRET, algorithm='HS256')}"}


@pytest.fixture(params=TARGET_PARAMS)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Served:
    return served_on(request, request.param, tmp_path)


async def test_every_surface_spends_one_budget_and_says_so(served: Served) -> None:
    alice = bearer("alice", {"requests": "3/min"})
    async with served(token="admin", jwt_secret=SECRET) as c:
        sent = [
            await c.post("/", json=["XADD", "s", "*", "n", "1"], headers=alice),
            await c.get("/v1/streams/s/entries", headers=alice),
            await c.post("/pipeline", json=[["XLEN", "s"]], headers=alice),
        ]
        for left, r in zip((2, 1, 0), sent, strict=True):
            assert r.status_code == 200, r.text
            assert r.headers["ratelimit-policy"] == '"requests";q=3;w=60'
            assert r.headers["ratelimit"].startswith(f'"requests";r={left};t=')
        refused = await c.post("/", json=["XLEN", "s"], headers=alice)
        assert refused.status_code == 429
        assert refused.json()["error"].startswith("ERR too many requests for this credential")
        assert 1 <= int(refused.headers["retry-after"]) <= 20  # one request every 20 s
        assert refused.headers["ratelimit"].startswith('"requests";r=0;t=')
        problem = await c.get("/v1/streams/s/entries", headers=alice)
        assert problem.status_code == 429
        assert problem.headers["content-type"] == "application/problem+json"
        assert problem.json()["status"] == 429
        # Refused requests ran nothing: the stream holds alice's one entry.
        length = await c.post("/", json=["XLEN", "s"], headers=ADMIN)
        assert length.json() == {"result": 1}
        # Another credential, and the admin, are not held by alice's budget.
        bob = await c.post("/", json=["XLEN", "s"], headers=bearer("bob"))
        assert bob.status_code == 200 and "ratelimit" not in bob.headers
        assert "ratelimit" not in length.headers


async def test_settings_set_the_defaults_a_credential_may_override(served: Served) -> None:
    settings = {"token": "admin", "jwt_secret": SECRET, "rate_requests": "2/min"}
    async with served(**settings) as c:
        bob, carol = bearer("bob"), bearer("carol", {"requests": "4/min"})
        bobs = [(await c.post("/", json=["PING"], headers=bob)).status_code for _ in range(3)]
        carols = [(await c.post("/", json=["PING"], headers=carol)).status_code for _ in range(5)]
        assert bobs == [200, 200, 429] and carols == [200, 200, 200, 200, 429]
        admins = [(await c.post("/", json=["PING"], headers=ADMIN)).status_code for _ in range(5)]
        assert admins == [200] * 5  # the admin is not limited unless rate_requests_admin says
        erin = bearer("erin", {"requests": "4/min"})
        told = [
            (await c.get("/v1/whoami", headers=who)).json()["rate"]
            for who in (erin, bearer("dave"), ADMIN)
        ]
        assert told == ["4/min", "2/min", None]  # her own, the default, not limited


async def test_an_open_service_may_limit_everyone_but_not_its_probes(served: Served) -> None:
    async with served(rate_requests_admin="2/min") as c:
        codes = [(await c.get("/v1/streams")).status_code for _ in range(3)]
        assert codes == [200, 200, 429]
        assert (await c.get("/healthz")).status_code == 200
        assert (await c.get("/readyz")).status_code == 200


async def test_a_refused_credential_passes_again_when_told(served: Served) -> None:
    alice = bearer("alice", {"requests": "20/s:1"})  # one at once, one every 50 ms
    async with served(token="admin", jwt_secret=SECRET) as c:
        assert (await c.post("/", json=["PING"], headers=alice)).status_code == 200
        refused = await c.post("/", json=["PING"], headers=alice)
        assert refused.status_code == 429
        assert "retry after" in refused.json()["error"]

        async def passes() -> bool:
            r = await c.post("/", json=["PING"], headers=alice)
            return r.status_code == 200

        await until_async(passes, what="a request after the wait it was told")


async def test_a_malformed_limits_claim_refuses_the_token(served: Served) -> None:
    async with served(token="admin", jwt_secret=SECRET) as c:
        for bad in (
            {"requests": "fast"},
            {"requests": 5},
            ["3/s"],
            {"storage": "1/s"},
            {"bytes": "fast"},
        ):
            r = await c.post("/", json=["PING"], headers=bearer("alice", bad))
            assert r.status_code == 401, (bad, r.text)


@pytest.fixture(params=REDIS_PARAMS)
def served_redis(request: pytest.FixtureRequest, tmp_path: Path) -> Served:
    return served_on(request, request.param, tmp_path)


async def test_front_ends_in_front_of_one_redis_share_a_budget(served_redis: Served) -> None:
    alice = bearer("alice", {"requests": "4/min"})
    settings = {"token": "admin", "jwt_secret": SECRET}
    async with served_redis(**settings) as a, served_redis(**settings) as b:
        codes = []
        for c in (a, b, a, b, a, b):
            codes.append((await c.post("/", json=["PING"], headers=alice)).status_code)
        assert codes == [200, 200, 200, 200, 429, 429]


def test_a_rate_setting_written_wrong_is_refused() -> None:
    from pydantic import ValidationError

    from app.settings import Settings

    with pytest.raises(ValidationError, match="not a rate"):
        Settings(rate_requests="lots")


async def test_metrics_count_each_credentials_refusals(served: Served) -> None:
    alice = bearer("alice", {"requests": "1/min"})
    async with served(token="admin", jwt_secret=SECRET) as c:
        codes = [(await c.post("/", json=["PING"], headers=alice)).status_code for _ in range(3)]
        assert codes == [200, 429, 429]
        text = (await c.get("/metrics", headers=ADMIN)).text
        series = 'xstreams_throttled_requests_total{credential="jwt:alice",limit="requests"}'
        assert f"{series} 2.0" in text


def test_past_the_series_cap_credentials_count_as_other() -> None:
    from app.observe.metrics import Metrics

    m = Metrics(max_groups=2)
    for name in ("key:a", "key:b", "key:c", "key:a", "jwt:d"):
        m.throttle(name)
    m.throttle("key:b", "bytes")  # a known credential's other limit is its own series
    m.throttle("key:e", "entries")
    assert dict(m.throttled) == {
        ("key:a", "requests"): 2,
        ("key:b", "requests"): 1,
        ("key:b", "bytes"): 1,
        ("other", "requests"): 2,
        ("other", "entries"): 1,
    }


async def test_an_event_stream_spends_the_same_budget(served: Served) -> None:
    alice = bearer("alice", {"requests": "1/min"})
    async with served(token="admin", jwt_secret=SECRET) as c:
        added = await c.post("/", json=["XADD", "s", "*", "n", "1"], headers=alice)
        assert added.status_code == 200
        events = await c.get("/v1/streams/s/events", headers=alice)  # refused before it opens
        assert events.status_code == 429 and int(events.headers["retry-after"]) >= 1
        assert events.headers["content-type"] == "application/problem+json"
        assert events.headers["ratelimit"].startswith('"requests";r=0;')
