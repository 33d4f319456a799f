"""``GET /v1/whoami``: a credential learns its own grant, and what it says about a stream is
what the permission check then decides (the dashboard hides what a key may not do from it)."""

from __future__ import annotations

import time

import httpx
import jwt
import pytest

from app.access import Grant
from tests.access.test_matrix import SECRET, fresh_app, key

# An operation per verb on a stream, and whether it was served (a 403 says it was not).
PROBES = {
    "read": ("GET", "/v1/streams/{s}/entries", None),
    "consume": ("GET", "/v1/streams/{s}/groups/g/pending", None),
    "write": ("POST", "/v1/streams/{s}/entries", {"fields": {"f": "v"}}),
}


async def _get(app: object, credential: str | None, **params: object) -> httpx.Response:
    headers = {"Authorization": f"Bearer {credential}"} if credential else {}
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://xs") as client:
        return await client.get("/v1/whoami", params=params, headers=headers)


@pytest.mark.parametrize(
    "grant",
    [
        Grant.of(read=["orders*"]),
        Grant.of(read=["orders"], consume=["ord?rs"], write=["payments"]),
        Grant.of(consume=["*"], write=["orders", "pay*"]),
        Grant(admin=True),
    ],
    ids=["reader", "mixed", "worker-writer", "admin"],
)
async def test_whoami_says_what_the_check_decides(grant: Grant) -> None:
    app, _ = fresh_app()
    record, text = key(grant, expires_at_ms=4_102_444_800_000)
    app.state.services.access.keys.replace([record])
    r = await _get(app, text, stream=["orders", "payments", "orders"])
    assert r.status_code == 200, r.text
    me = r.json()
    assert me["name"] == record.name and me["kind"] == "key"
    assert me["expires_at_ms"] == 4_102_444_800_000
    assert me["grant"] == grant.to_json()
    assert [s["name"] for s in me["streams"]] == ["orders", "payments"]  # repeats once
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://xs") as client:
        for row in me["streams"]:
            for verb, (method, path, body) in PROBES.items():
                got = await client.request(
                    method,
                    path.format(s=row["name"]),
                    json=body,
                    headers={"Authorization": f"Bearer {text}"},
                )
                served = got.status_code != 403
                assert served == row[verb], (verb, row, got.status_code, got.text)


async def test_a_jwt_the_admin_token_and_an_open_service() -> None:
    app, _ = fresh_app()
    exp = int(time.time()) + 300
    token = jwt.encode(
        {"sub": "alice", "exp": exp, "xstreams": {"read": ["orders"]}}, SECRET, algorithm="HS256"
    )
    me = (await _get(app, token, stream="orders")).json()
    assert me["name"] == "alice" and me["kind"] == "jwt"
    assert me["expires_at_ms"] == exp * 1000
    assert me["streams"] == [{"name": "orders", "read": True, "consume": False, "write": False}]
    assert me["grant"] == {
        "read": ["orders"],
        "consume": [],
        "write": [],
        "admin": False,
        "metrics": False,
    }
    # Nothing configured at all: everyone is the admin, and is told so.
    from app.engine.store import Store
    from app.main import create_app
    from app.settings import Settings

    open_app = create_app(Settings(), store=Store())
    me = (await _get(open_app, None)).json()
    assert me["kind"] == "open" and me["grant"]["admin"] is True and me["streams"] == []


async def test_refusals() -> None:
    app, _ = fresh_app()
    r = await _get(app, None)
    assert r.status_code == 401 and r.json()["error"] == "Unauthorized"
    r = await _get(app, "xs_000000000000_nothing")
    assert r.status_code == 401
    token = jwt.encode(
        {"sub": "a", "exp": int(time.time()) + 60, "xstreams": {}}, SECRET, algorithm="HS256"
    )
    services = app.state.services  # max_read_keys, as the service was configured
    services.settings = services.settings.model_copy(update={"max_read_keys": 2})
    r = await _get(app, token, stream=["a", "b", "c"])
    assert r.status_code == 400, r.text
    assert r.json()["error"].startswith("ERR too many keys: WHOAMI names 3 streams")


def test_documented_in_the_contract() -> None:
    import json
    from pathlib import Path

    doc = json.loads((Path(__file__).parents[2] / "openapi" / "openapi.json").read_text())
    op = doc["paths"]["/v1/whoami"]["get"]
    assert op["operationId"] == "whoami" and op["x-redis-command"] == "ACL WHOAMI"
    assert {"200", "400", "401"} <= set(op["responses"])
