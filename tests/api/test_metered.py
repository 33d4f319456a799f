"""What the meter counts on the command endpoint (app/api/metered.py): XADD's fields past
its options and ID, and the entries in a read's reply, as the engine or Redis shapes it."""

from __future__ import annotations

from typing import Any

import pytest

from app.api.meter import fields_bytes
from app.api.metered import command_bytes, reply_entries, xadd_fields
from app.engine.ids import StreamID
from app.engine.replies import StreamRead
from app.engine.stream import Entry


@pytest.mark.parametrize(
    ("argv", "fields"),
    [
        (["XADD", "s", "*", "a", "1"], ["a", "1"]),
        (["xadd", "s", "NOMKSTREAM", "5-1", "a", "1", "b", "2"], ["a", "1", "b", "2"]),
        (["XADD", "s", "MAXLEN", "~", "10", "*", "a", "1"], ["a", "1"]),
        (["XADD", "s", "MINID", "=", "5", "LIMIT", "7", "*", "a", "1"], ["a", "1"]),
        (["XADD", "s", "MAXLEN", "10", "*", "a", "1"], ["a", "1"]),
        (["XADD", "s", "IDMP", "p", "i1", "*", "a", "1"], ["a", "1"]),
        (["XADD", "s", "IDMPAUTO", "p", "*", "maxlen", "x"], ["maxlen", "x"]),
    ],
)
def test_xadd_fields_follow_the_options_and_the_id(argv: list[str], fields: list[str]) -> None:
    assert list(xadd_fields(argv)) == fields


def test_a_byte_is_a_byte_of_utf8_and_an_escaped_byte_is_one() -> None:
    assert fields_bytes(["name", "alice"]) == 9
    assert fields_bytes(["é", "€"]) == 5
    assert fields_bytes(["\udcff"]) == 1  # a byte that is not UTF-8, as the API carries it
    assert command_bytes([["XADD", "s", "*", "a", "bc"], ["XLEN", "s"], []]) == 3


E = Entry(StreamID(1, 0), ("a", "1"))


@pytest.mark.parametrize(
    ("name", "reply", "n"),
    [
        ("xrange", [E, E], 2),
        ("xrevrange", [["1-0", ["a", "1"]]], 1),  # Redis's own reply
        ("xread", [StreamRead("s", [E]), StreamRead("t", [E, E])], 3),
        ("xreadgroup", [["s", [["1-0", ["a", "1"]]]], ["t", []]], 1),
        ("xread", {"s": [["1-0", ["a", "1"]]]}, 1),  # RESP3: a map of stream to entries
        ("xread", None, 0),  # a timeout
    ],
)
def test_entries_in_a_reads_reply(name: str, reply: Any, n: int) -> None:
    assert reply_entries(name, reply) == n
