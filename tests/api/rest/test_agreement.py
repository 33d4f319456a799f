"""REST answers agree with the same operation through the Redis-command endpoint.

Both surfaces call the same engine operations; these cases check the shaping on each side
says the same thing (IDs, fields in order, counters, PEL rows, cursors, errors).
"""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import Commands, ReplyError


def _rest_entries(entries: list[dict[str, Any]]) -> list[list[Any]]:
    return [[e["id"], [x for pair in e["fields"] for x in pair]] for e in entries]


def _setup(xs: Commands) -> None:
    xs("XADD", "s", "1-0", "a", "1", "a", "2")
    xs("XADD", "s", "2-0", "b", "1")
    xs("XADD", "s", "3-0", "c", "1", "d", "2")
    xs("XADD", "s", "4-0", "e", "1")
    xs("XGROUP", "CREATE", "s", "g", "0")
    xs("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
    xs("XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "s", ">")
    xs("XDEL", "s", "2-0")


def test_ranges_agree(xs: Commands, api: httpx.Client) -> None:
    _setup(xs)
    for start, end in (("-", "+"), ("(1-0", "+"), ("2", "(4-0"), ("1-0", "1-0")):
        rest = api.get("/v1/streams/s/entries", params={"start": start, "end": end,
                                                        "fields": "pairs"})  # fmt: skip
        assert _rest_entries(rest.json()["entries"]) == xs("XRANGE", "s", start, end)
        q = {"start": start, "end": end, "order": "desc", "fields": "pairs"}
        rev = api.get("/v1/streams/s/entries", params=q)
        assert _rest_entries(rev.json()["entries"]) == xs("XREVRANGE", "s", end, start)


def test_xadd_ids_agree(xs: Commands, api: httpx.Client) -> None:
    xs("XADD", "s", "5-3", "a", "1")
    r = api.post("/v1/streams/s/entries", json={"id": "5-*", "fields": {"a": "1"}})
    assert r.json()["ids"] == ["5-4"]
    assert xs("XADD", "s", "5-*", "a", "1") == "5-5"
    err = xs("XADD", "s", "5-5", "a", "1")
    assert isinstance(err, ReplyError)
    r = api.post("/v1/streams/s/entries", json={"id": "5-5", "fields": {"a": "1"}})
    assert r.json()["error"] == err


def test_stream_info_agrees(xs: Commands, api: httpx.Client) -> None:
    _setup(xs)
    raw = xs("XINFO", "STREAM", "s")
    info = dict(zip(raw[0::2], raw[1::2], strict=True))
    rest = api.get("/v1/streams/s", params={"fields": "pairs"}).json()
    keys = [
        "length",
        "radix-tree-keys",
        "radix-tree-nodes",
        "last-generated-id",
        "max-deleted-entry-id",
        "entries-added",
        "recorded-first-entry-id",
        "groups",
    ]
    for key in keys:
        assert rest[key.replace("-", "_")] == info[key], key
    assert _rest_entries([rest["first_entry"]]) == [info["first-entry"]]
    assert _rest_entries([rest["last_entry"]]) == [info["last-entry"]]


def test_groups_and_consumers_agree(xs: Commands, api: httpx.Client) -> None:
    _setup(xs)
    (raw,) = xs("XINFO", "GROUPS", "s")
    group = dict(zip(raw[0::2], raw[1::2], strict=True))
    rest = api.get("/v1/streams/s/groups").json()["groups"][0]
    assert rest == {
        "name": group["name"],
        "consumers": group["consumers"],
        "pending": group["pending"],
        "last_delivered_id": group["last-delivered-id"],
        "entries_read": group["entries-read"],
        "lag": group["lag"],
        "policy": None,  # the service's own, not XINFO's
    }
    rows = [dict(zip(r[0::2], r[1::2], strict=True)) for r in xs("XINFO", "CONSUMERS", "s", "g")]
    rest_rows = api.get("/v1/streams/s/groups/g/consumers").json()["consumers"]
    assert [(c["name"], c["pending"]) for c in rest_rows] == [
        (r["name"], r["pending"]) for r in rows
    ]


def test_pending_agrees(xs: Commands, api: httpx.Client) -> None:
    _setup(xs)
    count, first, last, consumers = xs("XPENDING", "s", "g")
    rest = api.get("/v1/streams/s/groups/g/pending", params={"count": 10}).json()
    assert (rest["count"], rest["first_id"], rest["last_id"]) == (count, first, last)
    assert [[c["name"], str(c["pending"])] for c in rest["consumers"]] == consumers
    rows = xs("XPENDING", "s", "g", "-", "+", "10")
    assert [[e["id"], e["consumer"], e["delivery_count"]] for e in rest["entries"]] == [
        [r[0], r[1], r[3]] for r in rows
    ]


def test_group_history_agrees(xs: Commands, api: httpx.Client) -> None:
    _setup(xs)
    ((_, history),) = xs("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
    r = api.post("/v1/streams/s/groups/g/consumers/alice/reads", params={"fields": "pairs"},
                 json={"id": "0"})  # fmt: skip
    rest = [
        [e["id"], None if e["fields"] is None else [x for p in e["fields"] for x in p]]
        for e in r.json()["entries"]
    ]
    assert rest == history  # 2-0 was deleted: [id, null] on both


def test_autoclaim_agrees(xs: Commands, api: httpx.Client) -> None:
    _setup(xs)
    xs("XADD", "t", "1-0", "a", "1")
    body = {"consumer": "carol", "min_idle_ms": 0, "count": 1}
    rest = api.post("/v1/streams/s/groups/g/autoclaims", params={"fields": "pairs"},
                    json=body).json()  # fmt: skip
    # The same call again from the command endpoint continues where REST stopped.
    cursor, claimed, deleted = xs("XAUTOCLAIM", "s", "g", "carol", "0", rest["next_start"],
                                  "COUNT", "1")  # fmt: skip
    assert rest["ids"] == ["1-0"] and rest["next_start"] == "2-0"
    assert (cursor, claimed, deleted) == ("3-0", [], ["2-0"])
    pending = api.get("/v1/streams/s/groups/g/pending", params={"count": 10}).json()["entries"]
    assert [(p["id"], p["consumer"]) for p in pending] == [
        (r[0], r[1]) for r in xs("XPENDING", "s", "g", "-", "+", "10")
    ]


def test_writes_through_rest_are_seen_by_commands(xs: Commands, api: httpx.Client) -> None:
    api.post("/v1/streams/s/entries", json={"id": "1-0", "fields": [["k", "v"], ["k", "w"]]})
    api.post("/v1/streams/s/trim", json={"maxlen": 0})
    api.post("/v1/streams/s/entries", json={"id": "2-0", "fields": {"x": "y"}})
    assert xs("XRANGE", "s", "-", "+") == [["2-0", ["x", "y"]]]
    assert xs("XLEN", "s") == 1
    api.put("/v1/streams/s/last-id", json={"last_id": "7-0"})
    assert xs("XINFO", "STREAM", "s")[7] == "7-0"  # last-generated-id
