"""Streams: SCAN listing, XINFO STREAM [FULL], DEL, XTRIM, XSETID."""

from __future__ import annotations

import httpx
import pytest

from tests.api.rest.conftest import add, problem


def test_list_pages_through_every_stream_once(api: httpx.Client) -> None:
    names = {f"s{i}" for i in range(25)}
    for name in names:
        add(api, name, ("a", "1"))
    seen: list[str] = []
    cursor = 0
    for _ in range(100):
        page = api.get("/v1/streams", params={"cursor": cursor, "count": 4}).json()
        seen += [s["name"] for s in page["streams"]]
        if page["next_cursor"] is None:
            break
        cursor = page["next_cursor"]
    assert sorted(seen) == sorted(names)
    one = api.get("/v1/streams", params={"match": "s1?", "count": 1000}).json()
    assert sorted(s["name"] for s in one["streams"]) == sorted(f"s1{i}" for i in range(10))
    summary = one["streams"][0]
    assert summary["length"] == 1 and summary["groups"] == 0
    assert summary["last_generated_id"].count("-") == 1


def test_list_shows_first_and_last_entry_and_entries_added(api: httpx.Client) -> None:
    """What a dashboard draws from one page: entry times (an ID's first part) and the rate of
    appends (``entries_added`` between two pages), trimmed and deleted entries included."""
    for i in range(1, 5):
        add(api, "s", ("a", str(i)), id=f"{i}000-0")
    api.post("/v1/streams/s/trim", json={"maxlen": 2})
    api.delete("/v1/streams/s/entries/4000-0")
    api.post("/", json=["XADD", "empty", "5-0", "a", "1"])
    api.post("/", json=["XDEL", "empty", "5-0"])
    page = api.get("/v1/streams", params={"count": 100}).json()
    by_name = {s["name"]: s for s in page["streams"]}
    assert by_name["s"] == {
        "name": "s", "length": 1, "groups": 0, "last_generated_id": "4000-0",
        "entries_added": 4, "first_entry_id": "3000-0", "last_entry_id": "3000-0",
    }  # fmt: skip
    assert by_name["empty"]["length"] == 0 and by_name["empty"]["entries_added"] == 1
    assert by_name["empty"]["first_entry_id"] is None
    assert by_name["empty"]["last_entry_id"] is None


def test_list_on_an_empty_keyspace(api: httpx.Client) -> None:
    assert api.get("/v1/streams").json() == {"streams": [], "next_cursor": None}
    problem(api.get("/v1/streams", params={"count": 0}), 400)
    problem(api.get("/v1/streams", params={"cursor": -1}), 400)


def test_info(api: httpx.Client) -> None:
    add(api, "s", ("a", "1"), id="1-0")
    add(api, "s", ("a", "1"), ("a", "2"), id="2-0")
    api.post("/v1/streams/s/groups", json={"name": "g", "id": "0"})
    info = api.get("/v1/streams/s").json()
    assert info["name"] == "s"
    assert info["length"] == 2 and info["entries_added"] == 2 and info["groups"] == 1
    assert info["last_generated_id"] == "2-0"
    assert info["recorded_first_entry_id"] == "1-0"
    assert info["first_entry"] == {"id": "1-0", "fields": {"a": "1"}}
    pairs = api.get("/v1/streams/s", params={"fields": "pairs"}).json()
    assert pairs["last_entry"]["fields"] == [["a", "1"], ["a", "2"]]


def test_full_info(api: httpx.Client) -> None:
    for i in range(1, 4):
        add(api, "s", ("n", str(i)), id=f"{i}-0")
    api.post("/v1/streams/s/groups", json={"name": "g", "id": "0"})
    api.post("/v1/streams/s/groups/g/consumers/alice/reads", json={"count": 2})
    full = api.get("/v1/streams/s", params={"full": "true", "count": 1}).json()
    assert [e["id"] for e in full["entries"]] == ["1-0"]
    (g,) = full["groups"]
    assert g["name"] == "g" and g["pel_count"] == 2 and g["entries_read"] == 2 and g["lag"] == 1
    assert len(g["pending"]) == 1 and g["pending"][0]["consumer"] == "alice"
    assert g["consumers"][0]["name"] == "alice" and g["consumers"][0]["pel_count"] == 2
    all_ = api.get("/v1/streams/s", params={"full": "true", "count": 0}).json()
    assert len(all_["entries"]) == 3 and len(all_["groups"][0]["pending"]) == 2


def test_info_of_a_missing_stream_is_404(api: httpx.Client) -> None:
    p = problem(api.get("/v1/streams/nope"), 404, "ERR")
    assert p["error"] == "ERR no such key"
    assert p["instance"] == "/v1/streams/nope"


def test_delete_stream(api: httpx.Client) -> None:
    add(api, "s", ("a", "1"))
    assert api.delete("/v1/streams/s").status_code == 204
    problem(api.delete("/v1/streams/s"), 404)
    problem(api.get("/v1/streams/s"), 404)


def test_trim(api: httpx.Client) -> None:
    for i in range(1, 11):
        add(api, "s", ("n", str(i)), id=f"{i}-0")
    assert api.post("/v1/streams/s/trim", json={"maxlen": 8}).json() == {"trimmed": 2}
    assert api.post("/v1/streams/s/trim", json={"minid": "5"}).json() == {"trimmed": 2}
    # `~` removes whole nodes only: with 6 entries in one node, nothing goes.
    r = api.post("/v1/streams/s/trim", json={"maxlen": 1, "approximate": True})
    assert r.json() == {"trimmed": 0}
    r = api.post("/v1/streams/s/trim", json={"maxlen": 1, "approximate": True, "limit": 10})
    assert r.json() == {"trimmed": 0}
    assert api.get("/v1/streams/s").json()["length"] == 6


@pytest.mark.parametrize(
    ("body", "status"),
    [({}, 400), ({"maxlen": -1}, 400), ({"maxlen": 1, "limit": 1}, 400), ({"maxlen": "x"}, 422)],
)
def test_trim_errors(api: httpx.Client, body: dict[str, object], status: int) -> None:
    add(api, "s", ("a", "1"))
    problem(api.post("/v1/streams/s/trim", json=body), status)


def test_trim_a_missing_stream_is_404(api: httpx.Client) -> None:
    problem(api.post("/v1/streams/nope/trim", json={"maxlen": 1}), 404)


def test_set_last_id(api: httpx.Client) -> None:
    add(api, "s", ("a", "1"), id="5-0")
    r = api.put("/v1/streams/s/last-id", json={"last_id": "9-0", "entries_added": 7})
    assert r.status_code == 204
    assert api.put("/v1/streams/s/last-id", json={"last_id": "9-0"}).status_code == 204
    info = api.get("/v1/streams/s").json()
    assert info["last_generated_id"] == "9-0" and info["entries_added"] == 7
    assert add(api, "s", ("a", "1")) != "9-0"
    p = problem(api.put("/v1/streams/s/last-id", json={"last_id": "1-0"}), 409)
    assert p["error"] == "ERR The ID specified in XSETID is smaller than the target stream top item"


@pytest.mark.parametrize(
    ("body", "status", "text"),
    [
        ({"last_id": "x"}, 400, "ERR Invalid stream ID specified as stream command argument"),
        ({"last_id": "9-0", "max_deleted_id": "10-0"}, 400,
         "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"),
        ({"last_id": "9-0", "entries_added": 0}, 409,
         "ERR The entries_added specified in XSETID is smaller than the target stream length"),
    ],
)  # fmt: skip
def test_set_last_id_errors(
    api: httpx.Client, body: dict[str, object], status: int, text: str
) -> None:
    add(api, "s", ("a", "1"), id="5-0")
    assert problem(api.put("/v1/streams/s/last-id", json=body), status)["error"] == text


def test_set_last_id_of_a_missing_stream_is_404(api: httpx.Client) -> None:
    problem(api.put("/v1/streams/nope/last-id", json={"last_id": "1-0"}), 404)
    problem(api.put("/v1/streams/s/last-id", json={}), 422)
