"""Offsets are entry IDs written to sort as text (app/api/ds/offsets.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.api.ds import offsets
from app.engine.ids import MIN_ID, UINT64_MAX, StreamID

ids = st.builds(StreamID, st.integers(0, UINT64_MAX), st.integers(0, UINT64_MAX))


@given(ids, ids)
def test_offsets_sort_as_text_as_ids_sort_as_numbers(a: StreamID, b: StreamID) -> None:
    assert (offsets.token(a) < offsets.token(b)) == (a < b)
    assert offsets.parse(offsets.token(a)) == a


def test_redis_ids_do_not_sort_as_text_but_offsets_do() -> None:
    nine, ten = StreamID(9, 0), StreamID(10, 0)
    assert str(nine) > str(ten)
    assert offsets.token(nine) < offsets.token(ten)
    assert offsets.token(StreamID(1732841234567, 3)) == "00000001732841234567_00000000000000000003"


def test_offsets_are_read_at_any_width_up_to_twenty_digits() -> None:
    assert offsets.parse("0_0") == MIN_ID  # a client may spell the start so (forks)
    assert offsets.parse("0000000000000012_0000000000000003") == StreamID(12, 3)


def test_the_sentinels() -> None:
    assert offsets.parse("-1") == MIN_ID
    assert offsets.token(MIN_ID) == offsets.ZERO
    assert offsets.ZERO not in {"-1", "now"}


@pytest.mark.parametrize(
    "text",
    [
        "",
        "0",
        "1-0",
        "abc",
        "_0",
        "0" * 21 + "_0",
        "00000000000000000000_0000000000000000000x",
        "99999999999999999999_0",
    ],
)
def test_anything_else_is_refused(text: str) -> None:
    with pytest.raises(offsets.OffsetError):
        offsets.parse(text)
