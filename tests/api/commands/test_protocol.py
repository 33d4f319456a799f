"""The Upstash REST protocol as xstreams must speak it.

Source of the protocol: https://upstash.com/docs/redis/features/restapi (sections "API Semantics",
"JSON or Binary Value", "POST Command in Body", "HTTP Codes", "Response", "Base64 Encoded
Responses", "Pipelining", "Transactions"). Clients (the Upstash SDKs) only ever look at the
``result``/``error`` keys, so every reply, good or bad, must be one of those JSON shapes.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.api.support import (
    NOT_AN_INTEGER,
    WRONG_ARITY_XADD,
    XADD_ID_TOO_SMALL,
    XADD_ID_ZERO,
    RespError,
    b64,
    b64_reply,
    error_text,
    json_body,
    redis_exact,
    result_of,
)
from tests.conftest import REDIS_DB, REDIS_HOST, REDIS_PORT, Commands, Server

B64 = {"Upstash-Encoding": "base64"}
# A key of this module's own for commands also sent to the shared redis-server (db 9 is shared by
# every suite that runs there, so plain names like "s" can collide with another run's data).
KEY = f"api-protocol-{uuid.uuid4().hex}"


def entries(xs: Commands, key: str = "s") -> Any:
    """The whole stream, to check that a rejected request changed nothing."""
    return xs("XRANGE", key, "-", "+")


# --------------------------------------------------------------------------- POST / (JSON array)


def test_post_root_returns_result_object(http: httpx.Client) -> None:
    """The basic call: a JSON array is one command, the reply is ``{"result": ...}`` with 200."""
    r = http.post("/", json=["XADD", "s", "1-1", "f", "v"])
    assert result_of(r) == "1-1"
    assert result_of(http.post("/", json=["XRANGE", "s", "-", "+"])) == [["1-1", ["f", "v"]]]
    assert result_of(http.post("/", json=["XLEN", "s"])) == 1


def test_null_result_is_json_null(http: httpx.Client) -> None:
    """A nil reply is ``{"result": null}``, not an omitted key or an empty body."""
    r = http.post("/", json=["XREAD", "STREAMS", "nosuch", "0"])
    assert result_of(r) is None


def test_redis_error_is_400_error_object(http: httpx.Client) -> None:
    """A Redis error reply is ``{"error": "<Redis's text>"}`` with HTTP 400 (docs: HTTP Codes)."""
    assert error_text(http.post("/", json=["XADD", "s", "0-0", "f", "v"])) == XADD_ID_ZERO
    assert result_of(http.post("/", json=["XADD", "s", "1-1", "f", "v"])) == "1-1"
    assert error_text(http.post("/", json=["XADD", "s", "1-1", "f", "v"])) == XADD_ID_TOO_SMALL


@pytest.mark.parametrize(
    "ctype", [None, "application/x-www-form-urlencoded", "text/plain", "application/json"]
)
def test_body_is_json_whatever_the_content_type(http: httpx.Client, ctype: str | None) -> None:
    """``curl -d '[...]'`` (the docs' own example) sends a form content type: the body still counts.

    The Upstash docs never ask for ``Content-Type: application/json``.
    """
    headers = {"Content-Type": ctype} if ctype else {}
    r = http.post("/", content=b'["XADD","s","1-1","f","v"]', headers=headers)
    assert result_of(r) == "1-1"


def test_wrong_arity_is_redis_text(http: httpx.Client, xs: Commands) -> None:
    """Arity errors carry Redis's exact text (lower-case command name whatever the input case)."""
    assert error_text(http.post("/", json=["XADD", "s"])) == WRONG_ARITY_XADD
    assert error_text(http.post("/", json=["xAdd", "s", "1-1"])) == WRONG_ARITY_XADD
    assert error_text(http.post("/", json=["XADD", "s", "1-1", "f"])) == WRONG_ARITY_XADD
    assert xs("XLEN", "s") == 0


GROUP_SETUP = [["XGROUP", "CREATE", KEY, "g", "$", "MKSTREAM"]]


@pytest.mark.redis
@pytest.mark.parametrize(
    ("setup", "command"),
    [
        ([], ["XADD", KEY]),
        ([], ["NOSUCHCMD", "bar", "baz"]),
        ([], ["nosuchcmd"]),
        ([], ["XRANGE", KEY, "-", "+", "COUNT", "99999999999999999999"]),
        ([], ["XREAD", "STREAMS", KEY]),
        ([], ["XREAD", "STREAMS", KEY, "+"]),
        ([], ["XREAD", "BLOCK", "-1", "STREAMS", KEY, "$"]),
        ([], ["XREAD", "BLOCK", "abc", "STREAMS", KEY, "$"]),
        ([], ["XREADGROUP", "GROUP", "g", "c", "BLOCK", "100", "STREAMS", KEY, ">"]),
        ([], ["XGROUP", "CREATE", KEY, "g", "$"]),
        ([], ["XADD", KEY, "0-0", "f", "v"]),
        (GROUP_SETUP, ["XAUTOCLAIM", KEY, "g", "c", "0", "0", "COUNT", "9223372036854775807"]),
        (GROUP_SETUP, ["XREADGROUP", "GROUP", "g", "c", "STREAMS", KEY, "0", "extra"]),
        (GROUP_SETUP, ["XGROUP", "NOSUCHSUB", KEY]),
        (GROUP_SETUP, ["XINFO", "NOSUCHSUB", KEY]),
        (GROUP_SETUP, ["XINFO", "CONSUMERS", KEY, "nosuchgroup"]),
        (GROUP_SETUP, ["XREADGROUP", "GROUP", "g", "c", "STREAMS", KEY, "$"]),
    ],
)
def test_error_texts_match_redis(
    http: httpx.Client, real_redis: Any, setup: list[list[str]], command: list[str]
) -> None:
    """Error texts (unknown command, arity, integers, timeouts, ...) are Redis 7.0's, letter for
    letter, as read off redis-server's own socket."""
    *_, expected, _ = redis_exact(REDIS_HOST, REDIS_PORT, REDIS_DB, *setup, command, ["DEL", KEY])
    assert isinstance(expected, RespError), expected
    for row in setup:
        result_of(http.post("/", json=row))
    assert error_text(http.post("/", json=command)) == str(expected)


def test_unknown_command_text(http: httpx.Client) -> None:
    """Redis 7.0's unknown-command text, args quoted and space-terminated, name as sent."""
    r = http.post("/", json=["NOSUCHCMD", "bar", "baz"])
    assert (
        error_text(r) == "ERR unknown command 'NOSUCHCMD', with args beginning with: 'bar' 'baz' "
    )
    r = http.post("/", json=["nosuchcmd"])
    assert error_text(r) == "ERR unknown command 'nosuchcmd', with args beginning with: "


def test_json_numbers_count_as_their_text(http: httpx.Client, xs: Commands) -> None:
    """The SDKs send numbers as JSON numbers (docs: ``["SETEX", "key2", 13, "valuez"]``)."""
    r = http.post("/", json=["XADD", "s", "*", "n", 1.5])
    assert isinstance(result_of(r), str)
    assert result_of(http.post("/", json=["XADD", "s", "*", "n", 7])) is not None
    assert result_of(http.post("/", json=["XADD", "s", "*", "n", -3])) is not None
    assert [e[1] for e in entries(xs)] == [["n", "1.5"], ["n", "7"], ["n", "-3"]]
    got = result_of(http.post("/", json=["XRANGE", "s", "-", "+", "COUNT", 2]))
    assert [e[1] for e in got] == [["n", "1.5"], ["n", "7"]]
    assert result_of(http.post("/", json=["XADD", "t", 5, "n", 1])) == "5-0"


@pytest.mark.parametrize("literal", ["1.50", "1e3", "-0", "123456789012345678901234567890", "0.1"])
def test_json_number_literal_text_is_kept(http: httpx.Client, xs: Commands, literal: str) -> None:
    """A number's *literal* text is the argument: no float round trip (1e3 ↛ 1000.0, 1.50 ↛ 1.5)."""
    body = f'["XADD","s","1-1","n",{literal}]'.encode()
    assert result_of(http.post("/", content=body)) == "1-1"
    assert entries(xs) == [["1-1", ["n", literal]]]


def test_json_string_escapes_are_decoded(http: httpx.Client, xs: Commands) -> None:
    """JSON escapes (\\uXXXX, surrogate pairs, \\n, \\/) decode to the characters they stand for."""
    body = b'["XADD","s","1-1","k\\/\\n","\\u00e9\\ud83d\\ude00\\t\\""]'
    assert result_of(http.post("/", content=body)) == "1-1"
    assert entries(xs) == [["1-1", ["k/\n", '\u00e9\U0001f600\t"']]]


def test_numbers_in_pipeline_rows(http: httpx.Client, xs: Commands) -> None:
    """Numbers count as text inside /pipeline and /multi-exec rows too."""
    r = http.post(
        "/pipeline", content=b'[["XADD","s","1-1","n",2.5],["XRANGE","s","-","+","COUNT",1]]'
    )
    assert json_body(r) == [{"result": "1-1"}, {"result": [["1-1", ["n", "2.5"]]]}]
    r = http.post("/multi-exec", content=b'[["XADD","s","2-1","n",10],["XLEN","s"]]')
    assert json_body(r) == [{"result": "2-1"}, {"result": 2}]


@pytest.mark.parametrize(
    "body",
    [
        b'["XADD","s","1-1","done",true,"failed",false]',
        # With a number too: the stdlib parser that keeps numbers' text maps booleans the same.
        b'["XADD","s","1-1","done",true,"failed",false,"n",1.50]',
    ],
)
def test_json_booleans_count_as_their_text(http: httpx.Client, xs: Commands, body: bytes) -> None:
    """``xadd(key, "*", {done: true})`` in @upstash/redis sends JSON ``true``: it is stored as
    ``"true"`` (``false`` as ``"false"``), as the SDKs' users expect; null stays refused."""
    assert result_of(http.post("/", content=body)) == "1-1"
    fields = ["done", "true", "failed", "false"] + (["n", "1.50"] if b"1.50" in body else [])
    assert entries(xs) == [["1-1", fields]]
    assert "JSON string, number or boolean, got null" in error_text(
        http.post("/", content=b'["XADD","s","2-1","done",null]')
    )
    assert entries(xs) == [["1-1", fields]]


def test_booleans_in_pipeline_rows(http: httpx.Client, xs: Commands) -> None:
    """Booleans count as text inside /pipeline and /multi-exec rows too; a boolean where a
    command name goes is an unknown command, as the text ``true`` would be."""
    r = http.post("/pipeline", content=b'[["XADD","s","1-1","ok",true],[false]]')
    assert json_body(r) == [
        {"result": "1-1"},
        {"error": "ERR unknown command 'false', with args beginning with: "},
    ]
    r = http.post("/multi-exec", content=b'[["XADD","s","2-1","ok",false,"n",3],["XLEN","s"]]')
    assert json_body(r) == [{"result": "2-1"}, {"result": 2}]
    assert entries(xs) == [["1-1", ["ok", "true"]], ["2-1", ["ok", "false", "n", "3"]]]


def test_upstash_sdk_headers_are_accepted(http: httpx.Client) -> None:
    """The SDKs send an empty sync token and telemetry headers; none of them may break a call."""
    headers = {
        "Upstash-Sync-Token": "",
        "Upstash-Telemetry-Sdk": "upstash-redis@v1.34.0",
        "Upstash-Telemetry-Platform": "unknown",
        "Upstash-Telemetry-Runtime": "node@v20",
        "Upstash-Telemetry-Retry": "1",
    }
    assert result_of(http.post("/", json=["XADD", "s", "1-1", "f", "v"], headers=headers)) == "1-1"
    r = http.post("/pipeline", json=[["XLEN", "s"]], headers=headers)
    assert json_body(r) == [{"result": 1}]
    r = http.post("/multi-exec", json=[["XLEN", "s"]], headers=headers)
    assert json_body(r) == [{"result": 1}]
    assert result_of(http.get("/xlen/s", headers=headers)) == 1


def test_healthz(server: Server) -> None:
    """Liveness probe (conftest's ``Server`` waits on it)."""
    r = httpx.get(server.url + "/healthz", timeout=5)
    assert r.status_code == 200


# --------------------------------------------------------------------------- path style


def test_path_style_get(http: httpx.Client, xs: Commands) -> None:
    """``REST_URL/COMMAND/arg1/.../argN`` (docs: API Semantics), command name in any case."""
    assert result_of(http.get("/xadd/s/1-1/f/v")) == "1-1"
    assert result_of(http.get("/XADD/s/2-1/f/w")) == "2-1"
    # '+' in a path is a literal plus (only query strings use '+' for space).
    assert result_of(http.get("/xrange/s/-/+")) == [["1-1", ["f", "v"]], ["2-1", ["f", "w"]]]
    assert result_of(http.get("/xlen/s")) == 2


def test_path_style_post_without_body(http: httpx.Client, xs: Commands) -> None:
    """POST works like GET when there's no body (the docs' ``curl -X POST .../info``)."""
    assert result_of(http.post("/xadd/s/1-1/f/v")) == "1-1"
    assert entries(xs) == [["1-1", ["f", "v"]]]


def test_path_style_segments_are_percent_decoded(http: httpx.Client, xs: Commands) -> None:
    """Each segment is percent-decoded on its own, so ``%2F`` stays inside its argument."""
    assert result_of(http.get("/xadd/a%2Fb/1-1/f%20g/x%2Fy%3Fz%25%2B")) == "1-1"
    assert entries(xs, "a/b") == [["1-1", ["f g", "x/y?z%+"]]]
    assert xs("XLEN", "a") == 0
    assert result_of(http.get("/xadd/u/1-1/k/%C3%A9t%C3%A9")) == "1-1"
    assert entries(xs, "u") == [["1-1", ["k", "été"]]]


def test_path_style_arguments_may_hold_newlines(http: httpx.Client, xs: Commands) -> None:
    """A ``%0A`` is an argument's byte like any other: the route matches the whole path, and a
    trailing empty argument is not redirected away (it used to get an empty 307)."""
    assert result_of(http.get("/xadd/n%0Al/1-1/f/a%0Ab")) == "1-1"
    assert entries(xs, "n\nl") == [["1-1", ["f", "a\nb"]]]
    r = http.get("/xlen/%0A/")  # a trailing slash ends the path, as on ``/xlen/s/``
    assert (r.status_code, r.json()) == (200, {"result": 0})


def test_path_style_post_body_is_last_argument(http: httpx.Client, xs: Commands) -> None:
    """POST body is appended, raw, as the last argument (docs: JSON or Binary Value)."""
    raw = '{"a": [1, 2], "b": "x/y"} \u00e9\n'
    r = http.post("/xadd/s/1-1/payload", content=raw.encode())
    assert result_of(r) == "1-1"
    assert entries(xs) == [["1-1", ["payload", raw]]]
    # A body that is itself a JSON array is still just a value here, not a command.
    r = http.post("/xadd/s/2-1/payload", content=b'["XLEN","s"]')
    assert result_of(r) == "2-1"
    assert entries(xs)[1] == ["2-1", ["payload", '["XLEN","s"]']]


def test_binary_body_round_trips_with_base64(http: httpx.Client) -> None:
    """Binary values (docs: "To post a JSON or a binary value ... set value as the request body")
    are stored byte for byte; base64 replies give the exact bytes back, plain JSON replies show
    each byte that is not part of valid UTF-8 as the escape ``\\udcNN`` (README: Bytes that are
    not UTF-8), losing nothing either."""
    raw = bytes([0, 0xFF, 0x80, 0x41, 0xC3])
    assert result_of(http.post("/xadd/s/1-1/bin", content=raw)) == "1-1"
    r = http.post("/", json=["XRANGE", "s", "-", "+"], headers=B64)
    assert result_of(r) == [[b64("1-1"), [b64("bin"), base64.b64encode(raw).decode()]]]
    plain = result_of(http.post("/", json=["XRANGE", "s", "-", "+"]))
    assert plain == [["1-1", ["bin", raw.decode("utf-8", errors="surrogateescape")]]]


def test_percent_encoded_bytes_round_trip_with_base64(http: httpx.Client) -> None:
    """A segment is percent-decoded to *bytes*: ``%FF%FE`` is two bytes, not two U+FFFD (Redis
    values are binary-safe; the plain JSON rendering of a reply shows them as ``\\udcNN``)."""
    assert result_of(http.get("/xadd/s/1-1/pct/%FF%FEz")) == "1-1"
    r = http.post("/", json=["XRANGE", "s", "-", "+"], headers=B64)
    assert result_of(r) == [[b64("1-1"), [b64("pct"), base64.b64encode(b"\xff\xfez").decode()]]]
    plain = result_of(http.post("/", json=["XRANGE", "s", "-", "+"]))
    assert plain == [["1-1", ["pct", "\udcff\udcfez"]]]


def test_percent_decoded_command_name(http: httpx.Client) -> None:
    """The command name is a segment like any other."""
    assert result_of(http.get("/x%61dd/s/1-1/f/v")) == "1-1"


def test_path_style_query_pairs_follow_body(http: httpx.Client, xs: Commands) -> None:
    """Query pairs follow the body in order: ``POST /set/foo?EX=100`` = ``SET foo $BODY EX 100``."""
    r = http.post("/xadd/s/1-1/f?g=w&h=x", content=b"v")
    assert result_of(r) == "1-1"
    assert entries(xs) == [["1-1", ["f", "v", "g", "w", "h", "x"]]]
    got = result_of(http.get("/xrange/s/-/%2B?COUNT=1"))
    assert got == [["1-1", ["f", "v", "g", "w", "h", "x"]]]


def test_path_style_query_keeps_duplicates_and_order(http: httpx.Client, xs: Commands) -> None:
    """Repeated query keys are all passed, in the order written, each pair percent-decoded."""
    r = http.post("/xadd/s/1-1/f?g=w&g=x&a%2Fb=c%20d&z=1", content=b"v")
    assert result_of(r) == "1-1"
    assert entries(xs) == [["1-1", ["f", "v", "g", "w", "g", "x", "a/b", "c d", "z", "1"]]]


def test_path_style_query_pairs_on_get(http: httpx.Client, xs: Commands) -> None:
    """On GET the query pairs are the trailing arguments too."""
    for i in range(1, 4):
        xs("XADD", "s", f"{i}-1", "f", "v")
    got = result_of(http.get("/xrange/s/-/+?COUNT=2"))
    assert [e[0] for e in got] == ["1-1", "2-1"]


def test_path_style_token_param_is_not_an_argument(http: httpx.Client, xs: Commands) -> None:
    """``_token`` is credentials, never an argument (else XLEN would get the wrong arity)."""
    xs("XADD", "s", "1-1", "f", "v")
    assert result_of(http.get("/xlen/s?_token=whatever")) == 1


def test_path_style_errors(http: httpx.Client, xs: Commands) -> None:
    """Redis errors on a path call are ``{"error": ...}`` with 400 like on ``POST /``."""
    assert error_text(http.get("/xadd/s")) == WRONG_ARITY_XADD
    assert error_text(http.get("/xadd/s/0-0/f/v")) == XADD_ID_ZERO
    text = error_text(http.get("/nosuchcmd/x"), 400, 404)
    assert "nosuchcmd" in text.lower()
    assert xs("XLEN", "s") == 0


# --------------------------------------------------------------------------- /pipeline


def test_pipeline_results_in_order_not_stopped_by_errors(http: httpx.Client, xs: Commands) -> None:
    """One result/error object per row, in order; a failing row doesn't stop the rest."""
    body = [
        ["XADD", "s", "1-1", "f", "v"],
        ["XADD", "s", "1-1", "f", "v"],
        ["XADD", "s", "2-1", "f", "w"],
        ["XADD", "s"],
        ["XLEN", "s"],
        ["XRANGE", "s", "-", "+", "COUNT", "1"],
    ]
    r = http.post("/pipeline", json=body)
    assert r.status_code == 200, r.text
    assert json_body(r) == [
        {"result": "1-1"},
        {"error": XADD_ID_TOO_SMALL},
        {"result": "2-1"},
        {"error": WRONG_ARITY_XADD},
        {"result": 2},
        {"result": [["1-1", ["f", "v"]]]},
    ]
    assert xs("XLEN", "s") == 2


def test_pipeline_single_row(http: httpx.Client) -> None:
    """A one-command pipeline is still an array of one object."""
    r = http.post("/pipeline", json=[["XLEN", "s"]])
    assert r.status_code == 200
    assert json_body(r) == [{"result": 0}]


@pytest.mark.parametrize(
    "body",
    [
        b'["XLEN","s"]',
        b'[["XADD","s","1-1","f","v"],"XLEN"]',
        b'[["XADD","s","1-1","f","v"],[]]',
        b'[["XADD","s","1-1","f","v"],["XADD","s","2-1","f",{"a":1}]]',
        b'{"cmds":[["XLEN","s"]]}',
        b"[[XLEN]]",
    ],
)
def test_pipeline_malformed_is_rejected_whole(
    http: httpx.Client, xs: Commands, body: bytes
) -> None:
    """A pipeline that isn't a 2-D array of strings/numbers is a 400 error and runs nothing."""
    error_text(http.post("/pipeline", content=body))
    assert xs("XLEN", "s") == 0


# --------------------------------------------------------------------------- /multi-exec


def test_multi_exec_runtime_error_keeps_others(http: httpx.Client, xs: Commands) -> None:
    """Like Redis EXEC: a row failing at run time gives its error object, the others still apply.

    Upstash docs (Transactions): "a command may still fail even if it is a supported and valid
    command. In that case, all commands will be executed."
    """
    body = [
        ["XADD", "s", "1-1", "f", "v"],
        ["XADD", "s", "1-1", "f", "v"],
        ["XADD", "s", "2-1", "f", "w"],
        ["XLEN", "s"],
    ]
    r = http.post("/multi-exec", json=body)
    assert r.status_code == 200, r.text
    assert json_body(r) == [
        {"result": "1-1"},
        {"error": XADD_ID_TOO_SMALL},
        {"result": "2-1"},
        {"result": 2},
    ]
    assert [e[0] for e in entries(xs)] == ["1-1", "2-1"]


@pytest.mark.redis
def test_multi_exec_matches_redis_exec(http: httpx.Client, real_redis: Any) -> None:
    """The per-row replies equal what redis-server's MULTI/EXEC returns for the same rows."""
    rows = [
        ["XADD", KEY, "1-1", "f", "v"],
        ["XADD", KEY, "1-1", "f", "v"],
        ["XGROUP", "CREATE", KEY, "g", "0"],
        ["XGROUP", "CREATE", KEY, "g", "0"],
        ["XREADGROUP", "GROUP", "g", "c", "STREAMS", KEY, ">"],
        ["XPENDING", KEY, "g"],
        ["XACK", KEY, "g", "1-1"],
    ]
    cmds = [["MULTI"], *rows, ["EXEC"], ["DEL", KEY]]
    *queued, exec_reply, _ = redis_exact(REDIS_HOST, REDIS_PORT, REDIS_DB, *cmds)
    assert queued == ["OK"] + ["QUEUED"] * len(rows)
    want = [{"error": str(r)} if isinstance(r, RespError) else {"result": r} for r in exec_reply]
    r = http.post("/multi-exec", json=rows)
    assert r.status_code == 200, r.text
    assert json_body(r) == want


def test_multi_exec_queue_time_error_discards_everything(http: httpx.Client, xs: Commands) -> None:
    """An arity/unknown-command row makes Redis answer EXECABORT and run nothing.

    Upstash docs (Transactions): "If transaction is discarded as a whole, a single error is
    returned" — one ``{"error": ...}`` object, not an array — e.g. when a command is unsupported.
    """
    for bad in (["XADD", "s"], ["NOSUCHCMD", "x"]):
        rows = [["XADD", "s", "1-1", "f", "v"], bad, ["XADD", "s", "2-1", "f", "v"]]
        error_text(http.post("/multi-exec", json=rows))
        assert xs("XLEN", "s") == 0


def test_multi_exec_is_atomic(server: Server, xs: Commands) -> None:
    """No concurrent reader may observe a transaction half applied.

    Each transaction adds 100 entries; a concurrent XLEN poller must only ever see multiples of 100.
    """
    batch, rounds = 100, 8
    stop = threading.Event()
    polling = threading.Event()
    seen: list[int] = []

    def poll() -> None:
        with httpx.Client(base_url=server.url, timeout=10) as c:
            while not stop.is_set():
                seen.append(result_of(c.post("/", json=["XLEN", "s"])))
                polling.set()

    poller = threading.Thread(target=poll)
    poller.start()
    assert polling.wait(10), "the poller never got a reply"
    try:
        with httpx.Client(base_url=server.url, timeout=10) as c:
            for _ in range(rounds):
                rows = [["XADD", "s", "*", "f", str(i)] for i in range(batch)]
                r = c.post("/multi-exec", json=rows)
                assert r.status_code == 200
                assert len(json_body(r)) == batch
    finally:
        stop.set()
        poller.join(10)
    assert xs("XLEN", "s") == batch * rounds
    assert seen, "the poller never got a reply"
    torn = sorted({n for n in seen if n % batch})
    assert not torn, f"XLEN saw partial transactions: {torn[:10]}"


def test_blocking_read_inside_multi_exec_does_not_block(http: httpx.Client) -> None:
    """Inside MULTI/EXEC Redis never blocks: XREAD BLOCK answers nil at once."""
    t0 = time.monotonic()
    r = http.post("/multi-exec", json=[["XREAD", "BLOCK", "3000", "STREAMS", "s", "$"]])
    assert time.monotonic() - t0 < 1.5
    assert json_body(r) == [{"result": None}]


# --------------------------------------------------------------------------- base64 encoding


def test_base64_single_command(http: httpx.Client) -> None:
    """Bulk strings are base64; ``OK``, integers and nulls stay raw (docs: Base64 Encoded ...)."""
    r = http.post("/", json=["XADD", "s", "1-1", "f", "v"], headers=B64)
    assert result_of(r) == b64("1-1")
    r = http.post("/", json=["XRANGE", "s", "-", "+"], headers=B64)
    assert result_of(r) == [[b64("1-1"), [b64("f"), b64("v")]]]
    assert result_of(http.post("/", json=["XLEN", "s"], headers=B64)) == 1
    r = http.post("/", json=["XGROUP", "CREATE", "s", "g", "$"], headers=B64)
    assert result_of(r) == "OK"
    assert result_of(http.post("/", json=["XREAD", "STREAMS", "none", "0"], headers=B64)) is None


def test_base64_is_utf8_bytes(http: httpx.Client, xs: Commands) -> None:
    """Non-ASCII values are encoded from their UTF-8 bytes."""
    xs("XADD", "s", "1-1", "clé", "été ☃")
    r = http.post("/", json=["XRANGE", "s", "-", "+"], headers=B64)
    assert result_of(r) == [[b64("1-1"), ["Y2zDqQ==", "w6l0w6kg4piD"]]]


def test_base64_bulk_ok_is_encoded(http: httpx.Client, xs: Commands) -> None:
    """Only the *status* reply OK is exempt: a stored value "OK" is a bulk string and is encoded."""
    xs("XADD", "s", "1-1", "OK", "OK")
    r = http.post("/", json=["XRANGE", "s", "-", "+"], headers=B64)
    assert result_of(r) == [[b64("1-1"), ["T0s=", "T0s="]]]


def test_base64_nested_replies(http: httpx.Client, xs: Commands) -> None:
    """Deeply nested replies (XINFO, XREAD, XPENDING) are encoded string by string, recursively."""
    xs("XADD", "s", "1-1", "f", "v")
    xs("XADD", "s", "2-1", "f", "w")
    xs("XGROUP", "CREATE", "s", "g", "0")
    xs("XADD", "s", "3-1", "f", "x")
    xs("XGROUP", "CREATE", "s", "g", "0")
    xs("XGROUP", "CREATE", "s", "idle", "$")
    xs("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">")
    xs("XDEL", "s", "1-1")  # pending but deleted: history reads show it as [id, null]
    nulls_seen = 0
    for cmd in (
        ["XINFO", "STREAM", "s"],
        ["XINFO", "GROUPS", "s"],
        ["XREAD", "STREAMS", "s", "0"],
        ["XPENDING", "s", "g"],
        ["XPENDING", "s", "idle"],
        ["XREVRANGE", "s", "+", "-"],
        ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0"],
    ):
        plain = result_of(http.post("/", json=cmd))
        nulls_seen += repr(plain).count("None")
        encoded = result_of(http.post("/", json=cmd, headers=B64))
        assert encoded == b64_reply(plain), cmd
    assert nulls_seen >= 3  # nested nulls were exercised, and stayed null
    # XAUTOCLAIM changes state, so its one call is checked against the known reply.
    r = http.post("/", json=["XAUTOCLAIM", "s", "g", "d", "0", "0"], headers=B64)
    assert result_of(r) == b64_reply(["0-0", [["2-1", ["f", "w"]]], ["1-1"]])


def test_base64_simple_strings_other_than_ok(http: httpx.Client, xs: Commands) -> None:
    """Status replies other than OK (PONG, a TYPE name, HELP lines) are encoded like bulk ones."""
    xs("XADD", "s", "1-1", "f", "v")
    assert result_of(http.post("/", json=["PING"], headers=B64)) == b64("PONG")
    assert result_of(http.post("/", json=["TYPE", "s"], headers=B64)) == b64("stream")
    assert result_of(http.post("/", json=["ECHO", "OK"], headers=B64)) == b64("OK")
    for cmd in (["XGROUP", "HELP"], ["XINFO", "HELP"]):
        plain = result_of(http.post("/", json=cmd))
        assert isinstance(plain, list) and plain, plain
        assert result_of(http.post("/", json=cmd, headers=B64)) == b64_reply(plain)


def test_base64_errors_are_plain(http: httpx.Client) -> None:
    """Error texts are never encoded."""
    r = http.post("/", json=["XADD", "s", "0-0", "f", "v"], headers=B64)
    assert error_text(r) == XADD_ID_ZERO


def test_base64_pipeline_and_multi_exec(http: httpx.Client) -> None:
    """The header applies to every object of /pipeline and /multi-exec."""
    rows: list[list[Any]] = [
        ["XADD", "s", "1-1", "f", "v"],
        ["XLEN", "s"],
        ["XADD", "s", "0-0", "f", "v"],
    ]
    r = http.post("/pipeline", json=rows, headers=B64)
    assert json_body(r) == [{"result": b64("1-1")}, {"result": 1}, {"error": XADD_ID_ZERO}]
    rows = [["XADD", "s", "2-1", "f", "w"], ["XRANGE", "s", "2", "+"], ["XTRIM", "s", "MAXLEN", 0]]
    r = http.post("/multi-exec", json=rows, headers=B64)
    assert json_body(r) == [
        {"result": b64("2-1")},
        {"result": [[b64("2-1"), [b64("f"), b64("w")]]]},
        {"result": 2},
    ]


def test_base64_path_style(http: httpx.Client) -> None:
    """The header applies to path-style calls as well (the docs' example is ``GET /GET/foo``)."""
    assert result_of(http.get("/xadd/s/1-1/f/v", headers=B64)) == b64("1-1")
    assert result_of(http.get("/xrange/s/-/+", headers=B64)) == [[b64("1-1"), [b64("f"), b64("v")]]]
    assert result_of(http.get("/xlen/s", headers=B64)) == 1


def test_no_encoding_header_means_plain_text(http: httpx.Client) -> None:
    """Without the header replies are plain text (the encoding must not leak across requests)."""
    http.post("/", json=["XLEN", "s"], headers=B64)
    http.post("/", json=["XADD", "s", "1-1", "f", "v"])
    assert result_of(http.post("/", json=["XRANGE", "s", "-", "+"])) == [["1-1", ["f", "v"]]]


# --------------------------------------------------------------------------- malformed requests

BAD_BODIES = [
    pytest.param(b"", id="empty-body"),
    pytest.param(b"not json", id="not-json"),
    pytest.param(b'["XADD","s","1-1","f","v"', id="truncated-json"),
    pytest.param(b'{"command":["XADD","s","1-1","f","v"]}', id="object"),
    pytest.param(b'"XADD s 1-1 f v"', id="string"),
    pytest.param(b"42", id="number"),
    pytest.param(b"null", id="null"),
    pytest.param(b"[]", id="empty-array"),
    pytest.param(b'[["XADD","s","1-1","f","v"]]', id="2d-array"),
    pytest.param(b'["XADD","s","1-1","f",{"a":1}]', id="object-arg"),
    pytest.param(b'["XADD","s","1-1","f",["v"]]', id="array-arg"),
    pytest.param(b'["XADD","s","1-1","f",null]', id="null-arg"),
    pytest.param(b'[null,"s"]', id="null-command"),
    pytest.param(b"[true]", id="bool-command"),
    pytest.param(b'["XADD","s","1-1","f","v"] trailing', id="trailing-garbage"),
]


@pytest.mark.parametrize("body", BAD_BODIES)
def test_bad_body_is_error_and_changes_nothing(
    http: httpx.Client, xs: Commands, body: bytes
) -> None:
    """Every malformed command body gets ``{"error": ...}`` with 400 and runs nothing."""
    xs("XADD", "s", "1-0", "a", "b")
    before = entries(xs)
    error_text(http.post("/", content=body, headers={"Content-Type": "application/json"}))
    assert entries(xs) == before


@pytest.mark.parametrize("path", ["/pipeline", "/multi-exec"])
@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"{}",
        b"[1]",
        b'[["XADD","s","2-0","a","b"],null]',
        b'[["XADD","s","2-0","a","b"],[{}]]',
        b'[["XADD","s","2-0","a","b"],["XADD","s","3-0","a",null]]',
        b'[["XADD","s","2-0","a","b"]',
    ],
)
def test_bad_batch_body_is_error(http: httpx.Client, xs: Commands, path: str, body: bytes) -> None:
    """Malformed /pipeline and /multi-exec bodies get a JSON error and run no row at all."""
    xs("XADD", "s", "1-0", "a", "b")
    error_text(http.post(path, content=body))
    assert entries(xs) == [["1-0", ["a", "b"]]]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("DELETE", "/"),
        ("PATCH", "/"),
        ("DELETE", "/pipeline"),
        ("PATCH", "/multi-exec"),
        ("DELETE", "/xlen/s"),
        ("GET", "/pipeline"),
        ("GET", "/multi-exec"),
        ("GET", "/"),
    ],
)
def test_wrong_method_is_json_error(http: httpx.Client, method: str, path: str) -> None:
    """Unsupported methods answer a JSON error (405/404/400 all fine), never a framework page."""
    error_text(http.request(method, path), 400, 404, 405)


@pytest.mark.parametrize("path", ["/nosuchcommand", "/no/such/thing", "/pipeline/x", "/%ZZ"])
def test_unknown_path_is_json_error(http: httpx.Client, path: str) -> None:
    """Unknown paths answer a JSON error, never HTML or FastAPI's ``detail``."""
    for method in ("GET", "POST"):
        error_text(http.request(method, path), 400, 404, 405)


def test_huge_body_is_rejected_with_json(http: httpx.Client, xs: Commands) -> None:
    """A body over the limit (16 MiB by default) is refused with a JSON error, storing nothing."""
    value = "x" * (17 * 1024 * 1024)
    body = json.dumps(["XADD", "s", "1-1", "f", value]).encode()
    error_text(http.post("/", content=body, timeout=60), 400, 413)
    assert xs("XLEN", "s") == 0
    error_text(http.post("/xadd/s/1-1/f", content=value.encode(), timeout=60), 400, 413)
    assert xs("XLEN", "s") == 0


def chunked(data: bytes, size: int = 1 << 20) -> Iterator[bytes]:
    """``data`` as a generator, so httpx sends it chunked (no Content-Length header)."""
    for i in range(0, len(data), size):
        yield data[i : i + size]


def test_chunked_body_is_accepted(http: httpx.Client, xs: Commands) -> None:
    """A body sent with ``Transfer-Encoding: chunked`` is read like any other."""
    r = http.post("/", content=chunked(b'["XADD","s","1-1","f","v"]', 5))
    assert result_of(r) == "1-1"
    r = http.post("/xadd/s/2-1/f", content=chunked(b"chunked value", 4))
    assert result_of(r) == "2-1"
    assert entries(xs) == [["1-1", ["f", "v"]], ["2-1", ["f", "chunked value"]]]


def test_huge_chunked_body_is_rejected(http: httpx.Client, xs: Commands) -> None:
    """Without a Content-Length the size limit must still hold (counted while reading)."""
    value = b"x" * (17 * 1024 * 1024)
    body = b'["XADD","s","1-1","f","' + value + b'"]'
    error_text(http.post("/", content=chunked(body), timeout=60), 400, 413)
    error_text(http.post("/xadd/s/1-1/f", content=chunked(value), timeout=60), 400, 413)
    assert xs("XLEN", "s") == 0


def test_huge_count(http: httpx.Client, xs: Commands) -> None:
    """COUNT beyond int64 is Redis's integer error; a huge valid COUNT just returns what exists.

    Guards against preallocating ``count`` slots or looping ``count`` times.
    """
    xs("XADD", "s", "1-1", "f", "v")
    too_big = "99999999999999999999"
    assert error_text(http.post("/", json=["XRANGE", "s", "-", "+", "COUNT", too_big])) == (
        NOT_AN_INTEGER
    )
    int64_max = "9223372036854775807"
    t0 = time.monotonic()
    got = result_of(http.post("/", json=["XRANGE", "s", "-", "+", "COUNT", int64_max]))
    assert got == [["1-1", ["f", "v"]]]
    got = result_of(http.post("/", json=["XREVRANGE", "s", "+", "-", "COUNT", int64_max]))
    assert got == [["1-1", ["f", "v"]]]
    got = result_of(http.post("/", json=["XREAD", "COUNT", int64_max, "STREAMS", "s", "0"]))
    assert got == [["s", [["1-1", ["f", "v"]]]]]
    xs("XGROUP", "CREATE", "s", "g", "0")
    cmd = ["XREADGROUP", "GROUP", "g", "c", "COUNT", int64_max, "STREAMS", "s", ">"]
    assert result_of(http.post("/", json=cmd)) == [["s", [["1-1", ["f", "v"]]]]]
    got = result_of(http.post("/", json=["XPENDING", "s", "g", "-", "+", int64_max]))
    assert [row[:2] for row in got] == [["1-1", "c"]]
    got = result_of(http.post("/", json=["XINFO", "STREAM", "s", "FULL", "COUNT", int64_max]))
    assert isinstance(got, list) and "entries" in got
    assert time.monotonic() - t0 < 5


def test_server_survives_bad_requests(http: httpx.Client) -> None:
    """After a volley of bad requests, the same connection still serves good ones."""
    for body in BAD_BODIES:
        content = body.values[0]
        assert isinstance(content, bytes)
        http.post("/", content=content)
    assert result_of(http.post("/", json=["XADD", "s", "1-1", "f", "v"])) == "1-1"


# --------------------------------------------------------------------------- the real Upstash SDK


def test_upstash_python_sdk_round_trip(server: Server, xs: Commands) -> None:
    """The official ``upstash-redis`` client (base64 encoding, telemetry and an empty sync token by
    default) works end to end: single commands, pipeline, transaction and error reporting."""
    from upstash_redis import Redis
    from upstash_redis.errors import UpstashError

    sdk = Redis(server.url, "unused-token", rest_retries=0)
    try:
        assert sdk.xadd("s", "1-1", {"f": "v", "g": "é ☃"}) == "1-1"
        assert sdk.xlen("s") == 1
        assert sdk.xrange("s", "-", "+") == [["1-1", ["f", "v", "g", "é ☃"]]]
        assert sdk.xread({"s": "0"}) == [["s", [["1-1", ["f", "v", "g", "é ☃"]]]]]
        with pytest.raises(UpstashError, match=r"^ERR The ID specified in XADD is equal or"):
            sdk.xadd("s", "1-1", {"f": "v"})
        p = sdk.pipeline()
        p.xadd("s", "2-1", {"f": "w"})
        p.xlen("s")
        assert p.exec() == ["2-1", 2]
        m = sdk.multi()
        m.xadd("s", "3-1", {"f": "x"})
        m.xrange("s", "3", "+")
        assert m.exec() == ["3-1", [["3-1", ["f", "x"]]]]
    finally:
        sdk.close()
    assert xs("XLEN", "s") == 3
