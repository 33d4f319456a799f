"""The command endpoint in front of a backend that passes commands on (as the Redis backend
does), in process, with a stand-in that records what reaches it: the surface checks access
and the command table before anything is handed over, narrows SCAN to what the caller may
read, and shapes RESP trees as Upstash does."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
import jwt
import pytest

from app.backends.base import Gone
from app.engine.errors import CommandError
from app.engine.replies import Status
from app.main import create_app
from app.settings import Settings
from tests.support.waiting import until_async

SECRET = "pass-through-secret-of-32-bytes!!"


class Recorder:
    """A pass-through backend: it answers canned RESP trees and remembers every argv."""

    name = "fake"
    stateless = True
    checks_commands = False  # the surface refuses what the table refuses

    def __init__(self) -> None:
        self.seen: list[list[str]] = []
        self.answers: dict[str, Any] = {"PING": Status("PONG")}
        self.down = False

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def webhooks(self, key: str | None = None, group: str | None = None) -> list[Any]:
        """What the service's webhook runner lists at start and on every refresh: none."""
        return []

    async def command(self, argv: Sequence[str], gone: Gone | None = None) -> Any:
        if self.down:
            raise ConnectionError("refused")
        self.seen.append(list(argv))
        answer = self.answers.get(argv[0].upper(), Status("OK"))
        if isinstance(answer, CommandError):
            raise answer
        return answer

    async def pipeline(
        self, commands: Sequence[Sequence[str]], gone: Gone | None = None
    ) -> list[Any]:
        out: list[Any] = []
        for argv in commands:
            try:
                out.append(await self.command(argv))
            except CommandError as e:
                out.append(e)
        return out

    async def multi_exec(self, commands: Sequence[Sequence[str]]) -> list[Any]:
        return await self.pipeline(commands)


def _token(**grant: list[str]) -> str:
    claims = {"sub": "app", "exp": int(time.time()) + 300, "xstreams": grant}
    return jwt.encode(claims, SECRET, algorithm="HS256")


@pytest.fixture
async def served() -> AsyncIterator[tuple[Recorder, httpx.AsyncClient]]:
    backend = Recorder()
    app = create_app(Settings(jwt_secret=SECRET, token="admin"), backend=backend)  # type: ignore[arg-type]
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=transport, base_url="http://xs", headers={"Authorization": "Bearer admin"}
        ) as client,
    ):

        async def ready() -> bool:
            return (await client.get("/readyz")).status_code == 200

        await until_async(ready, 5, "/readyz 200 (the connecting task had its turn)")
        backend.seen.clear()
        yield backend, client


async def test_replies_are_shaped_as_upstash_does(served: tuple[Recorder, Any]) -> None:
    backend, client = served
    backend.answers["XRANGE"] = [["1-0", ["f", "v"]]]
    backend.answers["XLEN"] = 1
    backend.answers["XREAD"] = None
    assert (await client.post("/", json=["XRANGE", "s", "-", "+"])).json() == {
        "result": [["1-0", ["f", "v"]]]
    }
    assert (await client.post("/", json=["XLEN", "s"])).json() == {"result": 1}
    assert (await client.post("/", json=["XREAD", "STREAMS", "s", "0"])).json() == {"result": None}
    r = await client.post(
        "/", json=["XRANGE", "s", "-", "+"], headers={"Upstash-Encoding": "base64"}
    )
    assert r.json() == {"result": [["MS0w", ["Zg==", "dg=="]]]}
    backend.answers["XADD"] = CommandError("ERR The ID specified in XADD must be greater than 0-0")
    r = await client.post("/", json=["XADD", "s", "0-0", "f", "v"])
    assert r.status_code == 400
    assert r.json() == {"error": "ERR The ID specified in XADD must be greater than 0-0"}


async def test_only_the_tables_commands_reach_it(served: tuple[Recorder, Any]) -> None:
    backend, client = served
    for argv in (["SET", "k", "v"], ["EVAL", "return 1", "0"], ["XADD", "s"], []):
        r = await client.post("/", json=argv)
        assert r.status_code == 400 and "error" in r.json(), (argv, r.text)
    r = await client.post("/multi-exec", json=[["XLEN", "s"], ["SET", "k", "v"]])
    assert r.json() == {"error": "EXECABORT Transaction discarded because of previous errors."}
    r = await client.post("/pipeline", json=[["XLEN", "s"], ["SET", "k", "v"], ["XLEN", "t"]])
    body = r.json()
    assert body[0] == {"result": "OK"} and body[2] == {"result": "OK"}
    assert body[1]["error"].startswith("ERR unknown command 'SET'")
    assert backend.seen == [["XLEN", "s"], ["XLEN", "t"]]


async def test_config_set_is_refused_config_get_and_info_pass(served: tuple[Recorder, Any]) -> None:
    backend, client = served
    r = await client.post("/", json=["CONFIG", "SET", "dir", "/tmp"])
    assert r.status_code == 400
    assert r.json()["error"] == (
        "ERR CONFIG SET is not served in front of fake: configure the Redis server itself"
    )
    backend.answers["CONFIG"] = ["maxmemory", "0"]
    assert (await client.post("/", json=["CONFIG", "GET", "maxmemory"])).json() == {
        "result": ["maxmemory", "0"]
    }
    backend.answers["INFO"] = "# Server\r\nredis_version:7.0.15\r\n"
    assert (await client.post("/", json=["INFO"])).json()["result"].startswith("# Server")
    assert backend.seen == [["CONFIG", "GET", "maxmemory"], ["INFO"]]


async def test_access_is_checked_before_anything_runs(served: tuple[Recorder, Any]) -> None:
    backend, client = served
    reader = {"Authorization": f"Bearer {_token(read=['a*'])}"}
    r = await client.post("/", json=["XADD", "a1", "*", "f", "v"], headers=reader)
    assert r.status_code == 403 and r.json()["error"].startswith("NOPERM")
    r = await client.post("/", json=["XRANGE", "b1", "-", "+"], headers=reader)
    assert r.status_code == 403
    assert backend.seen == []
    # SCAN lists only what the caller may read; its cursor walks on.
    backend.answers["SCAN"] = ["17", ["a1", "b1", "a2"]]
    r = await client.post("/", json=["SCAN", "0"], headers=reader)
    assert r.json() == {"result": ["17", ["a1", "a2"]]}
    r = await client.post("/pipeline", json=[["SCAN", "0"], ["XLEN", "b1"]], headers=reader)
    body = r.json()
    assert body[0] == {"result": ["17", ["a1", "a2"]]}
    assert body[1]["error"].startswith("NOPERM")


async def test_readyz_follows_the_backend(served: tuple[Recorder, Any]) -> None:
    backend, client = served
    body = (await client.get("/readyz")).json()
    assert body["status"] == "ready" and body["backend"] == "fake" and "storage" not in body
    backend.down = True
    r = await client.get("/readyz")
    assert r.status_code == 503
    assert r.json()["status"] == "unavailable" and r.json()["reason"] == "refused"
