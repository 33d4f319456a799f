"""The pipeline's HTTP client: what it retries, what it does not, and what it says."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from app.pipeline.client import Client, ReplyError, SourceError


def client_with(handler: Callable[[httpx.Request], httpx.Response], **kw: float) -> Client:
    return Client("http://xs", "tok", backoff_s=0.001, transport=httpx.MockTransport(handler), **kw)


def scripted(*replies: httpx.Response | Exception) -> tuple[list[httpx.Request], Callable]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        reply = replies[min(len(seen), len(replies)) - 1]
        if isinstance(reply, Exception):
            raise reply
        return reply

    return seen, handler


@pytest.mark.parametrize("status", [500, 502, 503, 504, 429])
def test_transient_statuses_are_retried(status: int) -> None:
    seen, handler = scripted(httpx.Response(status), httpx.Response(status),
                             httpx.Response(200, json={"result": 3}))  # fmt: skip
    with client_with(handler) as c:
        assert c("XLEN", "s") == 3
    assert len(seen) == 3
    assert seen[0].headers["authorization"] == "Bearer tok"
    assert seen[0].content == b'["XLEN","s"]'


def test_connection_errors_are_retried_then_named() -> None:
    seen, handler = scripted(httpx.ConnectError("refused"))
    with client_with(handler, retries=2) as c, pytest.raises(SourceError) as info:
        c("PING")
    assert len(seen) == 3
    assert "cannot reach http://xs: refused (gave up after 3 attempts)" in str(info.value)


def test_backoff_grows_and_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []
    monkeypatch.setattr("app.pipeline.client.time.sleep", sleeps.append)
    monkeypatch.setattr("app.pipeline.client.random.random", lambda: 1.0)
    _, handler = scripted(httpx.Response(503, text="busy"))
    c = Client("http://xs", retries=5, backoff_s=0.5, max_backoff_s=3,
               transport=httpx.MockTransport(handler))  # fmt: skip
    with pytest.raises(SourceError, match="answered 503: busy"):
        c("PING")
    assert sleeps == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_a_redis_error_is_not_retried() -> None:
    seen, handler = scripted(httpx.Response(400, json={"error": "ERR no such key"}))
    with client_with(handler) as c, pytest.raises(ReplyError, match="XINFO STREAM: ERR no such"):
        c("XINFO", "STREAM", "s")
    assert len(seen) == 1


def test_unauthorized_is_not_retried_and_says_what_to_set() -> None:
    seen, handler = scripted(httpx.Response(401, json={"error": "Unauthorized"}))
    with client_with(handler) as c, pytest.raises(SourceError, match="set the token option"):
        c("PING")
    assert len(seen) == 1


def test_a_body_that_is_not_json_is_named() -> None:
    _, handler = scripted(httpx.Response(200, text="<html>"))
    with client_with(handler) as c, pytest.raises(SourceError, match="not JSON"):
        c("PING")


def test_pipeline_returns_each_result_and_raises_the_first_error() -> None:
    _, handler = scripted(httpx.Response(200, json=[{"result": 1}, {"result": [["1-1", []]]}]))
    with client_with(handler) as c:
        assert c.pipeline([["XLEN", "a"], ["XRANGE", "a", "-", "+"]]) == [1, [["1-1", []]]]
    _, handler = scripted(httpx.Response(200, json=[{"result": 1}, {"error": "WRONGTYPE x"}]))
    with client_with(handler) as c, pytest.raises(ReplyError, match="WRONGTYPE"):
        c.pipeline([["XLEN", "a"], ["XLEN", "b"]])


def test_pages_resume_after_the_last_id_seen() -> None:
    seen, handler = scripted(
        httpx.Response(200, json={"result": [["1-1", ["a", "1"]], ["2-1", ["a", "2"]]]}),
        httpx.Response(200, json={"result": [["3-1", ["a", "3"]]]}),
    )
    with client_with(handler) as c:
        pages = list(c.xrange_pages("s", "-", "9", 2))
    assert [len(p) for p in pages] == [2, 1]
    assert [r.content for r in seen] == [
        b'["XRANGE","s","-","9","COUNT","2"]',
        b'["XRANGE","s","(2-1","9","COUNT","2"]',
    ]
