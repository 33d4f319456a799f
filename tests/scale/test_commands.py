"""The command endpoint's protocol on all three targets: embedded, redis-server, Redis Cluster.

The same requests, the same answers: Upstash's ``{"result"}`` / ``{"error"}`` shapes, Redis's
error texts, pipelines in order, transactions all or none, base64, the path style, blocking
reads served by another request's write. Keys share one hash tag (``{t}``), so a transaction
over several of them is one slot in the cluster too.
"""

from __future__ import annotations

import base64
import threading
from typing import Any

import httpx

from tests.api.support import WRONG_ARITY_XADD, XADD_ID_TOO_SMALL, error_text, result_of
from tests.conftest import Commands, ReplyError
from tests.support.waiting import parked

S, T = "{t}s", "{t}u"


def test_xadd_xrange_xlen(tx: Commands) -> None:
    assert tx("XADD", S, "1-1", "f", "v") == "1-1"
    assert tx("XADD", S, "2-0", "a", "1", "b", "2") == "2-0"
    assert tx("XRANGE", S, "-", "+") == [["1-1", ["f", "v"]], ["2-0", ["a", "1", "b", "2"]]]
    assert tx("XREVRANGE", S, "+", "-", "COUNT", "1") == [["2-0", ["a", "1", "b", "2"]]]
    assert tx("XLEN", S) == 2
    assert tx("TYPE", S) == "stream"
    assert tx("EXISTS", S, T) == 1


def test_nil_replies_are_json_null(api: httpx.Client) -> None:
    assert result_of(api.post("/", json=["XADD", S, "NOMKSTREAM", "*", "f", "v"])) is None
    assert result_of(api.post("/", json=["XREAD", "STREAMS", S, "0"])) is None


def test_errors_are_redis_texts_with_400(api: httpx.Client, tx: Commands) -> None:
    assert error_text(api.post("/", json=["XADD", S])) == WRONG_ARITY_XADD
    tx("XADD", S, "5-0", "f", "v")
    assert error_text(api.post("/", json=["XADD", S, "5-0", "f", "v"])) == XADD_ID_TOO_SMALL
    text = error_text(api.post("/", json=["XREADGROUP", "GROUP", "g", "c", "STREAMS", S, ">"]))
    assert text.startswith("NOGROUP No such key"), text


def test_commands_outside_the_table_never_run(api: httpx.Client, tx: Commands) -> None:
    """Only stream and keyspace commands are served, whatever stands behind: SET is unknown
    here even though Redis knows it, and nothing is written."""
    text = error_text(api.post("/", json=["SET", S, "x"]))
    assert text.startswith("ERR unknown command 'SET'"), text
    assert tx("EXISTS", S) == 0


def test_pipeline_answers_each_in_order(api: httpx.Client) -> None:
    r = api.post(
        "/pipeline",
        json=[["XADD", S, "1-0", "f", "v"], ["XADD", S, "1-0", "f", "v"], ["XLEN", S], ["NOPE"]],
    )
    assert r.status_code == 200
    body = r.json()
    assert body[0] == {"result": "1-0"}
    assert body[1] == {"error": XADD_ID_TOO_SMALL}
    assert body[2] == {"result": 1}
    assert body[3]["error"].startswith("ERR unknown command 'NOPE'")


def test_a_long_pipeline_of_appends(api: httpx.Client, tx: Commands) -> None:
    r = api.post("/pipeline", json=[["XADD", S, "*", "n", str(i)] for i in range(300)])
    ids = [item["result"] for item in r.json()]
    assert len(ids) == 300 and ids == sorted(ids, key=lambda i: tuple(map(int, i.split("-"))))
    assert [e[0] for e in tx("XRANGE", S, "-", "+")] == ids


def test_multi_exec_is_all_or_none(api: httpx.Client, tx: Commands) -> None:
    r = api.post("/multi-exec", json=[["XADD", S, "1-0", "f", "v"], ["XADD", T, "2-0", "g", "w"],
                                      ["XLEN", S]])  # fmt: skip
    assert r.json() == [{"result": "1-0"}, {"result": "2-0"}, {"result": 1}]
    r = api.post("/multi-exec", json=[["XADD", S, "3-0", "f", "v"], ["NOPE"]])
    assert error_text(r) == "EXECABORT Transaction discarded because of previous errors."
    assert tx("XLEN", S) == 1  # nothing of the refused transaction ran


def test_base64_encoding(api: httpx.Client) -> None:
    headers = {"Upstash-Encoding": "base64"}
    r = api.post("/", json=["XADD", S, "7-0", "f", "v"], headers=headers)
    assert result_of(r) == base64.b64encode(b"7-0").decode()
    r = api.post("/", json=["XRANGE", S, "-", "+"], headers=headers)
    e = base64.b64encode
    assert result_of(r) == [[e(b"7-0").decode(), [e(b"f").decode(), e(b"v").decode()]]]


def test_path_style(api: httpx.Client) -> None:
    assert result_of(api.post("/xadd/%7Bt%7Ds/1-0/f/v")) == "1-0"
    assert result_of(api.get("/xlen/%7Bt%7Ds")) == 1


def test_group_commands(tx: Commands) -> None:
    assert tx("XGROUP", "CREATE", S, "g", "0", "MKSTREAM") == "OK"
    assert isinstance(tx("XGROUP", "CREATE", S, "g", "0"), ReplyError)
    for i in range(1, 4):
        tx("XADD", S, f"{i}-0", "n", str(i))
    got = tx("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", S, ">")
    assert got == [[S, [["1-0", ["n", "1"]], ["2-0", ["n", "2"]]]]]
    assert tx("XACK", S, "g", "1-0", "9-0") == 1
    assert tx("XPENDING", S, "g") == [1, "2-0", "2-0", [["alice", "1"]]]
    claimed = tx("XCLAIM", S, "g", "bob", "0", "2-0", "JUSTID")
    assert claimed == ["2-0"]
    groups = tx("XINFO", "GROUPS", S)
    assert groups[0][:4] == ["name", "g", "consumers", 2]


def test_a_blocked_read_is_served_by_a_write(front: Any, tx: Commands) -> None:
    got: list[Any] = []

    def reader() -> None:
        with httpx.Client(base_url=front.url, timeout=15) as c:
            got.append(c.post("/", json=["XREAD", "BLOCK", "5000", "STREAMS", S, "$"]).json())

    thread = threading.Thread(target=reader)
    thread.start()
    parked(front, 1)
    tx("XADD", S, "1-0", "f", "v")
    thread.join(10)
    assert got == [{"result": [[S, [["1-0", ["f", "v"]]]]]}]


def test_a_blocked_read_times_out_with_null(api: httpx.Client) -> None:
    r = api.post("/", json=["XREAD", "BLOCK", "100", "STREAMS", S, "$"])
    assert result_of(r) is None
