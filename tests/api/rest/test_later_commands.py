"""The Redis 8.x stream commands over REST, on the three targets: XDELEX (a `policy` on entry
deletion), XACKDEL (`ackdels`), XNACK (`nacks`), reference policies on XTRIM and XADD's trim,
and XREADGROUP's CLAIM (`claim_idle_ms`); their bad input (4xx, never 500) and their access.

On the Redis targets (redis-server 7.0 here) the backend emulates what 7.0 can express and
refuses the rest (400, naming the version needed): the tests say where the two differ, as
README's "Stream commands newer than the Redis server" documents.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import jwt
import pytest

from tests.api.rest.conftest import add, problem
from tests.conftest import Server
from tests.support.targets import Target
from tests.support.waiting import until

E = "/v1/streams/s/entries"
G = "/v1/streams/s/groups/g"
LLONG_MAX = 9223372036854775807
INVALID_ID = "ERR Invalid stream ID specified as stream command argument"


def stream(api: httpx.Client, n: int = 5) -> None:
    """Entries 1-0 .. n-0 in `s`, a group `g` at 0."""
    for i in range(1, n + 1):
        add(api, "s", ("n", str(i)), id=f"{i}-0")
    r = api.post("/v1/streams/s/groups", json={"name": "g", "id": "0"})
    assert r.status_code == 201, r.text


def read(api: httpx.Client, consumer: str, group: str = "g", **body: Any) -> list[Any]:
    r = api.post(f"/v1/streams/s/groups/{group}/consumers/{consumer}/reads", json=body)
    assert r.status_code == 200, r.text
    entries: list[Any] = r.json()["entries"]
    return entries


def pending(api: httpx.Client, group: str = "g") -> dict[str, dict[str, Any]]:
    r = api.get(f"/v1/streams/s/groups/{group}/pending", params={"count": 100})
    assert r.status_code == 200, r.text
    return {row["id"]: row for row in r.json()["entries"]}


def entry_ids(api: httpx.Client) -> list[str]:
    return [e["id"] for e in api.get(E).json()["entries"]]


# --- XDELEX: a policy on entry deletion ---------------------------------------------------


def test_deleting_with_a_policy_says_what_became_of_each_id(api: httpx.Client) -> None:
    stream(api, 3)
    read(api, "a", count=2)  # 1-0 and 2-0 pending; 3-0 not delivered yet
    assert api.post(f"{G}/acks", json={"ids": ["2-0"]}).json() == {"acknowledged": 1}
    ids = ["1-0", "1-5", "2-0", "3-0", "9-0"]
    r = api.delete(E, params={"id": ids, "policy": "ACKED"})
    assert r.status_code == 200, r.text
    assert r.json() == {
        "deleted": 1,
        "kept": 3,
        "not_found": 1,
        "results": [
            {"id": "1-0", "status": "kept"},  # pending in g
            {"id": "1-5", "status": "not_found"},  # not in the stream, needed by no group
            {"id": "2-0", "status": "deleted"},  # delivered and acknowledged
            {"id": "3-0", "status": "kept"},  # g has not delivered it yet
            # Not in the stream, but after g's last-delivered ID: "kept", as redis-server
            # 8.6 answers (a group's need is looked at first).
            {"id": "9-0", "status": "kept"},
        ],
    }
    assert entry_ids(api) == ["1-0", "3-0"]
    # DELREF: the entry goes and so does its PEL reference; any case is read.
    r = api.delete(E, params={"id": "1-0", "policy": "delref"})
    assert r.json()["results"] == [{"id": "1-0", "status": "deleted"}]
    assert pending(api) == {}
    # KEEPREF: as XDEL, the group's view is left alone.
    read(api, "a")
    r = api.delete(E, params={"id": "3-0", "policy": "KEEPREF"})
    assert r.json()["deleted"] == 1
    assert list(pending(api)) == ["3-0"]
    # Without a policy: XDEL's reply, as before.
    add(api, "s", ("n", "4"), id="4-0")
    assert api.delete(E, params={"id": ["4-0", "5-0"]}).json() == {"deleted": 1}


def test_deleting_one_entry_with_a_policy(api: httpx.Client) -> None:
    stream(api, 2)
    read(api, "a", count=1)
    kept = problem(api.delete(f"{E}/1-0", params={"policy": "ACKED"}), 409)
    assert "ACKED" in kept["error"]
    assert entry_ids(api) == ["1-0", "2-0"]  # nothing changed
    assert api.delete(f"{E}/1-0", params={"policy": "DELREF"}).status_code == 204
    assert pending(api) == {}
    problem(api.delete(f"{E}/1-0", params={"policy": "DELREF"}), 404)
    problem(api.delete("/v1/streams/nope/entries/1-0", params={"policy": "ACKED"}), 404)
    problem(api.delete("/v1/streams/nope/entries", params={"id": "1-0", "policy": "ACKED"}), 404)


# --- XACKDEL ------------------------------------------------------------------------------


def test_ack_and_delete(api: httpx.Client) -> None:
    stream(api, 3)
    assert api.post("/v1/streams/s/groups", json={"name": "h", "id": "0"}).status_code == 201
    read(api, "a", count=2)  # g: 1-0, 2-0 pending; h has delivered nothing
    r = api.post(f"{G}/ackdels", json={"ids": ["1-0", "3-0"], "policy": "ACKED"})
    assert r.status_code == 200, r.text
    assert r.json() == {
        "acknowledged": 1,
        "deleted": 0,
        "kept": 1,
        "not_found": 1,
        "results": [
            {"id": "1-0", "status": "kept"},  # acknowledged in g, still needed by h
            {"id": "3-0", "status": "not_found"},  # not pending in g: nothing done
        ],
    }
    assert list(pending(api)) == ["2-0"]
    assert entry_ids(api) == ["1-0", "2-0", "3-0"]
    # The default policy, KEEPREF, deletes whatever h still needs.
    r = api.post(f"{G}/ackdels", json={"ids": ["2-0"]})
    assert r.json()["results"] == [{"id": "2-0", "status": "deleted"}]
    assert r.json()["acknowledged"] == 1
    assert entry_ids(api) == ["1-0", "3-0"]
    assert pending(api) == {}


# --- XNACK --------------------------------------------------------------------------------


def released_idle(target: Target) -> int:
    """The idle time a released entry shows: -1, as Redis 8.8 says; before 8.8 the Redis
    backend releases by XCLAIM ... TIME 0, so redis-server shows the time since the epoch."""
    return int(time.time() * 1000) if target.redis else -1


def test_nack_releases_entries_that_the_next_claim_takes_first(
    api: httpx.Client, target: Target
) -> None:
    stream(api, 3)
    read(api, "a", count=2)
    r = api.post(f"{G}/nacks", json={"ids": ["1-0", "9-0"], "mode": "fail"})
    assert r.status_code == 200, r.text
    assert r.json() == {"released": 1}  # 9-0 is not pending
    row = pending(api)["1-0"]
    assert (row["consumer"], row["delivery_count"]) == ("", 1)
    assert row["idle_ms"] == pytest.approx(released_idle(target), abs=60_000)
    # A claiming read takes the released entry first (2-0 is not idle long enough), then new.
    got = read(api, "b", claim_idle_ms=3_600_000)
    assert got == [
        {"id": "1-0", "fields": {"n": "1"}, "idle_ms": -1, "delivery_count": 1},
        {"id": "3-0", "fields": {"n": "3"}, "idle_ms": 0, "delivery_count": 0},
    ]
    assert pending(api)["1-0"]["consumer"] == "b"
    assert pending(api)["1-0"]["delivery_count"] == 2


@pytest.mark.parametrize(
    ("body", "count"),
    [
        ({"mode": "SILENT"}, 0),  # the delivery taken back
        ({"mode": "FAIL"}, 1),
        ({"mode": "FATAL"}, LLONG_MAX),
        ({"mode": "FAIL", "retry_count": 7}, 7),
    ],
)
def test_nack_modes_set_the_delivery_count(
    api: httpx.Client, body: dict[str, Any], count: int
) -> None:
    stream(api, 1)
    read(api, "a")
    assert api.post(f"{G}/nacks", json={"ids": ["1-0"], **body}).json() == {"released": 1}
    assert pending(api)["1-0"]["delivery_count"] == count


def test_nack_force_releases_entries_not_pending(api: httpx.Client) -> None:
    stream(api, 2)
    body = {"ids": ["2-0", "7-0"], "mode": "FAIL"}
    assert api.post(f"{G}/nacks", json=body).json() == {"released": 0}
    assert api.post(f"{G}/nacks", json={**body, "force": True}).json() == {"released": 1}
    row = pending(api)["2-0"]  # in the stream: created unowned; 7-0 is not in the stream
    assert (row["consumer"], row["delivery_count"]) == ("", 0)


# --- CLAIM on the consumer read -----------------------------------------------------------


def test_a_claiming_read_takes_idle_entries_then_new_ones(api: httpx.Client) -> None:
    stream(api, 3)
    read(api, "a", count=1)
    until(lambda: pending(api)["1-0"]["idle_ms"] > 20, what="1-0 idle past the claim's 20 ms")
    got = read(api, "b", claim_idle_ms=20, count=2)
    assert [(e["id"], e["delivery_count"]) for e in got] == [("1-0", 1), ("2-0", 0)]
    assert got[0]["idle_ms"] >= 20 and got[1]["idle_ms"] == 0
    assert pending(api)["1-0"]["consumer"] == "b"
    # A history read ignores it, as Redis does: plain entries.
    assert read(api, "b", id="0", claim_idle_ms=0) == [
        {"id": "1-0", "fields": {"n": "1"}},
        {"id": "2-0", "fields": {"n": "2"}},
    ]


def test_a_read_without_claim_keeps_its_shape(api: httpx.Client) -> None:
    stream(api, 1)
    assert read(api, "a") == [{"id": "1-0", "fields": {"n": "1"}}]


# --- policies on trimming -----------------------------------------------------------------


def test_trimming_with_a_policy(api: httpx.Client, target: Target) -> None:
    stream(api, 4)
    read(api, "a", count=3)  # 1-0..3-0 pending, 4-0 not delivered
    api.post(f"{G}/acks", json={"ids": ["2-0"]})
    r = api.post("/v1/streams/s/trim", json={"maxlen": 0, "policy": "ACKED"})
    if target.redis:  # redis-server 7.0 cannot trim around entries: refused, nothing done
        assert "needs Redis 8.2 or newer" in problem(r, 400)["detail"]
        assert entry_ids(api) == ["1-0", "2-0", "3-0", "4-0"]
        # XDELEX ACKED, which 7.0 can express, removes what the trim would have.
        assert api.delete(f"{E}/2-0", params={"policy": "ACKED"}).status_code == 204
    else:
        assert r.json() == {"trimmed": 1}  # only 2-0 is needed by no group
    assert entry_ids(api) == ["1-0", "3-0", "4-0"]
    r = api.post("/v1/streams/s/trim", json={"minid": "4-0", "policy": "DELREF"})
    assert r.json() == {"trimmed": 2}
    assert entry_ids(api) == ["4-0"]
    assert pending(api) == {}  # DELREF took their references too
    # XADD's trim clause takes the policy as well.
    read(api, "a")  # 4-0 pending
    body = {"id": "5-0", "fields": {"n": "5"}, "trim": {"maxlen": 1, "policy": "DELREF"}}
    assert api.post(E, json=body).status_code == 201
    assert entry_ids(api) == ["5-0"]  # DELREF trims whatever g still needs
    assert pending(api) == {}
    if not target.redis:
        read(api, "a")  # 5-0 pending
        body = {"id": "6-0", "fields": {"n": "6"}, "trim": {"maxlen": 1, "policy": "ACKED"}}
        assert api.post(E, json=body).status_code == 201
        assert entry_ids(api) == ["5-0", "6-0"]  # both still needed by g


# --- bad input: 4xx, never 500 --------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "kw", "status"),
    [
        ("DELETE", E, {"params": {"id": "1-0", "policy": "NEVER"}}, 400),
        ("DELETE", f"{E}/1-0", {"params": {"policy": ""}}, 400),
        ("DELETE", E, {"params": {"id": "x", "policy": "ACKED"}}, 400),
        ("DELETE", f"{E}/x", {"params": {"policy": "ACKED"}}, 400),
        ("POST", "/v1/streams/s/trim", {"json": {"maxlen": 1, "policy": "SOME"}}, 422),
        ("POST", "/v1/streams/s/trim", {"json": {"maxlen": 1, "policy": 1}}, 422),
        ("POST", E, {"json": {"fields": {"a": "1"}, "trim": {"maxlen": 1, "policy": "x"}}}, 422),
        ("POST", f"{G}/ackdels", {"json": {"ids": []}}, 422),
        ("POST", f"{G}/ackdels", {"json": {"ids": ["1-0"], "policy": "ALL"}}, 422),
        ("POST", f"{G}/ackdels", {"json": {"ids": "1-0"}}, 422),
        ("POST", f"{G}/ackdels", {"json": {"ids": ["1-0", "nope"]}}, 400),
        ("POST", f"{G}/nacks", {"json": {"ids": ["1-0"]}}, 422),
        ("POST", f"{G}/nacks", {"json": {"ids": ["1-0"], "mode": "LATER"}}, 422),
        ("POST", f"{G}/nacks", {"json": {"ids": [], "mode": "FAIL"}}, 422),
        ("POST", f"{G}/nacks", {"json": {"ids": ["1-0"], "mode": "FAIL", "retry_count": -1}}, 422),
        ("POST", f"{G}/nacks", {"json": {"ids": ["1-0"], "mode": "FAIL", "force": "yes"}}, 422),
        ("POST", f"{G}/nacks", {"json": {"ids": ["1-0", "1-x"], "mode": "FAIL"}}, 400),
        ("POST", f"{G}/consumers/a/reads", {"json": {"claim_idle_ms": -1}}, 422),
        ("POST", f"{G}/consumers/a/reads", {"json": {"claim_idle_ms": "5"}}, 422),
        ("POST", f"{G}/consumers/a/reads", {"json": {"claim_idle_ms": 2**63}}, 422),
    ],
)
def test_bad_input_is_a_4xx_problem(
    api: httpx.Client, method: str, path: str, kw: dict[str, Any], status: int
) -> None:
    stream(api, 1)
    before = api.get(E).json()
    body = problem(api.request(method, path, **kw), status)
    assert body["error"].startswith("ERR")
    assert api.get(E).json() == before  # nothing half-done
    assert pending(api) == {}


def test_bad_ids_answer_redis_text(api: httpx.Client) -> None:
    stream(api, 1)
    for r in (
        api.post(f"{G}/ackdels", json={"ids": ["1-0", "nope"]}),
        api.post(f"{G}/nacks", json={"ids": ["nope"], "mode": "FAIL"}),
        api.delete(E, params={"id": "nope", "policy": "DELREF"}),
    ):
        assert problem(r, 400)["error"] == INVALID_ID


def test_a_missing_group_is_nogroup(api: httpx.Client) -> None:
    stream(api, 1)
    for r in (
        api.post("/v1/streams/s/groups/nope/ackdels", json={"ids": ["1-0"]}),
        api.post("/v1/streams/s/groups/nope/nacks", json={"ids": ["1-0"], "mode": "FAIL"}),
        api.post("/v1/streams/x/groups/g/nacks", json={"ids": ["1-0"], "mode": "FAIL"}),
        api.post("/v1/streams/x/groups/g/ackdels", json={"ids": ["1-0"], "policy": "ACKED"}),
    ):
        assert "No such key" in problem(r, 404, "NOGROUP")["error"]


# --- access ---------------------------------------------------------------------------------

SECRET = "the tests' application secret, long enough"
ADMIN = {"Authorization": "Bearer admin"}


def token(**grant: list[str]) -> dict[str, str]:
    claims = {"sub": "worker", "exp": int(time.time()) + 600, "xstreams": grant}
    return {"Authorization": f"Bearer {jwt.encode(claims, SECRET, algorithm='HS256')}"}


@pytest.fixture(scope="module")
def guarded(target: Target, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server of its own on the target that demands credentials: the admin token, or a
    JWT signed with ``SECRET``."""
    data = tmp_path_factory.mktemp("later-access")
    srv = target.serve(data, "--token", "admin", "--jwt-secret", SECRET)
    yield srv
    srv.stop()


@pytest.fixture
def c(guarded: Server) -> Iterator[httpx.Client]:
    """A client of ``guarded``, whose keyspace holds `s` with 1-0 pending for `a` in `g`."""
    with httpx.Client(base_url=guarded.url, timeout=30) as client:
        for argv in (
            ["FLUSHALL"],
            ["XADD", "s", "1-0", "n", "1"],
            ["XGROUP", "CREATE", "s", "g", "0"],
            ["XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">"],
        ):
            assert client.post("/", json=argv, headers=ADMIN).status_code == 200
        yield client


def test_acknowledge_and_delete_needs_consume_and_write(c: httpx.Client) -> None:
    """A consumer's credential may not delete (XACKDEL needs consume and write): refused,
    nothing done; a writer's without consume neither; XNACK is a consumer's act."""
    ack_delete = {"ids": ["1-0"], "policy": "DELREF"}
    for who in (token(consume=["s"], read=["s"]), token(write=["s"])):
        problem(c.post(f"{G}/ackdels", json=ack_delete, headers=who), 403, "NOPERM")
    # Write granted, but not on this stream.
    who = token(consume=["s", "t"], write=["t"])
    problem(c.post(f"{G}/ackdels", json=ack_delete, headers=who), 403, "NOPERM")
    nack = {"ids": ["1-0"], "mode": "FAIL"}
    problem(c.post(f"{G}/nacks", json=nack, headers=token(write=["s"], read=["s"])), 403)
    rows = c.post("/", json=["XPENDING", "s", "g"], headers=ADMIN).json()
    assert rows["result"][0] == 1  # still pending: nothing was done
    assert c.post("/", json=["XLEN", "s"], headers=ADMIN).json() == {"result": 1}


def test_a_consume_and_write_credential_acknowledges_and_deletes(c: httpx.Client) -> None:
    nack = {"ids": ["1-0"], "mode": "FAIL"}
    r = c.post(f"{G}/nacks", json=nack, headers=token(consume=["s"]))
    assert r.status_code == 200 and r.json() == {"released": 1}, r.text
    worker = token(consume=["s"], write=["s"])
    r = c.post(f"{G}/consumers/b/reads", json={"claim_idle_ms": 0}, headers=worker)
    assert [e["id"] for e in r.json()["entries"]] == ["1-0"]
    r = c.post(f"{G}/ackdels", json={"ids": ["1-0"]}, headers=worker)
    assert r.status_code == 200, r.text
    assert r.json()["results"] == [{"id": "1-0", "status": "deleted"}]
    assert c.post("/", json=["XLEN", "s"], headers=ADMIN).json() == {"result": 0}
