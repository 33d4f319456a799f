"""Names holding ``/`` (and ``%``, spaces) on the REST resources, on the three targets.

A name is one path segment, percent-encoded: ``/`` as ``%2F`` (or ``%2f``), ``%`` as ``%25``
(app/api/raw_paths.py). Each case checks the key the command endpoint sees, so a name that
decoded twice, or split on its ``/``, would show as another key. A literal ``/`` stays a
separator: it names no route, never another stream.
"""

from __future__ import annotations

from urllib.parse import quote

import httpx
import pytest

from tests.api.rest.conftest import problem
from tests.conftest import Commands

# Keys the /ds surface makes; one whose name holds an escape itself (%2F must stay those
# three characters); one with % and spaces.
NAMES = ["v1/stream/orders", "50% off/%2F a b", "50% off"]
GROUP = "billing/eu"
CONSUMER = "alice/1 %"


def seg(name: str) -> str:
    """One path segment, as a client's URL library writes it (``/`` as ``%2F``)."""
    return quote(name, safe="")


@pytest.mark.parametrize("name", NAMES)
def test_append_read_group_ack_pending_and_claim(
    api: httpx.Client, xs: Commands, name: str
) -> None:
    s = f"/v1/streams/{seg(name)}"
    added = api.post(f"{s}/entries", json={"fields": {"n": "1"}})
    assert added.status_code == 201, added.text
    first = added.json()["ids"][0]
    # The Location the service built names the same stream: it round-trips.
    assert added.headers["location"] == f"{s}/entries/{first}"
    assert api.get(added.headers["location"]).json()["id"] == first
    second = api.post(f"{s}/entries", json={"fields": {"n": "2"}}).json()["ids"][0]
    assert xs("KEYS", "*") == [name]  # the key itself: nothing split or decoded twice
    assert [e[0] for e in xs("XRANGE", name, "-", "+")] == [first, second]

    page = api.get(f"{s}/entries").json()
    assert [e["id"] for e in page["entries"]] == [first, second]
    assert api.get(s).json()["length"] == 2

    made = api.post(f"{s}/groups", json={"name": GROUP, "id": "0"})
    assert made.status_code == 201, made.text
    g = f"{s}/groups/{seg(GROUP)}"
    assert made.headers["location"] == g
    assert api.get(g).json()["name"] == GROUP
    assert xs("XINFO", "GROUPS", name)[0][1] == GROUP

    read = api.post(f"{g}/consumers/{seg(CONSUMER)}/reads", json={"count": 10})
    assert read.status_code == 200, read.text
    assert [e["id"] for e in read.json()["entries"]] == [first, second]
    consumers = api.get(f"{g}/consumers").json()["consumers"]
    assert [c["name"] for c in consumers] == [CONSUMER]

    pending = api.get(f"{g}/pending", params={"count": 10}).json()
    assert pending["consumers"] == [{"name": CONSUMER, "pending": 2}]
    assert [(p["id"], p["consumer"]) for p in pending["entries"]] == [
        (first, CONSUMER),
        (second, CONSUMER),
    ]
    claimed = api.post(f"{g}/claims", json={"consumer": "bob/2", "min_idle_ms": 0, "ids": [second]})
    assert claimed.status_code == 200, claimed.text
    assert claimed.json()["ids"] == [second]

    acked = api.post(f"{g}/acks", json={"ids": [first, second]})
    assert acked.json() == {"acknowledged": 2}
    assert api.get(f"{g}/pending").json()["count"] == 0
    assert xs("XPENDING", name, GROUP)[0] == 0


def test_lowercase_escapes_name_the_same_stream(api: httpx.Client, xs: Commands) -> None:
    upper = api.post("/v1/streams/v1%2Fstream%2Forders/entries", json={"fields": {"n": "1"}})
    assert upper.status_code == 201, upper.text
    lower = api.get("/v1/streams/v1%2fstream%2forders/entries").json()
    assert [e["id"] for e in lower["entries"]] == upper.json()["ids"]
    assert xs("KEYS", "*") == ["v1/stream/orders"]


def test_a_literal_slash_is_no_route_not_another_stream(api: httpx.Client, xs: Commands) -> None:
    """``/v1/streams/v1/stream/orders/entries`` matches no route, though the streams ``v1``
    and ``v1/stream/orders`` both exist: 404 for the path, which names no stream."""
    xs("XADD", "v1", "1-1", "n", "1")
    xs("XADD", "v1/stream/orders", "1-1", "n", "1")
    for method in ("GET", "POST"):
        r = api.request(method, "/v1/streams/v1/stream/orders/entries", json={"fields": {}})
        body = problem(r, 404)
        assert body["error"] == "ERR not found"
        assert "stream" not in body
    assert [e[0] for e in xs("XRANGE", "v1", "-", "+")] == ["1-1"]  # nothing appended


def test_a_missing_stream_holding_a_slash_is_named_in_the_problem(api: httpx.Client) -> None:
    body = problem(api.get("/v1/streams/no%2Fsuch/entries"), 404)
    assert body["error"] == "ERR no such key"
    assert body["stream"] == "no/such"


def test_next_links_round_trip_names_holding_slashes(api: httpx.Client, xs: Commands) -> None:
    """The ``Link`` of a page of groups keeps the stream's ``%2F``, so following it pages on
    in the same stream; the group it resumes after is quoted too."""
    name = "v1/stream/orders"
    xs("XADD", name, "1-1", "n", "1")
    groups = ["a/1", "b/2", "c/3"]
    for group in groups:
        xs("XGROUP", "CREATE", name, group, "0")
    assert follow(api, f"/v1/streams/{seg(name)}/groups", "groups") == groups
    xs("XADD", name, "1-2", "n", "2")
    entries = follow(api, f"/v1/streams/{seg(name)}/entries", "entries")
    assert entries == ["1-1", "1-2"]


def follow(api: httpx.Client, path: str, member: str) -> list[str]:
    """Every page of a listing, one row a page, by its ``Link`` headers: the rows' names or
    IDs. Each link must stay on ``path``, the stream's ``%2F`` kept."""
    seen: list[str] = []
    r = api.get(path, params={"count": 1})
    while True:
        assert r.status_code == 200, r.text
        seen += [row.get("name") or row["id"] for row in r.json()[member]]
        link = r.headers.get("link")
        if link is None:
            return seen
        target = link[link.index("<") + 1 : link.index(">")]
        assert target.startswith(path + "?"), target
        r = api.get(target)
