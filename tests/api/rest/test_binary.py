"""Bytes that are not UTF-8 on the REST resources: ``%NN`` in URLs, ``\\udcNN`` in JSON.

Each case writes names and values holding such bytes through the command endpoint's path style
(as ``GET /xadd/orders/*/item/%FF`` does), reads them through REST, writes what it read back
through REST, and compares the exact bytes through the command endpoint with
``Upstash-Encoding: base64``. Every response must be strict UTF-8 JSON.
"""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.api.rest.conftest import problem


def text(raw: bytes) -> str:
    """How a client's JSON library reads ``raw`` in the representation (PEP 383)."""
    return raw.decode("utf-8", "surrogateescape")


def url(raw: bytes) -> str:
    return quote(raw, safe="")


STREAM = b"s\xff"  # s%FF
GROUP = b"g\xfe"
CONSUMER = b"c\xfd"
FIELD = b"f\xfe\xc3"  # a broken two-byte sequence at the end
VALUE = b"\xff\x00v\xc3\xa9\x80"  # é in the middle stays é
G_PATH = f"/v1/streams/{url(STREAM)}/groups/{url(GROUP)}"


def body(doc: Any) -> dict[str, Any]:
    """A JSON request body in the representation: ``\\udcNN`` escapes (json.dumps writes
    them; httpx's own ``json=`` cannot encode a lone surrogate)."""
    return {"content": json.dumps(doc).encode(), "headers": {"content-type": "application/json"}}


def ok(r: httpx.Response, status: int = 200) -> Any:
    assert r.status_code == status, (r.status_code, r.text)
    r.content.decode("utf-8")  # strict UTF-8 on the wire
    return r.json()


def command(api: httpx.Client, *args: bytes | str, b64: bool = False) -> Any:
    """A command through ``POST /`` with ``\\udcNN`` escapes for raw bytes."""
    argv = [text(a) if isinstance(a, bytes) else a for a in args]
    headers = {"Upstash-Encoding": "base64"} if b64 else {}
    return ok(api.post("/", content=json.dumps(argv).encode(), headers=headers))["result"]


def stored_fields(api: httpx.Client, stream: bytes) -> list[list[bytes]]:
    """Each entry's field/value bytes, exactly, from base64 replies."""
    reply = command(api, "XRANGE", stream, "-", "+", b64=True)
    return [[base64.b64decode(x) for x in fields] for _, fields in reply]


@pytest.fixture
def seeded(api: httpx.Client) -> httpx.Client:
    """Entry 1-1 of STREAM written path style, GROUP with CONSUMER holding it pending."""
    r = api.get(f"/xadd/{url(STREAM)}/1-1/{url(FIELD)}/{url(VALUE)}")
    assert r.json() == {"result": "1-1"}
    assert api.get(f"/xgroup/create/{url(STREAM)}/{url(GROUP)}/0").json() == {"result": "OK"}
    path = f"/xreadgroup/group/{url(GROUP)}/{url(CONSUMER)}/streams/{url(STREAM)}/%3E"
    assert api.get(path).status_code == 200
    return api


def test_percent_encoded_path_names_are_their_bytes(api: httpx.Client) -> None:
    """``%FF`` and ``%FE`` are two streams, not one U+FFFD; ``%C3%A9`` is é."""
    assert api.get("/xadd/%FF/1-1/a/1").status_code == 200
    assert api.get("/xadd/%FE/1-1/a/2").status_code == 200
    assert api.get("/xadd/%C3%A9/1-1/a/3").status_code == 200
    for name, value in ((b"\xff", "1"), (b"\xfe", "2"), ("é".encode(), "3")):
        entries = ok(api.get(f"/v1/streams/{url(name)}/entries"))["entries"]
        assert entries == [{"id": "1-1", "fields": {"a": value}}]
    assert ok(api.get("/v1/streams/%C3%A9"))["name"] == "é"
    problem(api.get("/v1/streams/%FD/entries"), 404, "ERR")


def test_range_reads_carry_the_bytes_in_both_forms(seeded: httpx.Client) -> None:
    base = f"/v1/streams/{url(STREAM)}/entries"
    expected = {"id": "1-1", "fields": {text(FIELD): text(VALUE)}}
    assert ok(seeded.get(base))["entries"] == [expected]
    pairs = ok(seeded.get(base, params={"fields": "pairs"}))["entries"]
    assert pairs == [{"id": "1-1", "fields": [[text(FIELD), text(VALUE)]]}]
    assert ok(seeded.get(base + "/1-1")) == expected
    assert ok(seeded.get(base, params={"after": "0"}))["entries"] == [expected]
    # The raw text of the reply: each stray byte is one \udcNN escape, é stays é.
    assert b'"\\udcff\\u0000v\xc3\xa9\\udc80"' in seeded.get(base).content


def test_names_in_queries_and_lists(seeded: httpx.Client) -> None:
    """``?stream=`` and ``?match=`` take names percent-encoded as paths do."""
    page = ok(seeded.get("/v1/streams?match=s%FF"))["streams"]
    assert [s["name"] for s in page] == [text(STREAM)]
    assert ok(seeded.get("/v1/streams?match=s%FE"))["streams"] == []
    read = ok(seeded.get(f"/v1/read?stream={url(STREAM)}&after=0"))["streams"]
    assert [r["stream"] for r in read] == [text(STREAM)]
    assert ok(seeded.get("/v1/read?stream=s%FE&after=0"))["streams"] == []


def test_info_groups_consumers_and_pending(seeded: httpx.Client) -> None:
    info = ok(seeded.get(f"/v1/streams/{url(STREAM)}"))
    assert info["name"] == text(STREAM)
    assert info["first_entry"]["fields"] == {text(FIELD): text(VALUE)}
    full = ok(seeded.get(f"/v1/streams/{url(STREAM)}", params={"full": "true"}))
    assert full["entries"][0]["fields"] == {text(FIELD): text(VALUE)}
    group = full["groups"][0]
    assert group["name"] == text(GROUP)
    assert group["pending"][0]["consumer"] == text(CONSUMER)
    assert group["consumers"][0]["name"] == text(CONSUMER)
    groups = ok(seeded.get(f"/v1/streams/{url(STREAM)}/groups"))["groups"]
    assert [g["name"] for g in groups] == [text(GROUP)]
    assert ok(seeded.get(G_PATH))["name"] == text(GROUP)
    consumers = ok(seeded.get(G_PATH + "/consumers"))["consumers"]
    assert [c["name"] for c in consumers] == [text(CONSUMER)]
    pending = ok(seeded.get(G_PATH + "/pending", params={"count": "10"}))
    assert pending["consumers"] == [{"name": text(CONSUMER), "pending": 1}]
    assert [e["consumer"] for e in pending["entries"]] == [text(CONSUMER)]
    only = f"{G_PATH}/pending?count=10&consumer={url(CONSUMER)}"
    assert len(ok(seeded.get(only))["entries"]) == 1
    other = f"{G_PATH}/pending?count=10&consumer=c%FE"
    assert ok(seeded.get(other))["entries"] == []


def test_claims_and_autoclaims_name_consumers_in_the_representation(
    seeded: httpx.Client,
) -> None:
    thief = b"t\xff"
    claim = {"consumer": text(thief), "min_idle_ms": 0, "ids": ["1-1"]}
    claimed = ok(seeded.post(G_PATH + "/claims", **body(claim)))
    assert claimed["entries"] == [{"id": "1-1", "fields": {text(FIELD): text(VALUE)}}]
    auto = {"consumer": text(CONSUMER), "min_idle_ms": 0}
    back = ok(seeded.post(G_PATH + "/autoclaims", **body(auto)))
    assert back["entries"] == [{"id": "1-1", "fields": {text(FIELD): text(VALUE)}}]
    reply = command(seeded, "XPENDING", STREAM, GROUP, "-", "+", "10", b64=True)
    assert [base64.b64decode(row[1]) for row in reply] == [CONSUMER]
    history = ok(seeded.post(f"{G_PATH}/consumers/{url(CONSUMER)}/reads", **body({"id": "0"})))
    assert history["entries"] == [{"id": "1-1", "fields": {text(FIELD): text(VALUE)}}]


def test_what_was_read_is_written_back_byte_for_byte(seeded: httpx.Client) -> None:
    base = f"/v1/streams/{url(STREAM)}/entries"
    for form in ("object", "pairs"):
        e = ok(seeded.get(base + "/1-1", params={"fields": form}))
        ok(seeded.post(base, **body({"fields": e["fields"]})), 201)
    assert stored_fields(seeded, STREAM) == [[FIELD, VALUE]] * 3


def test_escapes_that_spell_utf8_are_that_text(api: httpx.Client) -> None:
    """``\\udcc3\\udca9`` are the bytes of é: the same field name, one key."""
    doc = {"fields": [["\udcc3\udca9", "1"], ["é", "2"]]}
    ok(api.post("/v1/streams/%C3%A9/entries", **body(doc)), 201)
    entries = ok(api.get("/v1/streams/%C3%A9/entries", params={"fields": "pairs"}))["entries"]
    assert entries[0]["fields"] == [["é", "1"], ["é", "2"]]


@pytest.mark.parametrize("escape", ["\ud800", "\udc41", "\udfff"])
def test_surrogates_that_are_no_byte_are_refused(api: httpx.Client, escape: str) -> None:
    r = api.post("/v1/streams/s/entries", **body({"fields": {"a": escape}}))
    problem(r, 422, "ERR")
    assert command(api, "EXISTS", "s") == 0


def test_urls_the_server_builds_round_trip(api: httpx.Client) -> None:
    created = api.post(
        f"/v1/streams/{url(STREAM)}/groups", **body({"name": text(GROUP), "mkstream": True})
    )
    assert ok(created, 201)["name"] == text(GROUP)
    assert created.headers["location"] == G_PATH
    assert ok(api.get(created.headers["location"]))["name"] == text(GROUP)
    put = api.put(f"{G_PATH}/consumers/{url(CONSUMER)}")
    assert ok(put, 201)["name"] == text(CONSUMER)
    assert put.headers["location"] == f"{G_PATH}/consumers/{url(CONSUMER)}"
    added = api.post(f"/v1/streams/{url(STREAM)}/entries", **body({"fields": {"a": "1"}}))
    assert added.headers["location"].startswith(f"/v1/streams/{url(STREAM)}/entries/")


def test_error_texts_quote_names_in_the_representation(seeded: httpx.Client) -> None:
    p = problem(seeded.get(f"/v1/streams/{url(STREAM)}/groups/nope"), 404, "NOGROUP")
    assert text(STREAM) in p["error"]
    assert p["instance"] == f"/v1/streams/{text(STREAM)}/groups/nope"
