"""Consumer groups and consumers: XINFO GROUPS / CONSUMERS and XGROUP."""

from __future__ import annotations

import httpx
import pytest

from tests.api.rest.conftest import add, problem

G = "/v1/streams/s/groups"


def test_create_group_answers_201_with_location(api: httpx.Client) -> None:
    add(api, "s", ("a", "1"), id="1-0")
    r = api.post(G, json={"name": "g"})
    assert r.status_code == 201
    assert r.headers["location"] == "/v1/streams/s/groups/g"
    assert r.json() == {
        "name": "g",
        "consumers": 0,
        "pending": 0,
        "last_delivered_id": "1-0",
        "entries_read": None,  # as redis-server 7.0 says after CREATE ... $
        "lag": 0,
        "policy": None,  # a plain Redis group
    }
    assert api.get(r.headers["location"]).json() == r.json()


def test_busygroup_is_409(api: httpx.Client) -> None:
    add(api, "s", ("a", "1"))
    api.post(G, json={"name": "g"})
    p = problem(api.post(G, json={"name": "g"}), 409, "BUSYGROUP")
    assert p["error"] == "BUSYGROUP Consumer Group name already exists"


def test_create_on_a_missing_stream_needs_mkstream(api: httpx.Client) -> None:
    problem(api.post(G, json={"name": "g"}), 404)
    r = api.post(G, json={"name": "g", "mkstream": True, "id": "0"})
    assert r.status_code == 201
    assert api.get("/v1/streams/s").json()["length"] == 0


def test_create_with_entries_read_and_unknown_lag(api: httpx.Client) -> None:
    for i in range(1, 4):
        add(api, "s", ("a", "1"), id=f"{i}-0")
    api.delete("/v1/streams/s/entries/2-0")
    g = api.post(G, json={"name": "g", "id": "1-0"}).json()
    assert g["entries_read"] is None and g["lag"] is None  # a tombstone after 1-0: unknown
    g = api.post(G, json={"name": "h", "id": "3-0", "entries_read": 3}).json()
    assert g["entries_read"] == 3 and g["lag"] == 0


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"name": "g", "id": "x"}, 400),
        ({"name": "g", "id": "-"}, 400),
        ({"name": "g", "entries_read": -1}, 422),
        ({"id": "0"}, 422),
        ({"name": ""}, 422),
    ],
)
def test_create_errors(api: httpx.Client, body: dict[str, object], status: int) -> None:
    add(api, "s", ("a", "1"))
    problem(api.post(G, json=body), status)


def test_list_get_set_id_destroy(api: httpx.Client) -> None:
    add(api, "s", ("a", "1"), id="1-0")
    add(api, "s", ("a", "1"), id="2-0")
    api.post(G, json={"name": "b", "id": "0"})
    api.post(G, json={"name": "a", "id": "$"})
    assert [g["name"] for g in api.get(G).json()["groups"]] == ["a", "b"]
    g = api.patch(f"{G}/b", json={"last_delivered_id": "1-0", "entries_read": 1}).json()
    assert g["last_delivered_id"] == "1-0" and g["entries_read"] == 1 and g["lag"] == 1
    g = api.patch(f"{G}/b", json={"last_delivered_id": "$"}).json()
    assert g["last_delivered_id"] == "2-0" and g["entries_read"] is None
    assert api.delete(f"{G}/b").status_code == 204
    problem(api.delete(f"{G}/b"), 404, "NOGROUP")
    problem(api.get(f"{G}/b"), 404, "NOGROUP")
    problem(api.patch(f"{G}/b", json={"last_delivered_id": "0"}), 404, "NOGROUP")
    problem(api.patch(f"{G}/a", json={"last_delivered_id": "x"}), 400)
    problem(api.patch(f"{G}/a", json={}), 422)
    problem(api.get("/v1/streams/nope/groups"), 404)


def test_consumers(api: httpx.Client) -> None:
    add(api, "s", ("a", "1"), id="1-0")
    api.post(G, json={"name": "g", "id": "0"})
    c = "/v1/streams/s/groups/g/consumers"
    r = api.put(f"{c}/alice")
    assert r.status_code == 201
    assert r.headers["location"] == f"{c}/alice"
    assert r.json()["name"] == "alice" and r.json()["pending"] == 0
    again = api.put(f"{c}/alice")
    assert again.status_code == 200 and "location" not in again.headers
    api.post(f"{c}/bob/reads", json={})
    rows = api.get(c).json()["consumers"]
    assert [(x["name"], x["pending"]) for x in rows] == [("alice", 0), ("bob", 1)]
    assert all(isinstance(x["idle_ms"], int) and x["idle_ms"] >= 0 for x in rows)
    assert api.delete(f"{c}/bob").json() == {"pending": 1}
    problem(api.delete(f"{c}/bob"), 404)
    assert api.get(f"{G}/g").json()["pending"] == 0
    problem(api.put("/v1/streams/s/groups/nope/consumers/x"), 404, "NOGROUP")
    problem(api.get("/v1/streams/s/groups/nope/consumers"), 404, "NOGROUP")
