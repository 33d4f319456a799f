"""Inputs that used to reach a 500 (with a long traceback logged): each now gets a clear
client error, and HEAD / OPTIONS never run a command."""

from __future__ import annotations

import pytest

from app.engine.store import Store
from tests.api.inproc import serve

DEEP = b"[" * 5000 + b"]" * 5000
DEEP_WITH_NUMBER = b"[1," + b"[" * 990 + b"]" * 990 + b"]"
MALFORMED = "ERR failed to parse request body as JSON"


@pytest.mark.parametrize("path", ["/", "/pipeline", "/multi-exec"])
@pytest.mark.parametrize("body", [DEEP, DEEP_WITH_NUMBER, b"[[1," + DEEP + b"]]"])
async def test_deeply_nested_json_is_a_malformed_command(path: str, body: bytes) -> None:
    async with serve() as c:
        r = await c.post(path, content=body)
        assert r.status_code == 400
        assert r.json()["error"].startswith("ERR ")


@pytest.mark.parametrize("path", ["/", "/pipeline"])
async def test_a_body_that_is_not_utf8_is_a_400(path: str) -> None:
    async with serve() as c:
        body = b'["ECHO","\xff"]' if path == "/" else b'[["ECHO","\xff"]]'
        r = await c.post(path, content=body)
        assert (r.status_code, r.json()) == (400, {"error": MALFORMED})


async def test_integers_beyond_64_bits_in_command_arguments() -> None:
    async with serve() as c:
        r = await c.post("/", content=b'["XRANGE","s","-","+","COUNT",99999999999999999999]')
        assert (r.status_code, r.json()) == (
            400,
            {"error": "ERR value is not an integer or out of range"},
        )
        r = await c.post("/", json=["XREAD", "BLOCK", "-1", "STREAMS", "s", "$"])
        assert (r.status_code, r.json()) == (400, {"error": "ERR timeout is negative"})
        r = await c.post("/", json=["XREAD", "BLOCK", str(2**63), "STREAMS", "s", "$"])
        assert r.status_code == 400


@pytest.mark.parametrize(
    "query",
    ["_token=%E2%82%AC", "_token=%FF%FE", "_token=\u20ac", "_token=%00", "_token=a&_token=%E2"],
)
async def test_any_token_bytes_compare_safely(query: str) -> None:
    """A wrong ``?_token=`` is a 401 whatever its bytes (a non-latin-1 one was a 500)."""
    async with serve(token="s\u20accret") as c:
        r = await c.get(f"/ping?{query}")
        assert (r.status_code, r.json()) == (401, {"error": "Unauthorized"})
        r = await c.get(f"/v1/streams?{query}")
        assert r.status_code == 401
        # The right token, percent-encoded as UTF-8, is accepted.
        r = await c.get("/ping?_token=s%E2%82%ACcret")
        assert (r.status_code, r.json()) == (200, {"result": "PONG"})


@pytest.mark.parametrize("method", ["HEAD", "OPTIONS"])
async def test_head_and_options_never_run_a_command(method: str) -> None:
    store = Store()
    async with serve(store) as c:
        r = await c.request(method, "/xadd/orders/*/item/book")
        assert r.status_code == 405
        assert set(r.headers["allow"].split(", ")) == {"GET", "POST", "PUT"}
        if method != "HEAD":
            assert r.json() == {"error": "ERR method not allowed"}
        assert store.keyspace.get("orders") is None


async def test_long_glob_patterns() -> None:
    async with serve() as c:
        await c.post("/", json=["XADD", "a" * 10, "*", "f", "v"])
        for argv in (["KEYS", "*a" * 5000], ["SCAN", "0", "MATCH", "a*" * 5000]):
            r = await c.post("/", json=argv)
            assert r.status_code == 200
        r = await c.get("/v1/streams", params={"match": "*a" * 3000})
        assert (r.status_code, r.json()["streams"]) == (200, [])  # 3000 nested: no match
