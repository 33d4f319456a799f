"""Entries: XADD (one, batch, pairs, options), XRANGE / XREVRANGE, one entry, XDEL."""

from __future__ import annotations

import httpx
import pytest

from tests.api.rest.conftest import add, problem

E = "/v1/streams/s/entries"
NOT_ABOVE_TOP = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
INVALID_ID = "ERR Invalid stream ID specified as stream command argument"
SYNTAX = "ERR syntax error, "


def test_append_one_entry_answers_201_with_location_and_the_id(api: httpx.Client) -> None:
    r = api.post(E, json={"id": "5-1", "fields": {"a": "1", "b": "2"}})
    assert r.status_code == 201
    assert r.json() == {"ids": ["5-1"]}
    assert r.headers["location"] == "/v1/streams/s/entries/5-1"
    got = api.get(r.headers["location"]).json()
    assert got == {"id": "5-1", "fields": {"a": "1", "b": "2"}}


def test_generated_and_ms_star_ids(api: httpx.Client) -> None:
    first = add(api, "s", ("a", "1"))
    ms, seq = (int(x) for x in first.split("-"))
    assert ms > 0 and seq == 0
    assert add(api, "s", ("a", "1"), id=f"{ms}-*") == f"{ms}-1"
    assert add(api, "s", ("a", "1"), id=f"{ms + 5}-*") == f"{ms + 5}-0"


def test_pairs_keep_repeated_field_names_and_order(api: httpx.Client) -> None:
    pairs = [["z", "1"], ["a", "2"], ["z", "3"]]
    r = api.post(E, json={"id": "1-0", "fields": pairs})
    assert r.status_code == 201
    assert api.get(f"{E}/1-0", params={"fields": "pairs"}).json()["fields"] == pairs
    # The object form shows the last value of a repeated name, as dict-based clients do.
    assert api.get(f"{E}/1-0").json()["fields"] == {"z": "3", "a": "2"}
    assert api.get(E, params={"fields": "pairs"}).json()["entries"][0]["fields"] == pairs


def test_object_form_keeps_the_order_written(api: httpx.Client) -> None:
    api.post(E, json={"id": "1-0", "fields": {"b": "1", "a": "2", "c": "3"}})
    r = api.get(f"{E}/1-0", params={"fields": "pairs"})
    assert r.json()["fields"] == [["b", "1"], ["a", "2"], ["c", "3"]]


def test_batch_appends_all_in_order(api: httpx.Client) -> None:
    body = {
        "entries": [
            {"id": "1-1", "fields": {"a": "1"}},
            {"id": "1-*", "fields": [["b", "2"]]},
            {"id": "3", "fields": {"c": "3"}},
        ]
    }
    r = api.post(E, json=body)
    assert r.status_code == 201
    assert r.json() == {"ids": ["1-1", "1-2", "3-0"]}
    assert r.headers["location"] == "/v1/streams/s/entries?start=1-1&end=3-0"


def test_batch_is_all_or_nothing_and_names_the_refused_entry(api: httpx.Client) -> None:
    add(api, "s", ("a", "1"), id="5-0")
    body = {"entries": [{"id": "6-0", "fields": {"a": "1"}}, {"id": "6-0", "fields": {"a": "2"}}]}
    p = problem(api.post(E, json=body), 409, "ERR")
    assert p["index"] == 1
    assert "equal or smaller than the target stream top item" in p["error"]
    assert [e["id"] for e in api.get(E).json()["entries"]] == ["5-0"]


@pytest.mark.parametrize(
    ("entry_id", "status", "text"),
    [
        ("0-0", 400, "ERR The ID specified in XADD must be greater than 0-0"),
        ("5-0", 409, NOT_ABOVE_TOP),
        ("4-9", 409, NOT_ABOVE_TOP),
        ("abc", 400, "ERR Invalid stream ID specified as stream command argument"),
        ("-", 400, "ERR Invalid stream ID specified as stream command argument"),
        ("1-x", 400, "ERR Invalid stream ID specified as stream command argument"),
    ],
)  # fmt: skip
def test_refused_ids(api: httpx.Client, entry_id: str, status: int, text: str) -> None:
    add(api, "s", ("a", "1"), id="5-0")
    p = problem(api.post(E, json={"id": entry_id, "fields": {"a": "1"}}), status)
    assert p["error"] == text


def test_nomkstream_on_a_missing_stream_is_404_and_creates_nothing(api: httpx.Client) -> None:
    problem(api.post(E, json={"fields": {"a": "1"}, "nomkstream": True}), 404)
    assert api.get("/v1/streams/s").status_code == 404
    add(api, "s", ("a", "1"))
    assert api.post(E, json={"fields": {"a": "2"}, "nomkstream": True}).status_code == 201


def test_append_with_trimming(api: httpx.Client) -> None:
    for i in range(1, 6):
        add(api, "s", ("n", str(i)), id=f"{i}-0")
    r = api.post(E, json={"id": "6-0", "fields": {"n": "6"}, "trim": {"maxlen": 2}})
    assert r.status_code == 201
    assert [e["id"] for e in api.get(E).json()["entries"]] == ["5-0", "6-0"]
    r = api.post(E, json={"id": "7-0", "fields": {"n": "7"}, "trim": {"minid": "6"}})
    assert [e["id"] for e in api.get(E).json()["entries"]] == ["6-0", "7-0"]


@pytest.mark.parametrize(
    ("trim", "text"),
    [
        ({"maxlen": -1}, "ERR The MAXLEN argument must be >= 0."),
        ({"maxlen": 1, "limit": 5}, SYNTAX + "LIMIT cannot be used without the special ~ option"),
        ({"maxlen": 1, "minid": "1"},
         SYNTAX + "MAXLEN and MINID options at the same time are not compatible"),
        ({"minid": "x"}, "ERR Invalid stream ID specified as stream command argument"),
        ({"approximate": True}, "ERR syntax error, XTRIM must be called with a trimming strategy"),
    ],
)  # fmt: skip
def test_bad_trim_clauses_are_400_with_redis_text(
    api: httpx.Client, trim: dict[str, object], text: str
) -> None:
    p = problem(api.post(E, json={"fields": {"a": "1"}, "trim": trim}), 400)
    assert p["error"] == text
    assert api.get("/v1/streams/s").status_code == 404  # nothing was added


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"fields": {}},
        {"fields": []},
        {"fields": [["a"]]},
        {"fields": [["a", "1", "2"]]},
        {"fields": {"a": 1}},
        {"fields": {"a": "1"}, "entries": [{"fields": {"a": "1"}}]},
        {"entries": []},
        {"entries": [{"fields": {"a": "1"}}], "id": "1-0"},
        {"fields": {"a": "1"}, "unknown": True},
        [],
        "text",
    ],
)
def test_malformed_bodies_are_422(api: httpx.Client, body: object) -> None:
    p = problem(api.post(E, json=body), 422, "ERR")
    assert p["errors"]


def test_invalid_json_is_422(api: httpx.Client) -> None:
    r = api.post(E, content=b"{not json", headers={"content-type": "application/json"})
    problem(r, 422)


def test_range_ascending_descending_and_pagination(api: httpx.Client) -> None:
    for i in range(1, 6):
        add(api, "s", ("n", str(i)), id=f"{i}-0")
    page = api.get(E, params={"count": 2}).json()
    assert [e["id"] for e in page["entries"]] == ["1-0", "2-0"]
    assert page["next"] == "(2-0"
    page = api.get(E, params={"count": 2, "start": page["next"]}).json()
    assert [e["id"] for e in page["entries"]] == ["3-0", "4-0"]
    page = api.get(E, params={"count": 2, "start": page["next"]}).json()
    assert [e["id"] for e in page["entries"]] == ["5-0"]
    assert page["next"] is None
    desc = api.get(E, params={"order": "desc", "count": 2}).json()
    assert [e["id"] for e in desc["entries"]] == ["5-0", "4-0"]
    desc = api.get(E, params={"order": "desc", "count": 2, "end": desc["next"]}).json()
    assert [e["id"] for e in desc["entries"]] == ["3-0", "2-0"]


@pytest.mark.parametrize(
    ("start", "end", "ids"),
    [
        ("-", "+", ["1-0", "1-1", "2-0", "3-0"]),
        ("(1-0", "+", ["1-1", "2-0", "3-0"]),
        ("-", "(3-0", ["1-0", "1-1", "2-0"]),
        ("(1-1", "(3-0", ["2-0"]),
        ("1", "1", ["1-0", "1-1"]),
        ("2", "+", ["2-0", "3-0"]),
        ("3-0", "1-0", []),
        ("(2-0", "(2-0", []),
    ],
)
def test_exclusive_and_incomplete_bounds(
    api: httpx.Client, start: str, end: str, ids: list[str]
) -> None:
    for sid in ("1-0", "1-1", "2-0", "3-0"):
        add(api, "s", ("a", "1"), id=sid)
    got = api.get(E, params={"start": start, "end": end}).json()["entries"]
    assert [e["id"] for e in got] == ids
    rev = api.get(E, params={"start": start, "end": end, "order": "desc"}).json()["entries"]
    assert [e["id"] for e in rev] == ids[::-1]


def test_range_errors(api: httpx.Client) -> None:
    add(api, "s", ("a", "1"))
    problem(api.get(E, params={"start": "x"}), 400)
    p = problem(api.get(E, params={"start": "(18446744073709551615-18446744073709551615"}), 400)
    assert p["error"] == "ERR invalid start ID for the interval"
    problem(api.get(E, params={"count": -1}), 400)
    problem(api.get(E, params={"order": "sideways"}), 400)
    problem(api.get(E, params={"block_ms": 10}), 400)


def test_count_zero_and_empty_stream(api: httpx.Client) -> None:
    add(api, "s", ("a", "1"), id="1-0")
    assert api.get(E, params={"count": 0}).json() == {"entries": [], "next": None}
    api.delete(f"{E}/1-0")
    assert api.get(E).json() == {"entries": [], "next": None}  # the stream remains, empty


def test_missing_stream_is_404(api: httpx.Client) -> None:
    problem(api.get("/v1/streams/nope/entries"), 404)
    problem(api.get("/v1/streams/nope/entries/1-0"), 404)


def test_one_entry(api: httpx.Client) -> None:
    add(api, "s", ("a", "1"), id="2-0")
    assert api.get(f"{E}/2-0").json()["id"] == "2-0"
    assert api.get(f"{E}/2").json()["id"] == "2-0"  # an incomplete ID means seq 0
    p = problem(api.get(f"{E}/3-0"), 404)
    assert p["error"] == "ERR no such entry"
    problem(api.get(f"{E}/nope"), 400)


def test_delete_one_entry_is_idempotent_in_effect(api: httpx.Client) -> None:
    add(api, "s", ("a", "1"), id="2-0")
    assert api.delete(f"{E}/2-0").status_code == 204
    problem(api.delete(f"{E}/2-0"), 404)
    info = api.get("/v1/streams/s").json()
    assert info["length"] == 0 and info["max_deleted_entry_id"] == "2-0"


def test_bulk_delete(api: httpx.Client) -> None:
    for sid in ("1-0", "2-0", "3-0"):
        add(api, "s", ("a", "1"), id=sid)
    r = api.delete(E, params=[("id", "1-0"), ("id", "3-0"), ("id", "9-0")])
    assert r.json() == {"deleted": 2}
    assert [e["id"] for e in api.get(E).json()["entries"]] == ["2-0"]
    problem(api.delete(E, params={"id": "bad"}), 400)
    problem(api.delete(E), 400)
    problem(api.delete("/v1/streams/nope/entries", params={"id": "1-0"}), 404)


@pytest.mark.parametrize("afters", [["0", "0", "0"], ["0", "0", "0", "0"]])
def test_after_ids_that_do_not_pair_with_the_streams_are_a_400(
    api: httpx.Client, afters: list[str]
) -> None:
    """One `after` for every stream, or one for all: anything else is XREAD's own error (never
    read as other keys, as a rebuilt STREAMS list would have been)."""
    params = [("stream", "a"), ("stream", "b"), *(("after", x) for x in afters)]
    p = problem(api.get("/v1/read", params=params), 400, "ERR")
    assert p["error"].startswith("ERR Unbalanced XREAD list of streams")


def test_a_block_past_the_clock_s_range_is_redis_s_400(api: httpx.Client) -> None:
    for path, params in [
        ("/v1/read", {"stream": "s", "after": "$"}),
        (E, {"after": "$"}),
    ]:
        r = api.get(path, params={**params, "block_ms": 2**63 - 1})
        assert problem(r, 400)["error"] == "ERR timeout is out of range"
