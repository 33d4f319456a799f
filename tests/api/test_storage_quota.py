"""Storage quotas on the three targets: what the streams under a credential's prefix may hold,
an append past it refused with 507 on every surface and nothing of it written, room made by a
trim seen at the next measurement (app/api/quotas.py)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from tests.support.targets import TARGET_PARAMS, Served, served_on
from tests.support.waiting import until_async

SECRET = "an application secret of enough length"
ADMIN = {"Authorization": "Bearer admin"}
SETTINGS = {"token": "admin", "jwt_secret": SECRET, "storage_refresh_s": 0.2}


def bearer(sub: str, prefix: str | None, limits: Any = None) -> dict[str, str]:
    claims: dict[str, Any] = {
        "sub": sub,
        "exp": int(time.time()) + 600,
        "xstreams": {"read": ["*"], "write": ["*"]},
    }
    if prefix is not None:
        claims["xstreams_prefix"] = prefix
    if limits is not None:
        claims["xstreams_limits"] = limits
    return {"Authorization": f"Bearer {jwt.encode(claims, SECRET, algorithm='HS256')}"}


@pytest.fixture(params=TARGET_PARAMS)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Served:
    return served_on(request, request.param, tmp_path)


async def length(c: httpx.AsyncClient, key: str) -> int:
    n: int = (await c.post("/", json=["XLEN", key], headers=ADMIN)).json()["result"]
    return n


async def test_appends_past_the_prefixs_entries_are_refused_on_every_surface(
    served: Served,
) -> None:
    alice = bearer("alice", "a:", {"storage": {"entries": 5}})
    async with served(**SETTINGS) as c:
        for i in range(3):
            r = await c.post("/", json=["XADD", "orders", "*", "n", str(i)], headers=alice)
            assert r.status_code == 200, r.text
        batch = {"entries": [{"fields": {"n": "x"}} for _ in range(2)]}
        r = await c.post("/v1/streams/other/entries", json=batch, headers=alice)
        assert r.status_code == 201, r.text  # 5 across two streams: the quota is the prefix's
        full = await c.post("/", json=["XADD", "orders", "*", "n", "6"], headers=alice)
        assert full.status_code == 507, full.text
        assert full.json()["error"].startswith("ERR storage quota full: entries 5 + 1")
        rest = await c.post(
            "/v1/streams/orders/entries", json={"fields": {"n": "6"}}, headers=alice
        )
        assert rest.status_code == 507 and "storage quota full" in rest.text
        for path in ("/pipeline", "/multi-exec"):
            r = await c.post(path, json=[["XADD", "orders", "*", "n", "6"]], headers=alice)
            assert r.status_code == 507, r.text
        ds = "/ds/v1/stream/log"
        created = await c.put(ds, headers={**alice, "Content-Type": "text/plain"})
        assert created.status_code == 201, created.text  # a stream with no entry takes none
        posted = await c.post(ds, headers={**alice, "Content-Type": "text/plain"}, content="m")
        assert posted.status_code == 507 and "storage quota full" in posted.text
        assert await length(c, "a:orders") == 3 and await length(c, "a:other") == 2
        assert await length(c, "a:v1/stream/log") == 0
        # Another tenant, and the admin, are not held by a:'s quota.
        bob = bearer("bob", "b:", {"storage": {"entries": 5}})
        assert (
            await c.post("/", json=["XADD", "orders", "*", "n", "1"], headers=bob)
        ).status_code == 200
        assert (
            await c.post("/", json=["XADD", "a:orders", "*", "n", "x"], headers=ADMIN)
        ).status_code == 200
        # Room made (here by the admin's trim) shows at the next measurement.
        await c.post("/", json=["XTRIM", "a:orders", "MAXLEN", "0"], headers=ADMIN)

        async def passes() -> bool:
            r = await c.post("/", json=["XADD", "orders", "*", "n", "7"], headers=alice)
            return r.status_code == 200

        await until_async(passes, 10, "the trim seen by the quota")
        assert await length(c, "a:orders") == 1


async def test_the_settings_quota_holds_prefixed_credentials_without_their_own(
    served: Served,
) -> None:
    async with served(**SETTINGS, storage_quota="bytes=100") as c:
        carol = bearer("carol", "c:")
        small = await c.post("/", json=["XADD", "s", "*", "f", "v" * 10], headers=carol)
        assert small.status_code == 200, small.text
        big = await c.post("/", json=["XADD", "s", "*", "f", "v" * 200], headers=carol)
        assert big.status_code == 507 and "storage quota full: bytes" in big.json()["error"]
        # Her own quota takes the place of the settings'.
        dave = bearer("dave", "d:", {"storage": {"bytes": "10KB"}})
        assert (
            await c.post("/", json=["XADD", "s", "*", "f", "v" * 200], headers=dave)
        ).status_code == 200
        # A credential without a prefix owns no namespace to count: not held.
        erin = bearer("erin", None)
        assert (
            await c.post("/", json=["XADD", "s", "*", "f", "v" * 200], headers=erin)
        ).status_code == 200


async def test_a_quota_without_a_prefix_refuses_the_token(served: Served) -> None:
    async with served(**SETTINGS) as c:
        frank = bearer("frank", None, {"storage": {"entries": 10}})
        assert (await c.post("/", json=["PING"], headers=frank)).status_code == 401
