"""Tenant prefixes on the three targets: two credentials bound to ``a:`` and ``b:`` run the
same calls with the same names on every surface and never meet; the admin sees both; names
come back as the credential sent them; grants are relative; what cannot be mapped is refused
(app/access/prefix.py)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from tests.storage.conftest import pg_schema, pg_url  # noqa: F401 (pg_schema: a fixture)
from tests.support.access import keys
from tests.support.targets import EMBEDDED, TARGET_PARAMS, Frontend, Served, served_on

SECRET = "an application secret of enough length"
ADMIN = {"Authorization": "Bearer admin"}
EVERYTHING = {"read": ["*"], "consume": ["*"], "write": ["*"]}
SETTINGS = {"token": "admin", "jwt_secret": SECRET, "sse_max_lifetime_ms": 300}


def bearer(sub: str, prefix: Any = None, grant: Any = None) -> dict[str, str]:
    claims: dict[str, Any] = {
        "sub": sub,
        "exp": int(time.time()) + 600,
        "xstreams": EVERYTHING if grant is None else grant,
    }
    if prefix is not None:
        claims["xstreams_prefix"] = prefix
    return {"Authorization": f"Bearer {jwt.encode(claims, SECRET, algorithm='HS256')}"}


A, B = bearer("alice", "a:"), bearer("bob", "b:")


@pytest.fixture(params=TARGET_PARAMS)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Served:
    return served_on(request, request.param, tmp_path)


def ok(r: Any) -> Any:
    assert r.status_code < 300, r.text
    return r.json() if r.content else None


async def test_two_tenants_run_the_same_calls_and_never_meet(served: Served) -> None:
    async with served(**SETTINGS) as c:
        for who, n in ((A, "1"), (B, "2")):
            # REST: append, group, consumer read, the stream's info and the listing.
            ok(await c.post("/v1/streams/orders/entries", json={"fields": {"n": n}}, headers=who))
            created = await c.post(
                "/v1/streams/orders/groups", json={"name": "g", "id": "0"}, headers=who
            )
            assert created.status_code == 201, created.text
            assert created.headers["location"] == "/v1/streams/orders/groups/g"
            # The command endpoint: XADD, then the same names everywhere.
            ok(await c.post("/", json=["XADD", "orders", "*", "n", n + n], headers=who))
        for who, n in ((A, "1"), (B, "2")):
            read = ok(await c.get("/v1/streams/orders/entries", headers=who))
            assert [e["fields"] for e in read["entries"]] == [{"n": n}, {"n": n + n}]
            group = ok(
                await c.post("/v1/streams/orders/groups/g/consumers/c/reads", json={}, headers=who)
            )
            assert [e["fields"]["n"] for e in group["entries"]] == [n, n + n]
            info = ok(await c.get("/v1/streams/orders", headers=who))
            assert info["name"] == "orders" and info["length"] == 2
            listed = ok(await c.get("/v1/streams", params={"count": 1000}, headers=who))
            assert [s["name"] for s in listed["streams"]] == ["orders"]
            many = ok(
                await c.get("/v1/read", params={"stream": "orders", "after": "0"}, headers=who)
            )
            assert [s["stream"] for s in many["streams"]] == ["orders"]
            # Commands: names in replies are the tenant's.
            xread = ok(await c.post("/", json=["XREAD", "STREAMS", "orders", "0"], headers=who))
            assert xread["result"][0][0] == "orders" and len(xread["result"][0][1]) == 2
            ok(await c.post("/", json=["XGROUP", "CREATE", "orders", "h", "0"], headers=who))
            xrg = ok(
                await c.post(
                    "/",
                    json=["XREADGROUP", "GROUP", "h", "w", "STREAMS", "orders", ">"],
                    headers=who,
                )
            )
            assert xrg["result"][0][0] == "orders"
            assert [e[1][1] for e in xrg["result"][0][1]] == [n, n + n]
            scan = ok(await c.post("/", json=["SCAN", "0", "COUNT", "1000"], headers=who))
            assert scan["result"][1] == ["orders"]
            info_cmd = ok(await c.post("/", json=["XINFO", "STREAM", "orders"], headers=who))
            assert info_cmd["result"][1] == 2  # length
            piped = ok(
                await c.post(
                    "/pipeline",
                    json=[["XLEN", "orders"], ["XREAD", "STREAMS", "orders", "0"]],
                    headers=who,
                )
            )
            assert piped[0] == {"result": 2} and piped[1]["result"][0][0] == "orders"
            tx = ok(await c.post("/multi-exec", json=[["EXISTS", "orders"]], headers=who))
            assert tx == [{"result": 1}]
        # The admin sees both tenants' streams under their full names.
        scan = ok(await c.post("/", json=["SCAN", "0", "COUNT", "1000"], headers=ADMIN))
        assert {"a:orders", "b:orders"} <= set(scan["result"][1])
        assert ok(await c.post("/", json=["XLEN", "a:orders"], headers=ADMIN))["result"] == 2
        assert ok(await c.post("/", json=["EXISTS", "orders"], headers=ADMIN))["result"] == 0


async def test_scan_patterns_stay_inside_the_prefix(served: Served) -> None:
    async with served(**SETTINGS) as c:
        for key in ("a:x", "b:x", "ab:x", "x", "a:*"):
            ok(await c.post("/", json=["XADD", key, "*", "f", "v"], headers=ADMIN))
        for pattern, seen in (("*", {"x", "*"}), ("?", {"x", "*"}), ("\\*", {"*"}), ("b:*", set())):
            scan = ok(
                await c.post("/", json=["SCAN", "0", "MATCH", pattern, "COUNT", "1000"], headers=A)
            )
            assert set(scan["result"][1]) == seen, pattern
        # Names are opaque: a glob, "../" or the empty name is a key inside the prefix.
        for name in ("*", "../b:x", ""):
            ok(await c.post("/", json=["XADD", name, "*", "f", "v"], headers=A))
        assert ok(await c.post("/", json=["XLEN", "b:x"], headers=ADMIN))["result"] == 1
        for full in ("a:*", "a:../b:x", "a:"):
            assert ok(await c.post("/", json=["EXISTS", full], headers=ADMIN))["result"] == 1


async def test_a_command_that_cannot_be_mapped_is_refused(served: Served) -> None:
    async with served(**SETTINGS) as c:
        for line in (["KEYS", "*"], ["DBSIZE"], ["FLUSHALL"], ["INFO"]):
            r = await c.post("/", json=line, headers=A)
            assert r.status_code >= 400, (line, r.text)
            assert r.json()["error"].startswith(
                "ERR command not allowed for a credential with a key prefix"
            ), line
        piped = ok(await c.post("/pipeline", json=[["DBSIZE"], ["PING"]], headers=A))
        assert piped[0]["error"].startswith("ERR command not allowed") and piped[1] == {
            "result": "PONG"
        }
        tx = await c.post("/multi-exec", json=[["XLEN", "x"], ["KEYS", "*"]], headers=A)
        assert tx.json()["error"].startswith("ERR command not allowed")


async def test_grants_are_relative_to_the_prefix(served: Served) -> None:
    narrow = bearer("carol", "a:", {"read": ["orders*"], "write": ["orders*"]})
    async with served(**SETTINGS) as c:
        ok(await c.post("/", json=["XADD", "orders-eu", "*", "f", "v"], headers=narrow))
        assert ok(await c.post("/", json=["EXISTS", "a:orders-eu"], headers=ADMIN))["result"] == 1
        refused = await c.post("/", json=["XADD", "other", "*", "f", "v"], headers=narrow)
        assert refused.status_code == 403 and refused.json()["error"].startswith("NOPERM")
        rest = await c.get("/v1/streams/other/entries", headers=narrow)
        assert rest.status_code == 403
        me = ok(
            await c.get("/v1/whoami", params={"stream": ["orders-eu", "other"]}, headers=narrow)
        )
        assert me["prefix"] == "a:"
        assert me["grant"]["read"] == ["orders*"]
        assert [(s["name"], s["read"]) for s in me["streams"]] == [
            ("orders-eu", True),
            ("other", False),
        ]
        assert ok(await c.get("/v1/whoami", headers=ADMIN))["prefix"] == ""


async def test_a_prefix_with_admin_or_a_malformed_prefix_refuses_the_token(served: Served) -> None:
    async with served(**SETTINGS) as c:
        for claim, grant in (("a:", {"admin": True}), ("", None), (5, None), (["a:"], None)):
            r = await c.post("/", json=["PING"], headers=bearer("eve", claim, grant))
            assert r.status_code == 401, (claim, r.text)


async def test_event_streams_and_errors_name_streams_as_the_tenant_does(served: Served) -> None:
    async with served(**SETTINGS) as c:
        for who, n in ((A, "1"), (B, "2")):
            ok(await c.post("/", json=["XADD", "orders", "1-0", "n", n], headers=who))
        for who, n in ((A, "1"), (B, "2")):
            tail = await c.get("/v1/streams/orders/events", params={"last_id": "0"}, headers=who)
            assert tail.status_code == 200
            assert f'"n":"{n}"' in tail.text and ":orders" not in tail.text
            multi = await c.get(
                "/v1/events", params={"stream": "orders", "last_id": "0"}, headers=who
            )
            assert '"stream":"orders"' in multi.text and "id: orders=1-0" in multi.text
            missing = await c.get("/v1/streams/nothing", headers=who)
            assert missing.status_code == 404 and ":nothing" not in missing.text
            assert "'nothing'" in missing.json()["detail"]
            nogroup = await c.post(
                "/", json=["XREADGROUP", "GROUP", "zz", "c", "STREAMS", "orders", ">"], headers=who
            )
            assert "'orders'" in nogroup.json()["error"], nogroup.text


async def test_durable_streams_paths_are_prefixed(served: Served) -> None:
    json_type = {"Content-Type": "application/json"}
    async with served(**SETTINGS) as c:
        for who, n in ((A, 1), (B, 2)):
            assert (await c.put("/ds/log", headers={**who, **json_type})).status_code == 201
            posted = await c.post("/ds/log", headers={**who, **json_type}, content=f'[{{"n":{n}}}]')
            assert posted.status_code in (200, 204), posted.text
        for who, n in ((A, 1), (B, 2)):
            got = await c.get("/ds/log", params={"offset": "-1"}, headers=who)
            assert got.status_code == 200 and got.json() == [{"n": n}]
        assert (
            ok(await c.post("/", json=["EXISTS", "a:log", "b:log"], headers=ADMIN))["result"] == 2
        )


async def test_a_retried_request_of_a_tenant_lands_once(served: Served) -> None:
    async with served(**SETTINGS) as c:
        for path, body in (
            ("/v1/streams/orders/entries", {"fields": {"n": "1"}}),
            ("/", ["XADD", "orders", "*", "n", "2"]),
        ):
            key = {**A, "Idempotency-Key": f"k-{path}"}
            first, again = [await c.post(path, json=body, headers=key) for _ in range(2)]
            assert first.status_code == again.status_code and first.status_code < 300, first.text
            assert first.content == again.content
        assert ok(await c.post("/", json=["XLEN", "a:orders"], headers=ADMIN))["result"] == 2


POSTGRES = "postgres"


@pytest.mark.parametrize(
    "on", [pytest.param(POSTGRES, id=POSTGRES, marks=pytest.mark.postgres), *TARGET_PARAMS]
)
async def test_api_keys_made_with_a_prefix_live_apart(
    on: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """``xstreams keys create --prefix``, read by a service on each backend: the embedded
    engine journaling to SQLite or PostgreSQL beside its keys, or a front-end of Redis (or
    Redis Cluster) keeping its keys in SQLite."""
    database = []
    if on == POSTGRES:
        database = ["--database-url", pg_url(request.getfixturevalue("pg_schema"))]
    grant = ("--read", "*", "--write", "*", "--consume", "*")
    texts = []
    for name, prefix in (("tenant-a", "a:"), ("tenant-b", "b:")):
        made = keys(tmp_path, "create", "--name", name, *grant, "--prefix", prefix, *database)
        assert made.returncode == 0, made.stderr
        texts.append(made.stdout.strip())
    a, b = ({"Authorization": f"Bearer {k}"} for k in texts)
    if on in (EMBEDDED, POSTGRES):
        front = Frontend(tmp_path, "--token", "admin", *database)
        try:
            async with httpx.AsyncClient(base_url=front.url, timeout=30) as c:
                await _apart(c, a, b)
        finally:
            front.stop()
        return
    async with served_on(request, on, tmp_path)(token="admin") as c:
        await _apart(c, a, b)


async def _apart(c: httpx.AsyncClient, a: dict[str, str], b: dict[str, str]) -> None:
    for who, n in ((a, "1"), (b, "2")):
        ok(await c.post("/v1/streams/orders/entries", json={"fields": {"n": n}}, headers=who))
    for who, n, prefix in ((a, "1", "a:"), (b, "2", "b:")):
        read = ok(await c.get("/v1/streams/orders/entries", headers=who))
        assert [e["fields"] for e in read["entries"]] == [{"n": n}]
        scan = ok(await c.post("/", json=["SCAN", "0", "COUNT", "1000"], headers=who))
        assert scan["result"][1] == ["orders"]
        assert ok(await c.get("/v1/whoami", headers=who))["prefix"] == prefix
    scan = ok(await c.post("/", json=["SCAN", "0", "COUNT", "1000"], headers=ADMIN))
    assert {"a:orders", "b:orders"} <= set(scan["result"][1])
