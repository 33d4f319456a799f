"""The fast sizing of an entry's values must agree with the exact one, value by value.

Node sizes decide what `~` trimming removes, so a byte off here changes replies.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.engine.listpack import str_size, strs_size

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
