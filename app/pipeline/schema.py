"""The row shape every part of the pipeline shares: one row per stream entry.

``fields`` is a map for convenient lookups (a repeated field name keeps its last value, as a
dict would); ``pairs`` keeps every field/value pair in the order XADD received them, repeats
included, so nothing Redis stored is lost. ``ms`` and ``seq`` are null for the rare ID part above
2^63 - 1, which a Spark ``long`` cannot hold; ``id`` is always exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate, chain
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

# The archive's files hold the entry columns; stream and date are its partition columns.
ARCHIVE_PARTITIONS = ("stream", "date")

_PAIR = pa.struct([pa.field("field", pa.string()), pa.field("value", pa.string())])
ARROW_SCHEMA = pa.schema(
    [
        pa.field("stream", pa.string()),
        pa.field("id", pa.string()),
        pa.field("ms", pa.int64()),
        pa.field("seq", pa.int64()),
        pa.field("fields", pa.map_(pa.string(), pa.string())),
        pa.field("pairs", pa.list_(_PAIR)),
    ]
)


def entry_schema() -> StructType:
    """Spark's view of the same row, derived so the two descriptions cannot drift apart."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(ARROW_SCHEMA)


_INT64_MAX = pa.scalar((1 << 63) - 1, pa.uint64())
_NULL_LONG = pa.scalar(None, pa.int64())


def _longs(digits: pa.Array) -> pa.Array:
    """Decimal text to int64, null where the unsigned value does not fit."""
    unsigned = pc.cast(digits, pa.uint64())
    signed = pc.cast(unsigned, pa.int64(), safe=False)
    return pc.if_else(pc.greater(unsigned, _INT64_MAX), _NULL_LONG, signed)


def entries_batch(stream: str, entries: Sequence[Sequence[Any]]) -> pa.RecordBatch:
    """One Arrow batch from XRANGE-shaped entries ``[id, [f1, v1, f2, v2, ...]]``.

    Built from flat columns and Arrow compute (ID parsing included), never per value in
    Python: this runs for every entry a Spark task reads, and the per-value way cost twice the
    time.
    """
    ids = [e[0] for e in entries]
    flats = [e[1] for e in entries]
    flat = list(chain.from_iterable(flats))
    offsets = pa.array(list(accumulate((len(f) >> 1 for f in flats), initial=0)), pa.int32())
    names = pa.array(flat[0::2], pa.string())
    values = pa.array(flat[1::2], pa.string())
    pairs = pa.ListArray.from_arrays(
        offsets, pa.StructArray.from_arrays([names, values], fields=list(_PAIR))
    )
    if any(len(f) > 2 and len(set(f[0::2])) != len(f) >> 1 for f in flats):
        fields = _last_value_maps(flats)  # a repeated name: the last value wins, as in a dict
    else:
        fields = pa.MapArray.from_arrays(offsets, names, values)
    id_array = pa.array(ids, pa.string())
    halves = pc.split_pattern(id_array, "-", max_splits=1)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([stream] * len(ids), pa.string()),
            id_array,
            _longs(pc.list_element(halves, 0)),
            _longs(pc.list_element(halves, 1)),
            fields,
            pairs,
        ],
        schema=ARROW_SCHEMA,
    )


def _last_value_maps(flats: Sequence[Sequence[str]]) -> pa.MapArray:
    keys: list[str] = []
    values: list[str] = []
    offsets = [0]
    for flat in flats:
        last = dict(zip(flat[0::2], flat[1::2], strict=True))
        keys.extend(last)
        values.extend(last.values())
        offsets.append(len(keys))
    return pa.MapArray.from_arrays(
        pa.array(offsets, pa.int32()), pa.array(keys, pa.string()), pa.array(values, pa.string())
    )
