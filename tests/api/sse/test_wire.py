"""The SSE wire format, in process: event bytes and multi-stream positions (tables of cases)."""

from __future__ import annotations

import pytest

from app.api.rest.schemas.entries import FieldsForm
from app.api.sse.wire import EncodedEntry, gap_event, parse_positions
from app.engine.errors import CommandError
from app.engine.ids import StreamID
from app.engine.stream import Entry

ENTRY = Entry(StreamID(5, 1), ("a", "1", "b", "2", "a", "3"))


@pytest.mark.parametrize(
    ("form", "data"),
    [
        (FieldsForm.object, b'{"id":"5-1","fields":{"a":"3","b":"2"}}'),
        (FieldsForm.pairs, b'{"id":"5-1","fields":[["a","1"],["b","2"],["a","3"]]}'),
    ],
)
def test_entry_event_bytes(form: FieldsForm, data: bytes) -> None:
    encoded = EncodedEntry("s", ENTRY)
    assert encoded.single(form) == b"id: 5-1\nevent: entry\ndata: " + data + b"\n\n"
    assert encoded.single(form) is encoded.single(form)  # built once, shared


def test_multi_stream_event_names_its_stream_and_leaves_the_id_to_the_connection() -> None:
    multi = EncodedEntry("s", ENTRY).multi(FieldsForm.object)
    assert multi.startswith(b'event: entry\ndata: {"stream":"s","id":"5-1",')
    assert b"id: " not in multi.split(b"\n")[0]


def test_gap_event_has_no_id_line() -> None:
    assert gap_event(StreamID(1, 0), None) == (
        b'event: gap\ndata: {"after":"1-0","first_id":null}\n\n'
    )


@pytest.mark.parametrize(
    ("text", "positions"),
    [
        ("a=1-0", {"a": StreamID(1, 0)}),
        ("a=1-0&b=2", {"a": StreamID(1, 0), "b": StreamID(2, 0)}),
        ("x%3D1%26y=3-4&sp%20ace=0-0", {"x=1&y": StreamID(3, 4), "sp ace": StreamID(0, 0)}),
        ("%C3%BC=7-7", {"ü": StreamID(7, 7)}),
    ],
)
def test_parse_positions(text: str, positions: dict[str, StreamID]) -> None:
    assert parse_positions(text) == positions


@pytest.mark.parametrize("text", ["", "a", "a=", "a=x", "a=1-0&b", "a=-"])
def test_malformed_positions_are_redis_errors(text: str) -> None:
    with pytest.raises(CommandError):
        parse_positions(text)
