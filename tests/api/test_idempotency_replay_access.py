"""An Idempotency-Key never shows one caller another's data, on the three targets.

A retry runs the same access check as the first attempt, for the caller who sends it, before
anything is answered; and a key's scope is the credential's identity (an API key's id, a
JWT's issuer and subject, a JWT without a subject: the token itself). The matrix: every
surface that takes the header, each run by a caller that holds the grant, then sent again
under the same key by one that does not and shares what could share a scope (a JWT without
``sub``, one ``sub`` with other grants, one issuer and ``sub``, another API key). The second
caller gets exactly what it gets without the key: its own refusal, never the first answer.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from app.access import Grant, KeyRecord
from tests.access.test_matrix import key as key_record
from tests.support.access import create_key
from tests.support.targets import TARGET_PARAMS, Served, served_on
from tests.support.waiting import until_async

SECRET = "an application secret of enough length"
ADMIN = {"Authorization": "Bearer admin"}
HOLDER = {"read": ["secret-*", "public-*"], "consume": ["secret-*"], "write": ["secret-*"]}
OUTSIDER = {"read": ["public-*"], "consume": ["public-*"], "write": ["public-*"]}
NO_KEY = "NOPERM this user has no permissions to access one of the keys used as arguments"
CARD = "4111111111111111"


@dataclass(frozen=True)
class Call:
    """One request of a surface that takes Idempotency-Key."""

    name: str
    method: str
    path: str
    json: Any = None

    @property
    def shows(self) -> bool:
        """Whether its answer shows the stream's entries (an append answers its ID)."""
        return self.name != "rest append"


CALLS = [
    Call("command", "POST", "/", ["XRANGE", "secret-1", "-", "+"]),
    Call("path style", "POST", "/xrange/secret-1/-/+"),
    Call("pipeline", "POST", "/pipeline", [["XRANGE", "secret-1", "-", "+"], ["XLEN", "public-1"]]),
    Call("multi-exec", "POST", "/multi-exec", [["XRANGE", "secret-1", "-", "+"]]),
    Call("rest append", "POST", "/v1/streams/secret-1/entries", {"fields": {"card": CARD}}),
    Call("rest group read", "POST", "/v1/streams/secret-1/groups/g/consumers/c/reads", {}),
]


def token(grant: dict[str, Any], sub: str | None = None, iss: str | None = None) -> str:
    claims: dict[str, Any] = {"exp": int(time.time()) + 600, "xstreams": grant}
    if sub is not None:
        claims["sub"] = sub
    if iss is not None:
        claims["iss"] = iss
    return jwt.encode(claims, SECRET, algorithm="HS256")


def bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}"}


@pytest.fixture(params=TARGET_PARAMS)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Served:
    return served_on(request, request.param, tmp_path)


@pytest.fixture(params=TARGET_PARAMS[:2])
def served_one_node(request: pytest.FixtureRequest, tmp_path: Path) -> Served:
    """The embedded and Redis targets: SCAN in a cluster's pipeline walks one node."""
    return served_on(request, request.param, tmp_path)


def in_process(client: httpx.AsyncClient) -> Any:
    """The app a client on the embedded target reaches in process (None: a front-end)."""
    return getattr(client._transport, "app", None)


async def api_keys(
    client: httpx.AsyncClient, data: Path, grants: dict[str, dict[str, list[str]]]
) -> dict[str, str]:
    """API keys named as ``grants`` says, each holding its grant: in the app's key ring
    in process, or made with ``xstreams keys create`` for a front-end (which re-reads them)."""
    app = in_process(client)
    texts: dict[str, str] = {}
    if app is not None:
        records = []
        for name, grant in grants.items():
            record, texts[name] = key_record(Grant.from_json(grant))
            records.append(record)
        app.state.services.access.keys.replace(records)
        return texts
    for name, grant in grants.items():
        flags = [f for verb, globs in grant.items() for g in globs for f in (f"--{verb}", g)]
        texts[name] = create_key(data, name, *flags)
    for text in texts.values():
        await until_async(accepted(client, text), what="the front-end knows the new keys")
    return texts


def accepted(client: httpx.AsyncClient, text: str) -> Callable[[], Awaitable[bool]]:
    async def known() -> bool:
        return (await client.get("/v1/whoami", headers=bearer(text))).status_code == 200

    return known


async def prepare(c: httpx.AsyncClient) -> None:
    for argv in (
        ["DEL", "secret-1", "public-1"],
        ["XADD", "secret-1", "*", "card", CARD],
        ["XGROUP", "CREATE", "secret-1", "g", "0"],
        ["XADD", "public-1", "*", "n", "1"],
    ):
        r = await c.post("/", json=argv, headers=ADMIN)
        assert r.status_code == 200, r.text


async def send(
    c: httpx.AsyncClient, call: Call, headers: dict[str, str], key: str | None = None
) -> httpx.Response:
    extra = {"Idempotency-Key": key} if key is not None else {}
    return await c.request(call.method, call.path, json=call.json, headers={**headers, **extra})


async def check_pairs(c: httpx.AsyncClient, pairs: dict[str, tuple[str, str]]) -> None:
    """For each pair (a holder, an outsider that could share its scope), on every surface:
    the outsider sending the holder's request under the holder's key gets what it gets
    without the key; the holder's own retry is still a replay."""
    for pair, (holder, outsider) in pairs.items():
        for call in CALLS:
            await prepare(c)
            where = f"{pair}, {call.name}"
            key = f"rd-{pair}-{call.name}"
            first = await send(c, call, bearer(holder), key)
            assert first.status_code < 300 and (CARD in first.text) is call.shows, where
            own = await send(c, call, bearer(outsider))  # without the key
            assert own.status_code in (200, 403) and CARD not in own.text, (where, own.text)
            other = await send(c, call, bearer(outsider), key)
            assert (other.status_code, other.json()) == (own.status_code, own.json()), where
            assert CARD not in other.text, where
            if call.name != "pipeline":  # (a pipeline's replay answers the refusals now due)
                assert "idempotent-replayed" not in other.headers, where
            length = await c.post("/", json=["XLEN", "secret-1"], headers=ADMIN)
            assert length.json() == {"result": 2 if call.name == "rest append" else 1}, where
            again = await send(c, call, bearer(holder), key)
            assert again.headers.get("idempotent-replayed") == "true", where
            assert (again.status_code, again.content) == (first.status_code, first.content)


async def test_a_replay_is_checked_for_the_caller_who_sends_it(
    served: Served, tmp_path: Path
) -> None:
    async with served(token="admin", jwt_secret=SECRET, keys_refresh_ms=200) as c:
        keys = await api_keys(c, tmp_path, {"holder": HOLDER, "outsider": OUTSIDER})
        await check_pairs(
            c,
            {
                "jwt without sub": (token(HOLDER), token(OUTSIDER)),
                "jwt with one sub": (token(HOLDER, "u"), token(OUTSIDER, "u")),
                "jwt with one issuer and sub": (
                    token(HOLDER, "u", "https://id.example"),
                    token(OUTSIDER, "u", "https://id.example"),
                ),
                "api keys": (keys["holder"], keys["outsider"]),
            },
        )


async def test_the_issue_as_reported(served: Served) -> None:
    """JWT A (no sub, read on secret-*) reads under a key; JWT B (no sub, read on public-*)
    sends the same under the same key: 403, as without it."""
    a, b = token({"read": ["secret-*"]}), token({"read": ["public-*"]})
    async with served(token="admin", jwt_secret=SECRET) as c:
        await prepare(c)
        call = ["XRANGE", "secret-1", "-", "+"]
        first = await c.post("/", json=call, headers={**bearer(a), "Idempotency-Key": "rd-1"})
        assert first.status_code == 200 and CARD in first.text
        plain = await c.post("/", json=call, headers=bearer(b))
        assert plain.status_code == 403
        keyed = await c.post("/", json=call, headers={**bearer(b), "Idempotency-Key": "rd-1"})
        assert keyed.status_code == 403 and keyed.json() == {"error": NO_KEY}
        assert "idempotent-replayed" not in keyed.headers


async def test_scopes_follow_the_credential(served: Served) -> None:
    """A JWT without ``sub`` is its own scope: the same token's retry replays, another token
    runs afresh. A JWT's scope is its issuer and ``sub``: another issuer runs afresh. The
    admin token is one scope."""
    grant = {"write": ["s"], "read": ["s"]}
    other = {**grant, "consume": ["x"]}  # another token, as able to run the request
    cmd = ["XADD", "s", "*", "n", "1"]
    async with served(token="admin", jwt_secret=SECRET) as c:
        await c.post("/", json=["DEL", "s"], headers=ADMIN)
        cases = [
            ("same token", token(grant), None, True),
            ("tokens without sub", token(grant), token(other), False),
            ("issuers", token(grant, "u", "https://a"), token(grant, "u", "https://b"), False),
            ("one issuer", token(grant, "u", "https://a"), token(other, "u", "https://a"), True),
            ("admin token", "admin", "admin", True),
        ]  # fmt: skip
        expected = 0
        for name, first, second, replays in cases:
            key = {"Idempotency-Key": f"scope-{name}"}
            a = await c.post("/", json=cmd, headers={**bearer(first), **key})
            b = await c.post("/", json=cmd, headers={**bearer(second or first), **key})
            assert a.status_code == b.status_code == 200, (name, a.text, b.text)
            assert ("idempotent-replayed" in b.headers) is replays, name
            assert (a.json() == b.json()) is replays, name
            expected += 1 if replays else 2
            length = await c.post("/", json=["XLEN", "s"], headers=ADMIN)
            assert length.json() == {"result": expected}, name


async def test_a_cookie_never_replays_a_write(served: Served) -> None:
    """A credential in the cookie is read for GET under /v1 only: a write carrying the key
    and the cookie alone is 401, whichever credential the cookie holds."""
    async with served(token="admin", jwt_secret=SECRET) as c:
        await prepare(c)
        call = CALLS[0]
        key = {"Idempotency-Key": "cookie-1"}
        first = await send(c, call, ADMIN, "cookie-1")
        assert first.status_code == 200
        for credential in ("admin", token(HOLDER), token(HOLDER, "u")):
            cookie = {"Cookie": f"xstreams_token={credential}", "Sec-Fetch-Site": "same-origin"}
            r = await c.post("/", json=call.json, headers={**cookie, **key})
            assert r.status_code == 401 and CARD not in r.text


async def test_a_narrowed_or_revoked_key_is_checked_again() -> None:
    """A key narrowed between two attempts meets the check anew (403, not the kept answer,
    and not 422 for another request under the key); widened again, it replays; revoked,
    it is 401."""
    from app.engine.store import Store
    from tests.api.inproc import serve

    wide, text = key_record(Grant.from_json(HOLDER))
    narrow = KeyRecord(**{**_fields(wide), "grant": Grant.from_json(OUTSIDER)})
    async with serve(Store(), token="admin") as c:
        ring = in_process(c).state.services.access.keys
        ring.replace([wide])
        await prepare(c)
        for call in CALLS:
            key = f"narrow-{call.name}"
            ring.replace([wide])
            first = await send(c, call, bearer(text), key)
            assert first.status_code < 300 and (CARD in first.text) is call.shows, call.name
            ring.replace([narrow])
            own = await send(c, call, bearer(text))
            again = await send(c, call, bearer(text), key)
            assert (again.status_code, again.json()) == (own.status_code, own.json()), call.name
            assert CARD not in again.text, call.name
            if call.method == "POST" and call.path == "/":
                other = await c.post(
                    "/", json=["XLEN", "secret-1"], headers={**bearer(text), "Idempotency-Key": key}
                )
                assert other.status_code == 403, other.text  # the check first, then the 422
            ring.replace([wide])
            back = await send(c, call, bearer(text), key)
            assert back.headers.get("idempotent-replayed") == "true", call.name
            assert back.content == first.content, call.name
            ring.replace([KeyRecord(**{**_fields(wide), "revoked_at_ms": 1})])
            gone = await send(c, call, bearer(text), key)
            assert gone.status_code == 401, call.name


def _fields(record: KeyRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in KeyRecord.__dataclass_fields__}


async def test_every_write_operation_replays_only_after_its_check() -> None:
    """Every operation of the permission matrix that takes the header (the command endpoint
    and each REST write): under one ``sub``, the token holding the grant runs it and its
    retry replays, changing nothing; a token of the same ``sub`` holding nothing on the
    stream gets its own refusal, never the kept response."""
    from tests.access import test_matrix as matrix

    def minted(grant: dict[str, Any]) -> dict[str, str]:
        claims = {"sub": "u", "exp": int(time.time()) + 300, "xstreams": grant}
        return bearer(jwt.encode(claims, matrix.SECRET, algorithm="HS256"))

    holder, outsider = minted({"admin": True}), minted({"read": ["elsewhere"]})
    writes = [op for op in matrix.OPS if op.method in ("POST", "PUT", "PATCH", "DELETE")]
    assert {op.surface for op in writes} == {"commands", "rest"}
    for op in writes:
        app, store = matrix.fresh_app()
        await matrix.prepare(app, store)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://xs") as c:
            key = {"Idempotency-Key": f"every-{op.name}"}
            first = await matrix_call(c, op, {**holder, **key})
            assert "idempotent-replayed" not in first.headers, op.name
            before = matrix.snapshot(store)
            own = await matrix_call(c, op, outsider)
            other = await matrix_call(c, op, {**outsider, **key})
            # (SCAN lists what the caller may read: nothing, here, for the outsider)
            assert own.status_code == 403 or op.verb == "list", (op.name, own.text)
            assert (other.status_code, other.content) == (own.status_code, own.content), op.name
            again = await matrix_call(c, op, {**holder, **key})
            assert again.headers.get("idempotent-replayed") == "true", (op.name, again.text)
            assert (again.status_code, again.content) == (first.status_code, first.content)
            assert matrix.snapshot(store) == before, f"{op.name}: a replay changed the state"


async def matrix_call(c: httpx.AsyncClient, op: Any, headers: dict[str, str]) -> httpx.Response:
    return await c.request(op.method, op.path, json=op.json, params=op.params, headers=headers)


async def test_a_retried_scan_lists_for_the_caller_who_sends_it(
    served_one_node: Served,
) -> None:
    """SCAN lists what its caller may read: a retry under the key by a token of the same
    ``sub`` and a narrower grant lists its own streams, alone, in a pipeline or a
    transaction, while the rest of the kept answer stands."""
    holder, outsider = token(HOLDER, "u"), token(OUTSIDER, "u")
    scan = ["SCAN", "0", "COUNT", "1000"]
    async with served_one_node(token="admin", jwt_secret=SECRET) as c:
        await prepare(c)
        for path, body in (
            ("/", scan),
            ("/pipeline", [scan, ["XLEN", "public-1"]]),
            ("/multi-exec", [scan, ["XLEN", "public-1"]]),
        ):
            key = {"Idempotency-Key": f"scan-{path}"}
            first = await c.post(path, json=body, headers={**bearer(holder), **key})
            assert "secret-1" in first.text, first.text
            own = await c.post(path, json=body, headers=bearer(outsider))
            other = await c.post(path, json=body, headers={**bearer(outsider), **key})
            assert "secret-1" not in other.text and "public-1" in other.text, other.text
            assert other.json() == own.json(), path
            again = await c.post(path, json=body, headers={**bearer(holder), **key})
            assert again.json() == first.json(), path
