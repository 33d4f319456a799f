"""On every target: a Durable Stream is a stream, a message an entry, and an offset the
position XRANGE and consumer groups agree on (docs/durable-streams.md)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

from app.api.ds import offsets
from app.engine.ids import parse_strict_id
from tests.conftest import Commands, Server
from tests.support.waiting import parked

S = "v1/stream/agree"


def test_messages_are_entries_and_offsets_are_their_ids(api: httpx.Client, xs: Commands) -> None:
    json_type = {"Content-Type": "application/json"}
    assert api.put(f"/ds/{S}", headers=json_type).status_code == 201
    first = api.post(f"/ds/{S}", headers=json_type, content=b'[{"n":1},{"n":2}]')
    assert first.status_code == 204
    entries = xs("XRANGE", S, "-", "+")
    assert [e[1] for e in entries] == [
        ["content-type", "application/json", "body", '{"n":1}'],
        ["content-type", "application/json", "body", '{"n":2}'],
    ]
    ids = [parse_strict_id(e[0]) for e in entries]
    assert first.headers["stream-next-offset"] == offsets.token(ids[-1])

    xs("XADD", S, "*", "content-type", "application/json", "body", '{"n":3}')  # another surface
    after_first = api.get(f"/ds/{S}", params={"offset": offsets.token(ids[0])})
    assert after_first.json() == [{"n": 2}, {"n": 3}]
    # A consumer group created at the first entry's ID starts where that offset does.
    xs("XGROUP", "CREATE", S, "g", entries[0][0])
    delivered = xs("XREADGROUP", "GROUP", "g", "c", "STREAMS", S, ">")
    assert [e[1][3] for e in delivered[0][1]] == ['{"n":2}', '{"n":3}']


def test_a_long_poll_wakes_on_every_target(api: httpx.Client, xs: Commands, server: Server) -> None:
    """The wait names the stream and its record together: one slot on Redis Cluster."""
    created = api.put(f"/ds/{S}", headers={"Content-Type": "text/plain"})
    params = {"offset": created.headers["stream-next-offset"], "live": "long-poll"}
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(api.get, f"/ds/{S}", params=params)
        parked(server, 1)
        xs("XADD", S, "*", "body", "from XADD")
        got = waiting.result(timeout=10)
    assert (got.status_code, got.content) == (200, b"from XADD")


def test_rest_and_durable_streams_read_each_others_entries(api: httpx.Client) -> None:
    """Written through REST, read through /ds; written through /ds, read through REST: the
    same entries, and the offsets name the IDs REST shows. (A key holding ``/`` is the next
    test's.)"""
    name = "agree"  # /ds/agree
    rest = f"/v1/streams/{name}/entries"
    json_type = {"Content-Type": "application/json"}
    assert api.put(f"/ds/{name}", headers=json_type).status_code == 201
    added = api.post(rest, json={"fields": {"content-type": "application/json", "body": "[1]"}})
    assert added.status_code == 201, added.text
    rest_id = added.json()["ids"][0]
    appended = api.post(f"/ds/{name}", headers=json_type, content=b'{"from":"ds"}')
    assert appended.status_code == 204
    assert api.get(f"/ds/{name}").json() == [[1], {"from": "ds"}]
    page = api.get(rest).json()
    assert [e["fields"]["body"] for e in page["entries"]] == ["[1]", '{"from":"ds"}']
    ds_id = page["entries"][1]["id"]
    assert appended.headers["stream-next-offset"] == offsets.token(parse_strict_id(ds_id))
    after_rest = api.get(f"/ds/{name}", params={"offset": offsets.token(parse_strict_id(rest_id))})
    assert after_rest.json() == [{"from": "ds"}]
    tail = api.get(rest, params={"after": rest_id}).json()
    assert [e["id"] for e in tail["entries"]] == [ds_id]


def test_a_stream_at_a_path_holding_slashes_is_read_over_rest_as_percent_2f(
    api: httpx.Client,
) -> None:
    """``/ds/v1/stream/orders`` is the key ``v1/stream/orders``: REST names it as one path
    segment, ``/`` as ``%2F`` (docs/durable-streams.md), and reads what /ds wrote."""
    text = {"Content-Type": "text/plain"}
    assert api.put("/ds/v1/stream/orders", headers=text).status_code == 201
    appended = api.post("/ds/v1/stream/orders", headers=text, content=b"first")
    assert appended.status_code == 204, appended.text
    page = api.get("/v1/streams/v1%2Fstream%2Forders/entries")
    assert page.status_code == 200, page.text
    (entry,) = page.json()["entries"]
    assert entry["fields"] == {"content-type": "text/plain", "body": "first"}
    assert appended.headers["stream-next-offset"] == offsets.token(parse_strict_id(entry["id"]))
    # And the other way: appended through REST, read through /ds.
    added = api.post(
        "/v1/streams/v1%2Fstream%2Forders/entries",
        json={"fields": {"content-type": "text/plain", "body": " second"}},
    )
    assert added.status_code == 201, added.text
    assert api.get("/ds/v1/stream/orders").content == b"first second"


def test_a_record_written_by_another_surface_is_refused_with_the_reason(
    api: httpx.Client, xs: Commands
) -> None:
    assert api.put("/ds/odd", headers={"Content-Type": "text/plain"}).status_code == 201
    xs("XADD", "{odd}:ds-meta", "*", "producers", "not json", "ttl", "soon")
    for method in ("GET", "HEAD", "POST", "DELETE"):
        r = api.request(method, "/ds/odd", content=b"x" if method == "POST" else None)
        assert r.status_code == 409, (method, r.text)
    assert "cannot be read" in api.get("/ds/odd").text
    xs("DEL", "{odd}:ds-meta")  # as the answer says: then the path is free again
    assert api.put("/ds/odd", headers={"Content-Type": "text/plain"}).status_code == 201
