"""Range splitting and the Arrow rows: the parts of the source that need no Spark to check."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from app.engine.ids import UINT64_MAX, StreamID
from tests.pipeline.conftest import need

# app.pipeline imports pyarrow and PySpark: without them, skip (or fail: see conftest).
need("pyarrow")
need("pyspark")

from app.pipeline.schema import ARROW_SCHEMA, entries_batch  # noqa: E402
from app.pipeline.slices import plan, split_range  # noqa: E402

ids = st.builds(StreamID, st.integers(0, 10**6), st.sampled_from([0, 1, 7, UINT64_MAX]))


@given(ids, ids, st.integers(1, 12))
def test_slices_cover_the_range_exactly_without_overlap(a: StreamID, b: StreamID, n: int) -> None:
    lo, hi = min(a, b), max(a, b)
    parts = split_range(lo, hi, n)
    assert 1 <= len(parts) <= n
    assert parts[0][0] == lo and parts[-1][1] == hi
    for (s, e), (nxt, _) in itertools.pairwise(parts):
        assert s <= e and e.incr() == nxt and nxt.seq == 0  # cut on a millisecond boundary
    assert len(parts) == min(n, hi.ms - lo.ms + 1)


def test_an_empty_range_has_no_slices() -> None:
    assert split_range(StreamID(5, 1), StreamID(5, 0), 4) == []


def test_task_k_reads_slice_k_of_every_stream() -> None:
    tasks = plan({"b": (StreamID(0, 1), StreamID(99, 0)), "a": (StreamID(5, 0), StreamID(5, 9))}, 3)
    assert [[(s.stream, s.start, s.end) for s in t.slices] for t in tasks] == [
        [("a", "5-0", "5-9"), ("b", "0-1", f"32-{UINT64_MAX}")],
        [("b", "33-0", f"65-{UINT64_MAX}")],
        [("b", "66-0", "99-0")],
    ]


def test_arrow_rows_keep_pairs_and_null_out_ids_a_long_cannot_hold() -> None:
    batch = entries_batch("s", [["1-2", ["a", "1", "b", "2", "a", "3"]],
                                [f"{2**63}-{2**64 - 1}", []]])  # fmt: skip
    assert batch.schema == ARROW_SCHEMA
    rows = batch.to_pylist()
    assert rows[0] == {
        "stream": "s", "id": "1-2", "ms": 1, "seq": 2,
        "fields": [("a", "3"), ("b", "2")],
        "pairs": [{"field": "a", "value": "1"}, {"field": "b", "value": "2"},
                  {"field": "a", "value": "3"}],
    }  # fmt: skip
    assert rows[1]["id"] == f"{2**63}-{2**64 - 1}"
    assert (rows[1]["ms"], rows[1]["seq"], rows[1]["pairs"]) == (None, None, [])
