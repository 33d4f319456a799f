"""Idempotent appends over REST (Redis 8.6's XADD IDMP / IDMPAUTO and XCFGSET), on the three
targets: `producer` + `idempotent_id` on an entry, `producer` alone (IDMPAUTO), batches, the
stream's `config` resource, the `idmp` object of the stream's info, bad input (400 with
Redis's texts). Access (`write`, as XCFGSET's in the command table) is in
tests/access/test_matrix.py.

On the Redis targets (redis-server 7.0 here) every IDMP call is refused with 400 naming 8.6,
and nothing is written. A last test runs the same calls through a server in front of
redis-server 8.6 (``redis8_or_skip``), where they are passed through.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.rest.conftest import add, problem
from tests.conftest import Server
from tests.support.redis_servers import redis8_or_skip
from tests.support.targets import Target

E = "/v1/streams/s/entries"
C = "/v1/streams/s/config"
FUTURE = "9999999999999-0"  # `*` then gives the last ID plus one, on any clock
NEEDS_8_6 = "needs Redis 8.6 or newer"


def append(api: httpx.Client, body: dict[str, Any], stream: str = "s") -> httpx.Response:
    return api.post(f"/v1/streams/{stream}/entries", json=body)


def once(producer: str | None, iid: str | None = None, **fields: str) -> dict[str, Any]:
    body: dict[str, Any] = {"fields": fields or {"f": "v"}}
    if producer is not None:
        body["producer"] = producer
    if iid is not None:
        body["idempotent_id"] = iid
    return body


def ids(r: httpx.Response) -> list[str]:
    assert r.status_code == 201, r.text
    out: list[str] = r.json()["ids"]
    return out


def info(api: httpx.Client) -> dict[str, Any]:
    r = api.get("/v1/streams/s")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def refused_before_8_6(r: httpx.Response) -> None:
    assert NEEDS_8_6 in problem(r, 400)["detail"], r.text


def dedupe(api: httpx.Client) -> None:
    """The IDMP sequence whose replies are the same on the engine and on Redis 8.6."""
    add(api, "s", ("f", "v"), id=FUTURE)
    assert info(api)["idmp"] is None  # no IDMP state yet: no fields, as Redis 7.0
    first = ids(append(api, once("p", "order-1")))
    assert first == ["9999999999999-1"]
    assert ids(append(api, once("p", "order-1", f="changed"))) == first  # a repeat: same ID
    assert ids(append(api, once("q", "order-1"))) == ["9999999999999-2"]  # another producer
    auto = ids(append(api, once("p", a="1", b="2")))  # IDMPAUTO: the fields decide
    assert ids(append(api, once("p", b="2", a="1"))) == auto
    r = append(api, {"entries": [once("p", "order-1"), once("p", "order-2"), once("r")]})
    batch = ids(r)
    assert batch[0] == first[0] and batch[1:] == ["9999999999999-4", "9999999999999-5"]
    # the range spans the batch's IDs, the repeat's older one included
    assert r.headers["location"].endswith("?start=9999999999999-1&end=9999999999999-5")
    entries = api.get(E).json()["entries"]
    assert [e["fields"] for e in entries][1:] == [
        {"f": "v"},
        {"f": "v"},
        {"a": "1", "b": "2"},
        {"f": "v"},
        {"f": "v"},
    ]
    assert info(api)["idmp"] == {
        "duration_s": 100,
        "maxsize": 100,
        "pids_tracked": 3,
        "iids_tracked": 5,
        "iids_added": 5,
        "iids_duplicates": 3,
        "pids_evicted": 0,
    }
    # the config resource: a change forgets every producer's idempotent IDs
    r = api.put(C, json={"idmp_duration_s": 300, "idmp_maxsize": 2})
    assert r.status_code == 204, r.text
    state = info(api)["idmp"]
    assert (state["duration_s"], state["maxsize"], state["iids_tracked"]) == (300, 2, 0)
    assert api.put(C, json={"idmp_maxsize": 2}).status_code == 204  # unchanged: kept
    assert ids(append(api, once("p", "order-1"))) == ["9999999999999-6"]  # forgotten
    full = api.get("/v1/streams/s", params={"full": "true"}).json()
    assert full["idmp"]["iids_added"] == 6


def test_repeats_answer_the_first_id(api: httpx.Client, target: Target) -> None:
    if target.redis:  # redis-server 7.0 keeps no idempotent IDs: refused, nothing written
        add(api, "s", ("f", "v"), id=FUTURE)
        refused_before_8_6(append(api, once("p", "order-1")))
        refused_before_8_6(append(api, once("p")))
        refused_before_8_6(append(api, {"entries": [once(None), once("p", "i")]}))
        refused_before_8_6(api.put(C, json={"idmp_duration_s": 300}))
        assert [e["id"] for e in api.get(E).json()["entries"]] == [FUTURE]
        assert info(api)["idmp"] is None
        return
    dedupe(api)


BAD: list[tuple[dict[str, Any], str]] = [
    (once("", "i"), "ERR syntax error, IDMP requires a non-empty producer ID"),
    (once(""), "ERR syntax error, IDMPAUTO requires a non-empty producer ID"),
    (once(None, "i"), "ERR syntax error, IDMP requires a non-empty producer ID"),
    (once("p", ""), "ERR syntax error, IDMP requires a non-empty idempotent ID"),
    (
        {**once("p", "i"), "id": "5-0"},
        "ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs",
    ),
    (
        {"entries": [once("p", "i"), {**once("p"), "id": "5-*"}]},
        "ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs",
    ),
]
BAD_CONFIG: list[tuple[dict[str, Any], str]] = [
    ({}, "ERR At least one parameter must be specified"),
    ({"idmp_duration_s": None}, "ERR At least one parameter must be specified"),
    ({"idmp_duration_s": 0}, "ERR IDMP-DURATION must be between 1 and 86400 seconds"),
    ({"idmp_duration_s": 86401}, "ERR IDMP-DURATION must be between 1 and 86400 seconds"),
    ({"idmp_maxsize": 0}, "ERR IDMP-MAXSIZE must be between 1 and 10000 entries"),
    (
        {"idmp_maxsize": 10001, "idmp_duration_s": 5},
        "ERR IDMP-MAXSIZE must be between 1 and 10000 entries",
    ),
]


def test_bad_input_is_a_400_with_redis_texts(api: httpx.Client, target: Target) -> None:
    add(api, "s", ("f", "v"), id=FUTURE)
    for body, text in BAD:
        assert problem(append(api, body), 400)["error"] == text, body
    for body, text in BAD_CONFIG:
        assert problem(api.put(C, json=body), 400)["error"] == text, body
    # the path's stream first: 404 for a missing one, whatever the body says
    for body in ({"idmp_duration_s": 5}, {"idmp_duration_s": 0}):
        r = api.put("/v1/streams/nope/config", json=body)
        if target.redis and body["idmp_duration_s"] == 5:
            refused_before_8_6(r)  # valid: the server is asked, and cannot
        else:
            assert problem(r, 404)["error"] == "ERR no such key"
    # what is not JSON of the schema is the schema's 422
    assert api.put(C, json={"idmp_duration_s": "x"}).status_code == 422
    assert append(api, {**once("p", "i"), "producer": 5}).status_code == 422
    batch = {"entries": [once("p")], "producer": "p"}
    assert append(api, batch).status_code == 422  # a batch's entries carry their own
    assert [e["id"] for e in api.get(E).json()["entries"]] == [FUTURE]  # nothing written


# --- through a server in front of redis-server 8.6 -----------------------------------------
@pytest.fixture(scope="module")
def api8(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    with redis8_or_skip() as redis8:
        data: Path = tmp_path_factory.mktemp("idmp8")
        srv = Server(data, "--backend", f"redis://127.0.0.1:{redis8.port}/0")
        try:
            with httpx.Client(base_url=srv.url, timeout=30) as client:
                yield client
        finally:
            srv.stop()


@pytest.mark.redis
def test_redis_8_6_answers_as_the_engine(api8: httpx.Client) -> None:
    dedupe(api8)
