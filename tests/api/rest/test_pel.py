"""Reading as a consumer (XREADGROUP), XACK, XPENDING, XCLAIM and XAUTOCLAIM, on a manual clock."""

from __future__ import annotations

import httpx
import pytest

from tests.api.rest.conftest import Local, add, problem

G = "/v1/streams/s/groups/g"


@pytest.fixture
def c(local: Local) -> httpx.Client:
    """A stream `s` with entries 1-0..5-0 and a group `g` at 0."""
    for i in range(1, 6):
        add(local.client, "s", ("n", str(i)), id=f"{i}-0")
    assert (
        local.client.post("/v1/streams/s/groups", json={"name": "g", "id": "0"}).status_code == 201
    )
    return local.client


def read(c: httpx.Client, consumer: str, **body: object) -> list[dict[str, object]]:
    r = c.post(f"{G}/consumers/{consumer}/reads", json=body)
    assert r.status_code == 200, r.text
    entries: list[dict[str, object]] = r.json()["entries"]
    return entries


def ids(entries: list[dict[str, object]]) -> list[object]:
    return [e["id"] for e in entries]


def test_new_entries_go_to_one_consumer_each(c: httpx.Client) -> None:
    assert ids(read(c, "alice", count=2)) == ["1-0", "2-0"]
    assert ids(read(c, "bob", count=2)) == ["3-0", "4-0"]
    assert ids(read(c, "alice")) == ["5-0"]
    assert read(c, "alice") == []
    g = c.get(G).json()
    assert g["pending"] == 5 and g["last_delivered_id"] == "5-0" and g["entries_read"] == 5


def test_history_and_deleted_entries(c: httpx.Client) -> None:
    read(c, "alice", count=3)
    c.delete("/v1/streams/s/entries/2-0")
    history = read(c, "alice", id="0")
    assert history[0] == {"id": "1-0", "fields": {"n": "1"}}
    assert history[1] == {"id": "2-0", "fields": None}  # deleted since delivery
    assert ids(history) == ["1-0", "2-0", "3-0"]
    assert ids(read(c, "alice", id="1-0", count=1)) == ["2-0"]
    assert read(c, "bob", id="0") == []
    pairs = c.post(f"{G}/consumers/alice/reads", params={"fields": "pairs"}, json={"id": "0"})
    assert pairs.json()["entries"][0]["fields"] == [["n", "1"]]


def test_noack_reads_leave_nothing_pending(c: httpx.Client) -> None:
    assert ids(read(c, "alice", noack=True)) == ["1-0", "2-0", "3-0", "4-0", "5-0"]
    assert c.get(f"{G}/pending").json()["count"] == 0


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"id": "$"}, 400, "ERR"),
        ({"id": "x"}, 400, "ERR"),
        ({"count": 0}, 422, "ERR"),
        ({"block_ms": -1}, 422, "ERR"),
    ],
)
def test_read_errors(c: httpx.Client, body: dict[str, object], status: int, code: str) -> None:
    problem(c.post(f"{G}/consumers/alice/reads", json=body), status, code)


def test_read_from_a_missing_group_is_nogroup(c: httpx.Client) -> None:
    p = problem(c.post("/v1/streams/s/groups/nope/consumers/a/reads", json={}), 404, "NOGROUP")
    assert "XREADGROUP" in p["error"]


def test_ack(c: httpx.Client) -> None:
    read(c, "alice", count=3)
    r = c.post(f"{G}/acks", json={"ids": ["1-0", "2-0", "9-0"]})
    assert r.json() == {"acknowledged": 2}
    assert c.post(f"{G}/acks", json={"ids": ["1-0"]}).json() == {"acknowledged": 0}
    problem(c.post(f"{G}/acks", json={"ids": ["x"]}), 400)
    problem(c.post(f"{G}/acks", json={"ids": []}), 422)
    problem(c.post("/v1/streams/s/groups/nope/acks", json={"ids": ["1-0"]}), 404, "NOGROUP")


def test_pending_summary_and_detail(local: Local, c: httpx.Client) -> None:
    empty = c.get(f"{G}/pending").json()
    assert empty == {
        "count": 0,
        "first_id": None,
        "last_id": None,
        "consumers": [],
        "entries": None,
    }
    read(c, "bob", count=2)
    local.clock.advance(1000)
    read(c, "alice", count=1)
    local.clock.advance(500)
    s = c.get(f"{G}/pending").json()
    assert (s["count"], s["first_id"], s["last_id"]) == (3, "1-0", "3-0")
    assert s["consumers"] == [{"name": "alice", "pending": 1}, {"name": "bob", "pending": 2}]
    assert s["entries"] is None
    rows = c.get(f"{G}/pending", params={"count": 10}).json()["entries"]
    assert rows == [
        {"id": "1-0", "consumer": "bob", "idle_ms": 1500, "delivery_count": 1},
        {"id": "2-0", "consumer": "bob", "idle_ms": 1500, "delivery_count": 1},
        {"id": "3-0", "consumer": "alice", "idle_ms": 500, "delivery_count": 1},
    ]
    q = {"count": 10, "min_idle_ms": 1000}
    assert ids(c.get(f"{G}/pending", params=q).json()["entries"]) == ["1-0", "2-0"]
    q = {"count": 10, "consumer": "alice"}
    assert ids(c.get(f"{G}/pending", params=q).json()["entries"]) == ["3-0"]
    q = {"count": 1, "start": "(1-0", "end": "+"}
    assert ids(c.get(f"{G}/pending", params=q).json()["entries"]) == ["2-0"]
    assert c.get(f"{G}/pending", params={"count": 0}).json()["entries"] == []
    assert c.get(f"{G}/pending", params={"count": 5, "consumer": "zed"}).json()["entries"] == []
    problem(c.get(f"{G}/pending", params={"count": 1, "start": "x"}), 400)
    problem(c.get(f"{G}/pending", params={"count": -1}), 400)
    problem(c.get("/v1/streams/s/groups/nope/pending"), 404, "NOGROUP")


def test_claim(local: Local, c: httpx.Client) -> None:
    read(c, "alice", count=3)
    local.clock.advance(10_000)
    body = {"consumer": "bob", "min_idle_ms": 20_000, "ids": ["1-0"]}
    assert c.post(f"{G}/claims", json=body).json() == {"ids": [], "entries": []}
    body = {"consumer": "bob", "min_idle_ms": 5_000, "ids": ["1-0", "2-0", "9-0"]}
    got = c.post(f"{G}/claims", json=body).json()
    assert got["ids"] == ["1-0", "2-0"]
    assert got["entries"][0] == {"id": "1-0", "fields": {"n": "1"}}
    rows = c.get(f"{G}/pending", params={"count": 10}).json()["entries"]
    assert [(r["id"], r["consumer"], r["delivery_count"]) for r in rows] == [
        ("1-0", "bob", 2),
        ("2-0", "bob", 2),
        ("3-0", "alice", 1),
    ]
    body = {"consumer": "carol", "min_idle_ms": 0, "ids": ["3-0"], "justid": True,
            "idle_ms": 42, "retry_count": 7}  # fmt: skip
    assert c.post(f"{G}/claims", json=body).json() == {"ids": ["3-0"], "entries": None}
    row = c.get(f"{G}/pending", params={"count": 1, "start": "3-0"}).json()["entries"][0]
    assert row == {"id": "3-0", "consumer": "carol", "idle_ms": 42, "delivery_count": 7}


def test_claim_force_lastid_and_deleted_entries(c: httpx.Client) -> None:
    read(c, "alice", count=1)
    c.delete("/v1/streams/s/entries/1-0")
    body = {"consumer": "bob", "min_idle_ms": 0, "ids": ["1-0", "4-0"], "force": True,
            "last_id": "4-0"}  # fmt: skip
    got = c.post(f"{G}/claims", json=body).json()
    assert got["ids"] == ["4-0"]  # 1-0 was deleted: it leaves the PEL; 4-0 forced in
    pending = c.get(f"{G}/pending").json()
    assert (pending["count"], pending["first_id"]) == (1, "4-0")
    assert c.get(G).json()["last_delivered_id"] == "4-0"


@pytest.mark.parametrize(
    "body",
    [
        {"consumer": "b", "min_idle_ms": -1, "ids": ["1-0"]},
        {"consumer": "b", "min_idle_ms": 0, "ids": []},
        {"consumer": "b", "ids": ["1-0"]},
        {"consumer": "b", "min_idle_ms": 0, "ids": ["1-0"], "retry_count": -1},
    ],
)
def test_claim_malformed(c: httpx.Client, body: dict[str, object]) -> None:
    problem(c.post(f"{G}/claims", json=body), 422)


def test_claim_errors(c: httpx.Client) -> None:
    problem(c.post(f"{G}/claims", json={"consumer": "b", "min_idle_ms": 0, "ids": ["x"]}), 400)
    body = {"consumer": "b", "min_idle_ms": 0, "ids": ["1-0"]}
    problem(c.post("/v1/streams/s/groups/nope/claims", json=body), 404, "NOGROUP")


def test_autoclaim_walks_the_pel_with_a_cursor(local: Local, c: httpx.Client) -> None:
    read(c, "alice")
    c.delete("/v1/streams/s/entries/2-0")
    local.clock.advance(100)
    body = {"consumer": "bob", "min_idle_ms": 50, "count": 2}
    first = c.post(f"{G}/autoclaims", json=body).json()
    # A deleted entry counts toward COUNT, as in Redis.
    assert first["ids"] == ["1-0"]
    assert first["deleted_ids"] == ["2-0"]
    assert first["next_start"] == "3-0"
    assert first["entries"] == [{"id": "1-0", "fields": {"n": "1"}}]
    body = {**body, "start": first["next_start"], "justid": True, "count": 10}
    rest = c.post(f"{G}/autoclaims", json=body)
    assert rest.json() == {"next_start": "0-0", "ids": ["3-0", "4-0", "5-0"], "entries": None,
                           "deleted_ids": []}  # fmt: skip
    body = {"consumer": "bob", "min_idle_ms": 50}
    again = c.post(f"{G}/autoclaims", json=body).json()
    assert again["ids"] == []  # just claimed: not idle any more


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"consumer": "b", "min_idle_ms": 0, "count": 0}, 422),
        ({"consumer": "b", "min_idle_ms": 0, "start": "x"}, 400),
        ({"min_idle_ms": 0}, 422),
    ],
)
def test_autoclaim_errors(c: httpx.Client, body: dict[str, object], status: int) -> None:
    problem(c.post(f"{G}/autoclaims", json=body), status)
