"""Errors: RFC 9457 problem details on /v1 (one status table), {"error"} on the command
endpoint, and never a 500 for a client's mistake."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from app.access import NoPerm
from app.api.errors import status_of
from app.backends.errors import classify_reply
from tests.api.rest.conftest import problem
from tests.conftest import Server


def test_problem_members(api: httpx.Client) -> None:
    p = problem(api.get("/v1/streams/s/groups/g"), 404, "NOGROUP")
    assert p == {
        "type": "about:blank",
        "title": "Not Found",
        "status": 404,
        "detail": "group 'g' does not exist on stream 's'",
        "instance": "/v1/streams/s/groups/g",
        "code": "NOGROUP",
        "error": "NOGROUP No such key 's' or consumer group 'g'",
        "stream": "s",
        "group": "g",
    }


def test_unknown_v1_paths_are_404_problems_not_commands(api: httpx.Client) -> None:
    for path in ("/v1", "/v1/nothing", "/v1/streams/s/nothing", "/v1/streams/s/entries/1-0/x"):
        problem(api.get(path), 404)
        problem(api.post(path), 404)


def test_wrong_method_is_405_with_allow(api: httpx.Client) -> None:
    r = api.put("/v1/streams")
    problem(r, 405)
    assert r.headers["allow"] == "GET"
    r = api.post("/v1/streams/s")
    problem(r, 405)
    assert r.headers["allow"] == "DELETE, GET"


def test_validation_of_query_and_path_is_400_of_body_422(api: httpx.Client) -> None:
    p = problem(api.get("/v1/streams", params={"count": "many"}), 400)
    assert p["errors"][0]["loc"] == ["query", "count"]
    p = problem(api.post("/v1/streams/s/entries", json={"fields": "x"}), 422)
    assert p["errors"][0]["loc"][0] == "body"


def test_the_command_endpoint_keeps_its_error_shape(api: httpx.Client) -> None:
    r = api.post("/", json=["XADD", "s", "x", "a", "1"])
    assert r.status_code == 400
    assert r.headers["content-type"] == "application/json"
    assert r.json() == {"error": "ERR Invalid stream ID specified as stream command argument"}
    r = api.get("/nothing")
    assert r.json()["error"].startswith("ERR unknown command 'nothing'")


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Server:
    srv = Server(Path(tmp_path_factory.mktemp("small")), env={"XSTREAMS_MAX_BODY_BYTES": "200"})
    yield srv  # type: ignore[misc]
    srv.stop()


@pytest.mark.parametrize(
    "path",
    [
        "/v1/streams/s/entries",
        "/v1/streams/s/groups",
        "/v1/streams/s/trim",
        "/v1/streams/s/groups/g/acks",
    ],
)
def test_oversized_bodies_are_413(small: Server, path: str) -> None:
    body = {"fields": {"a": "x" * 500}}
    p = problem(httpx.post(small.url + path, json=body), 413)
    assert p["error"] == "ERR request body larger than 200 bytes"
    chunks = (b"x" * 100 for _ in range(5))  # no Content-Length: counted while read
    p = problem(httpx.post(small.url + path, content=chunks), 413)
    assert httpx.post(small.url + "/", content=b"x" * 500).json() == {
        "error": "ERR request body larger than 200 bytes"
    }


@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe", b'{"fields": {"a": "\\ud800"}}', b"[" * 5000, b"null", b"1e999"],
)
def test_hostile_bodies_are_client_errors(api: httpx.Client, content: bytes) -> None:
    r = api.post(
        "/v1/streams/s/entries", content=content, headers={"content-type": "application/json"}
    )
    assert 400 <= r.status_code < 500, r.text
    assert r.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize(
    ("method", "path", "kw"),
    [
        ("GET", "/v1/streams/s/entries", {"params": {"count": 2**70}}),
        ("GET", "/v1/streams/s/entries", {"params": {"after": "0", "block_ms": 2**63}}),
        ("GET", "/v1/streams/s/entries", {"params": {"start": "x" * 200}}),
        ("GET", "/v1/streams/s/entries/" + "9" * 30, {}),
        ("GET", "/v1/streams", {"params": {"cursor": 2**64}}),
        ("GET", "/v1/streams", {"params": {"match": "[" * 100}}),
        ("POST", "/v1/streams/s/entries", {"json": {"id": "1-1", "fields": {"a": "1"},
                                                    "trim": {"maxlen": 2**64}}}),
        ("POST", "/v1/streams/s/groups/g/claims",
         {"json": {"consumer": "c", "min_idle_ms": 2**64, "ids": ["1-0"]}}),
        ("POST", "/v1/streams/s/groups/g/autoclaims",
         {"json": {"consumer": "c", "min_idle_ms": 0, "count": 2**62}}),
        ("PUT", "/v1/streams/s/last-id", {"json": {"last_id": "1-0", "entries_added": 2**64}}),
    ],
)  # fmt: skip
def test_extreme_arguments_never_500(
    api: httpx.Client, method: str, path: str, kw: dict[str, object]
) -> None:
    api.post("/v1/streams/s/groups", json={"name": "g", "id": "0", "mkstream": True})
    r = api.request(method, path, **kw)  # type: ignore[arg-type]
    assert r.status_code < 500, r.text


def test_without_the_token_v1_answers_a_401_problem(tmp_path: Path) -> None:
    srv = Server(tmp_path, "--token", "secret")
    try:
        p = problem(httpx.get(srv.url + "/v1/streams"), 401, "Unauthorized")
        assert p["title"] == "Unauthorized"
        r = httpx.get(srv.url + "/v1/streams", headers={"Authorization": "Bearer secret"})
        assert r.status_code == 200
        assert httpx.post(srv.url + "/", json=["PING"]).json() == {"error": "Unauthorized"}
    finally:
        srv.stop()


@pytest.mark.parametrize(
    ("method", "path", "params", "body"),
    [
        ("GET", "/v1/streams/nope/entries", {"start": "x"}, None),
        ("GET", "/v1/streams/nope/entries/x", {}, None),
        ("DELETE", "/v1/streams/nope/entries/x", {}, None),
        ("DELETE", "/v1/streams/nope/entries", {"id": "x"}, None),
        ("POST", "/v1/streams/nope/trim", {}, {"maxlen": -1}),
    ],
)
def test_a_missing_stream_is_a_404_before_a_bad_argument(
    api: httpx.Client, method: str, path: str, params: dict[str, str], body: object
) -> None:
    """The path is looked at before the query and body: a missing stream answers 404 even
    when the request's arguments would be refused too."""
    r = api.request(method, path, params=params, json=body)
    assert problem(r, 404)["error"] == "ERR no such key"


STATUS_BY_TEXT = [
    ("ERR no such key", 404),
    ("NOGROUP No such key 's' or consumer group 'g'", 404),
    ("UNBLOCKED the stream key no longer exists", 404),
    ("BUSYGROUP Consumer Group name already exists", 409),
    ("ERR The ID specified in XADD is equal or smaller than the target stream top item", 409),
    ("ERR The ID specified in XSETID is smaller than the target stream top item", 409),
    ("ERR The stream has exhausted the last possible ID, unable to add more items", 409),
    ("ERR syntax error", 400),
    ("ERR Invalid stream ID specified as stream command argument", 400),
    ("WRONGTYPE Operation against a key holding the wrong kind of value", 400),
    ("ERR Elements are too large to be stored", 400),
    ("LOADING Redis is loading the dataset in memory", 503),
    ("CLUSTERDOWN Hash slot not served", 503),
    ("READONLY You can't write against a read only replica.", 503),
]


@pytest.mark.parametrize(("text", "status"), STATUS_BY_TEXT)
def test_one_status_table_for_both_backends(text: str, status: int) -> None:
    """A Redis backend's error (``classify_reply`` of redis-server's text) gets the status
    the embedded engine's error of that text gets: the table reads the class only. A
    passing state of Redis's (LOADING, CLUSTERDOWN...) is the backend's trouble: 503."""
    assert status_of(classify_reply(text)) == status


def test_noperm_is_403() -> None:
    assert status_of(NoPerm.command("xadd")) == 403
