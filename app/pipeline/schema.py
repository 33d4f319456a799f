"""The row shape every part of the pipeline shares: one row per stream entry.

``fields`` is a map for convenient lookups (a repeated field name keeps its last value, as a
dict would); ``pairs`` keeps every field/value pair in the order XADD received them, repeats
included, so nothing Redis stored is lost. ``ms`` and ``seq`` are null for the rare ID part above
2^63 - 1, which a Spark ``long`` cannot hold; ``id`` is always exact.

Bytes that are not UTF-8 (the service's JSON carries each as the escape ``\\udcNN``; the
client reads it as the lone surrogate U+DCNN): a Spark string must be valid UTF-8, so in a
string column each such byte is the six characters ``\\udcNN`` (the JSON spelling, shown
rather than replaced by U+FFFD). With the source option ``binary=true`` field values are Spark
``binary``, the exact bytes (``BINARY_ARROW_SCHEMA``); stream and field names stay strings.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from itertools import accumulate, chain
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

# The archive's files hold the entry columns; stream and date are its partition columns.
ARCHIVE_PARTITIONS = ("stream", "date")


def _schema(value: pa.DataType) -> pa.Schema:
    pair = pa.struct([pa.field("field", pa.string()), pa.field("value", value)])
    return pa.schema(
        [
            pa.field("stream", pa.string()),
            pa.field("id", pa.string()),
            pa.field("ms", pa.int64()),
            pa.field("seq", pa.int64()),
            pa.field("fields", pa.map_(pa.string(), value)),
            pa.field("pairs", pa.list_(pair)),
        ]
    )


ARROW_SCHEMA = _schema(pa.string())
BINARY_ARROW_SCHEMA = _schema(pa.binary())  # the source's binary=true: values as exact bytes


def entry_schema(binary: bool = False) -> StructType:
    """Spark's view of the same row, derived so the two descriptions cannot drift apart."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(BINARY_ARROW_SCHEMA if binary else ARROW_SCHEMA)


_SURROGATE = re.compile("[\ud800-\udfff]")


def shown(text: str) -> str:
    """``text`` as a Spark string: each byte that is not UTF-8 (U+DCNN) as ``\\udcNN``."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


def _strings(texts: list[str]) -> pa.Array:
    try:
        return pa.array(texts, pa.string())
    except UnicodeEncodeError:  # bytes that are not UTF-8 somewhere: the rare, slower path
        return pa.array([shown(t) for t in texts], pa.string())


def _bytes(texts: list[str]) -> pa.Array:
    try:
        return pa.array(texts, pa.string()).cast(pa.binary())
    except UnicodeEncodeError:
        return pa.array([t.encode("utf-8", "surrogateescape") for t in texts], pa.binary())


_INT64_MAX = pa.scalar((1 << 63) - 1, pa.uint64())
_NULL_LONG = pa.scalar(None, pa.int64())


def _longs(digits: pa.Array) -> pa.Array:
    """Decimal text to int64, null where the unsigned value does not fit."""
    unsigned = pc.cast(digits, pa.uint64())
    signed = pc.cast(unsigned, pa.int64(), safe=False)
    return pc.if_else(pc.greater(unsigned, _INT64_MAX), _NULL_LONG, signed)


def entries_batch(
    stream: str, entries: Sequence[Sequence[Any]], binary: bool = False
) -> pa.RecordBatch:
    """One Arrow batch from XRANGE-shaped entries ``[id, [f1, v1, f2, v2, ...]]``; with
    ``binary``, values as exact bytes (``BINARY_ARROW_SCHEMA``).

    Built from flat columns and Arrow compute (ID parsing included), never per value in
    Python: this runs for every entry a Spark task reads, and the per-value way cost twice the
    time.
    """
    ids = [e[0] for e in entries]
    flats = [e[1] for e in entries]
    flat = list(chain.from_iterable(flats))
    offsets = pa.array(list(accumulate((len(f) >> 1 for f in flats), initial=0)), pa.int32())
    schema = BINARY_ARROW_SCHEMA if binary else ARROW_SCHEMA
    values_of = _bytes if binary else _strings
    names = _strings(flat[0::2])
    values = values_of(flat[1::2])
    pair_type = schema.field("pairs").type.value_type
    pairs = pa.ListArray.from_arrays(
        offsets, pa.StructArray.from_arrays([names, values], fields=list(pair_type))
    )
    if any(len(f) > 2 and len(set(f[0::2])) != len(f) >> 1 for f in flats):
        # A repeated name: the last value wins, as in a dict.
        fields = _last_value_maps(flats, values_of)
    else:
        fields = pa.MapArray.from_arrays(offsets, names, values)
    id_array = pa.array(ids, pa.string())
    halves = pc.split_pattern(id_array, "-", max_splits=1)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([shown(stream)] * len(ids), pa.string()),
            id_array,
            _longs(pc.list_element(halves, 0)),
            _longs(pc.list_element(halves, 1)),
            fields,
            pairs,
        ],
        schema=schema,
    )


def _last_value_maps(
    flats: Sequence[Sequence[str]], values_of: Callable[[list[str]], pa.Array]
) -> pa.MapArray:
    keys: list[str] = []
    values: list[str] = []
    offsets = [0]
    for flat in flats:
        last = dict(zip(flat[0::2], flat[1::2], strict=True))
        keys.extend(last)
        values.extend(last.values())
        offsets.append(len(keys))
    return pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), _strings(keys), values_of(values))
