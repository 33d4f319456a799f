"""The command endpoint without base64: bytes that are not UTF-8 are ``\\udcNN``, both ways.

Plain JSON replies used to replace such bytes with U+FFFD (lossy: two values read the same),
and a JSON body could not write them at all. Now each byte that is not part of valid UTF-8 is
the escape ``\\udcNN`` in replies, and the same escape in a request body is that byte.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from tests.api.support import result_of

B64 = {"Upstash-Encoding": "base64"}


def send(http: httpx.Client, doc: Any, path: str = "/", b64: bool = False) -> httpx.Response:
    """POST ``doc`` as JSON with ``\\udcNN`` escapes (json.dumps writes lone surrogates so)."""
    return http.post(path, content=json.dumps(doc).encode(), headers=B64 if b64 else {})


def test_an_escape_in_a_body_writes_the_byte(http: httpx.Client) -> None:
    assert result_of(send(http, ["XADD", "s", "1-1", "f", "\udcff"])) == "1-1"
    assert result_of(send(http, ["XRANGE", "s", "-", "+"], b64=True)) == [
        ["MS0x", ["Zg==", "/w=="]]
    ]
    reply = send(http, ["XRANGE", "s", "-", "+"])
    assert reply.content == b'{"result":[["1-1",["f","\\udcff"]]]}'


def test_replies_keep_every_byte_and_read_back_the_same(http: httpx.Client) -> None:
    """Path-style bytes come back as escapes; sending the reply back stores the same bytes."""
    raw = bytes([0, 0xFF, 0x80, 0x41, 0xC3]) + "é".encode()
    assert result_of(http.post("/xadd/s%FE/1-1/k%FF", content=raw)) == "1-1"
    plain = result_of(send(http, ["XRANGE", "s\udcfe", "-", "+"]))
    assert plain == [["1-1", ["k\udcff", raw.decode("utf-8", "surrogateescape")]]]
    field, value = plain[0][1]
    assert result_of(send(http, ["XADD", "t", "1-1", field, value])) == "1-1"
    stored = result_of(send(http, ["XRANGE", "t", "-", "+"], b64=True))[0][1]
    assert [base64.b64decode(x) for x in stored] == [b"k\xff", raw]
    assert result_of(send(http, ["KEYS", "s*"])) == ["s\udcfe"]


def test_pipelines_and_transactions_carry_them(http: httpx.Client) -> None:
    cmds = [["XADD", "s", "1-1", "\udcfe", "\udcff"], ["XRANGE", "s", "-", "+"]]
    for path in ("/pipeline", "/multi-exec"):
        assert result_of(send(http, ["DEL", "s"])) in (0, 1)
        replies = send(http, cmds, path).json()
        assert replies == [{"result": "1-1"}, {"result": [["1-1", ["\udcfe", "\udcff"]]]}]


def test_escapes_that_spell_utf8_are_that_text(http: httpx.Client) -> None:
    """``\\udcc3\\udca9`` are the bytes of é: one key, whichever way it was written."""
    assert result_of(send(http, ["XADD", "\udcc3\udca9", "1-1", "a", "1"])) == "1-1"
    assert result_of(http.get("/xlen/%C3%A9")) == 1
    assert result_of(send(http, ["XLEN", "é"])) == 1
    assert result_of(send(http, ["KEYS", "*"])) == ["é"]


def test_error_texts_quote_names_in_the_representation(http: httpx.Client) -> None:
    assert result_of(send(http, ["XADD", "s\udcff", "1-1", "a", "1"])) == "1-1"
    r = send(http, ["XREADGROUP", "GROUP", "g\udcfe", "c", "STREAMS", "s\udcff", ">"])
    assert r.status_code == 400
    assert "'s\udcff'" in r.json()["error"] and "'g\udcfe'" in r.json()["error"]


@pytest.mark.parametrize(
    "content",
    [
        b'["XADD","s","*","f","\\ud800"]',  # a surrogate that is no byte
        b'["XADD","s","*","f","\\udc41"]',  # no byte below 0x80 is escaped
        b'["XADD","s","*","f",NaN,"\\udcff"]',  # the fallback takes nothing else orjson refuses
        b'["XADD","s","*","f",1e999,"\\udcff"]',
    ],
)
def test_bodies_the_representation_does_not_allow(http: httpx.Client, content: bytes) -> None:
    r = http.post("/", content=content)
    assert r.status_code == 400
    assert r.json() == {"error": "ERR failed to parse request body as JSON"}
    assert result_of(http.post("/", json=["EXISTS", "s"])) == 0


def test_numbers_beside_escapes_keep_their_text(http: httpx.Client) -> None:
    assert result_of(http.post("/", content=b'["XADD","s","1-1","\\udcff",1.50]')) == "1-1"
    assert result_of(send(http, ["XRANGE", "s", "-", "+"])) == [["1-1", ["\udcff", "1.50"]]]
