"""Bearer-token authentication, as in Upstash's REST API ("Security and Authentication").

Upstash accepts the token either as ``Authorization: Bearer $TOKEN`` or as the ``_token`` query
parameter, on every endpoint; a missing or wrong token is 401. The server here is started with
``--token secret``; a rejected request must also have changed nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.api.support import error_text, json_body, result_of
from tests.conftest import Commands, Server
from tests.support.targets import Target

TOKEN = "secret"
UNAUTHORIZED = {"error": "Unauthorized"}


@pytest.fixture(scope="module")
def auth_server(target: Target, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server of its own that demands the token ``secret``."""
    srv = target.serve(tmp_path_factory.mktemp("auth-data"), "--token", TOKEN)
    yield srv
    srv.stop()


@pytest.fixture
def admin(auth_server: Server) -> Iterator[Commands]:
    """A correctly authenticated sender, flushed per test, to set up and inspect state."""
    c = Commands(auth_server.url, token=TOKEN)
    assert c("FLUSHALL") == "OK"
    yield c
    c.client.close()


@pytest.fixture
def anon(auth_server: Server, admin: Commands) -> Iterator[httpx.Client]:
    """A client that sends no credentials unless a test adds them."""
    with httpx.Client(base_url=auth_server.url, timeout=10) as client:
        yield client


@dataclass(frozen=True)
class Call:
    """One request shape; ``expected`` is what a successful reply body must be."""

    method: str
    path: str
    body: Any
    expected: Any


# Every call adds entry 1-1 to "s" when it runs, so a refused call is visible (XLEN stays 0).
CALLS = [
    Call("POST", "/", ["XADD", "s", "1-1", "f", "v"], {"result": "1-1"}),
    Call("POST", "/pipeline", [["XADD", "s", "1-1", "f", "v"]], [{"result": "1-1"}]),
    Call("POST", "/multi-exec", [["XADD", "s", "1-1", "f", "v"]], [{"result": "1-1"}]),
    Call("GET", "/xadd/s/1-1/f/v", None, {"result": "1-1"}),
    Call("POST", "/xadd/s/1-1/f", "v", {"result": "1-1"}),
]
IDS = ["root", "pipeline", "multi-exec", "path-get", "path-post"]


def send(
    client: httpx.Client,
    call: Call,
    headers: dict[str, str] | None = None,
    params: dict[str, str] | None = None,
) -> httpx.Response:
    """Send ``call`` with optional extra headers and query parameters."""
    kwargs: dict[str, Any] = {"headers": headers or {}, "params": params or {}}
    if isinstance(call.body, str):
        kwargs["content"] = call.body.encode()
    elif call.body is not None:
        kwargs["json"] = call.body
    return client.request(call.method, call.path, **kwargs)


def assert_unauthorized(resp: httpx.Response) -> None:
    """401 with exactly ``{"error": "Unauthorized"}``."""
    assert resp.status_code == 401, (resp.status_code, resp.text[:200])
    assert json_body(resp) == UNAUTHORIZED


@pytest.mark.parametrize("call", CALLS, ids=IDS)
def test_no_credentials_is_401(anon: httpx.Client, admin: Commands, call: Call) -> None:
    """Without a token nothing runs and the reply is 401 ``{"error": "Unauthorized"}``."""
    assert_unauthorized(send(anon, call))
    assert admin("XLEN", "s") == 0


@pytest.mark.parametrize("call", CALLS, ids=IDS)
def test_bearer_header_works(anon: httpx.Client, admin: Commands, call: Call) -> None:
    """``Authorization: Bearer secret`` is accepted everywhere."""
    r = send(anon, call, headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200, r.text
    assert json_body(r) == call.expected
    assert admin("XLEN", "s") == 1


@pytest.mark.parametrize("call", CALLS, ids=IDS)
def test_token_query_param_works(anon: httpx.Client, admin: Commands, call: Call) -> None:
    """``?_token=secret`` is accepted everywhere, and is not passed on as an argument."""
    r = send(anon, call, params={"_token": TOKEN})
    assert r.status_code == 200, r.text
    assert json_body(r) == call.expected
    assert admin("XRANGE", "s", "-", "+") == [["1-1", ["f", "v"]]]


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer wrong",
        "Bearer secretx",
        "Bearer secre",
        "Bearer SECRET",
        "Bearer",
        "Basic c2VjcmV0",
        "secret",
        "Bearer  secret x",
    ],
)
@pytest.mark.parametrize("call", CALLS, ids=IDS)
def test_wrong_bearer_is_401(
    anon: httpx.Client, admin: Commands, call: Call, authorization: str
) -> None:
    """A wrong token (also a prefix/extension of the right one, or another scheme) is refused."""
    assert_unauthorized(send(anon, call, headers={"Authorization": authorization}))
    assert admin("XLEN", "s") == 0


@pytest.mark.parametrize("token", ["wrong", "secretx", "", "SECRET"])
@pytest.mark.parametrize("call", CALLS, ids=IDS)
def test_wrong_token_param_is_401(
    anon: httpx.Client, admin: Commands, call: Call, token: str
) -> None:
    """A wrong ``_token`` is refused."""
    assert_unauthorized(send(anon, call, params={"_token": token}))
    assert admin("XLEN", "s") == 0


def test_auth_comes_before_parsing(anon: httpx.Client) -> None:
    """An unauthenticated caller learns nothing about the body: bad JSON is still 401, not 400."""
    assert_unauthorized(anon.post("/", content=b"not json"))
    assert_unauthorized(anon.post("/pipeline", content=b"{"))
    assert_unauthorized(anon.post("/", json=["NOSUCHCMD"]))


def test_unauthenticated_blocking_read_answers_at_once(anon: httpx.Client) -> None:
    """A refused XREAD BLOCK must be refused up front, not after blocking."""
    r = anon.post("/", json=["XREAD", "BLOCK", "0", "STREAMS", "s", "$"], timeout=3)
    assert_unauthorized(r)


def test_error_replies_with_token_are_still_400(anon: httpx.Client) -> None:
    """Authenticated Redis errors are the usual 400 error objects (auth didn't swallow them)."""
    r = anon.post("/", json=["XADD", "s"], headers={"Authorization": f"Bearer {TOKEN}"})
    assert error_text(r) == "ERR wrong number of arguments for 'xadd' command"


def test_healthz_needs_no_token(auth_server: Server) -> None:
    """Health probes carry no credentials (``Server`` itself polls /healthz without a token)."""
    assert httpx.get(auth_server.url + "/healthz", timeout=5).status_code == 200


def test_open_server_ignores_credentials(server: Server, xs: Commands) -> None:
    """Without ``--token`` the service is open; a stray token or header changes nothing."""
    with httpx.Client(base_url=server.url, timeout=10) as c:
        r = c.post("/", json=["XLEN", "s"], headers={"Authorization": "Bearer anything"})
        assert result_of(r) == 0
        assert result_of(c.post("/", json=["XLEN", "s"])) == 0
