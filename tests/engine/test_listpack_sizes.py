"""The fast sizing of an entry's values must agree with the exact one, value by value.

Node sizes decide what `~` trimming removes, so a byte off here changes replies.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine.ids import StreamID
from app.engine.listpack import str_size, strs_size
from app.engine.stream import Stream

# Values near the fast path's edges: integer-looking, NULs, non-ASCII, 63/64 bytes long.
_value = st.one_of(
    st.text(max_size=70),
    st.text(alphabet="-0123456789", min_size=1, max_size=22),
    st.text(alphabet="ab\x00-1é", max_size=8),
    st.sampled_from(["a" * 63, "a" * 64, "-", "-0", "0", "01", "9223372036854775808", "\x001"]),
)


@given(st.lists(_value, max_size=12))
def test_strs_size_is_the_sum_of_str_size(values: list[str]) -> None:
    assert strs_size(values) == sum(map(str_size, values))


def test_the_edges() -> None:
    for values in (["a" * 63], ["a" * 64], ["x", "12"], ["a\x001"], ["a\x00b", "c"], ["é"], []):
        assert strs_size(values) == sum(map(str_size, values)), values


_field = st.sampled_from(["f", "g", "field", "é"])
_entry = st.lists(st.tuples(_field, _value), min_size=1, max_size=3)
# Entries with the same names and plain values: the runs sized in C passes.
_plain_value = st.one_of(
    *[st.text(alphabet="ab", max_size=63)] * 19,  # mostly plain; now and then one that is not
    st.sampled_from(["a" * 64, "1", "-", "é", "a\x001", "a\x00b"]),
)
_plain = st.lists(_plain_value, min_size=2, max_size=2)


@settings(max_examples=300)
@given(
    st.lists(_entry, max_size=5),
    st.lists(_plain, max_size=150),
    st.lists(_entry, max_size=5),
    st.sampled_from([0, 2, 7, 100, 300]),
    st.sampled_from([60, 200, 4096]),
    st.integers(0, 300),
)
def test_a_run_appended_at_once_sizes_and_closes_nodes_as_entry_by_entry(
    before: list[list[tuple[str, str]]],
    plain: list[list[str]],
    after: list[list[tuple[str, str]]],
    max_entries: int,
    max_bytes: int,
    gap: int,
) -> None:
    """A run appended in one call (sized in C passes when it can be, ``Node._plain_run``)
    ends with the same nodes, sizes and flags as the same entries appended one by one."""
    rows = [tuple(x for pair in entry for x in pair) for entry in before]
    rows += [("f", a, "g", b) for a, b in plain]
    rows += [tuple(x for pair in entry for x in pair) for entry in after]
    if not rows:
        return
    ids = [StreamID(1 + i // 3, (i % 3) * gap) for i in range(len(rows))]
    at_once, one_by_one = Stream(max_entries, max_bytes), Stream(max_entries, max_bytes)
    at_once.append_many(ids, rows)
    for sid, row in zip(ids, rows, strict=True):
        one_by_one.append_many([sid], [row])
    assert [(n.lp_bytes, n.live, n.ordered, len(n)) for n in at_once.nodes] == [
        (n.lp_bytes, n.live, n.ordered, len(n)) for n in one_by_one.nodes
    ]
    assert at_once.firsts == one_by_one.firsts
    assert at_once.range() == one_by_one.range()


@pytest.mark.parametrize("max_bytes", [60, 200, 4096])
@pytest.mark.parametrize("max_entries", [0, 7, 100])
@pytest.mark.parametrize("gap", [0, 200])
def test_a_plain_run_closes_nodes_where_entry_by_entry_does(
    max_bytes: int, max_entries: int, gap: int
) -> None:
    """150 entries of the master's names and plain values (the runs sized in C passes),
    values of 0-29 bytes, IDs with small and large deltas: the same nodes either way."""
    rows = [("f", "a" * (i % 30), "g", "b") for i in range(150)]
    ids = [StreamID(1 + i // 3, (i % 3) * gap) for i in range(150)]
    at_once, one_by_one = Stream(max_entries, max_bytes), Stream(max_entries, max_bytes)
    at_once.append_many(ids, rows)
    for sid, row in zip(ids, rows, strict=True):
        one_by_one.append_many([sid], [row])
    assert [(n.lp_bytes, n.live, len(n)) for n in at_once.nodes] == [
        (n.lp_bytes, n.live, len(n)) for n in one_by_one.nodes
    ]
