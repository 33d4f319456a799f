"""The row shape every part of the pipeline shares: one row per stream entry.

``fields`` is a map for convenient lookups (a repeated field name keeps its last value, as a
dict would); ``pairs`` keeps every field/value pair in the order XADD received them, repeats
included, so nothing Redis stored is lost. ``ms`` and ``seq`` are null for the rare ID part above
2^63 - 1, which a Spark ``long`` cannot hold; ``id`` is always exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

ENTRY_DDL = (
    "stream string, id string, ms long, seq long, fields map<string,string>, "
    "pairs array<struct<field:string,value:string>>"
)
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
_INT64_MAX = (1 << 63) - 1


def _long(text: str) -> int | None:
    value = int(text)
    return value if value <= _INT64_MAX else None


def entries_batch(stream: str, entries: Sequence[Sequence[Any]]) -> pa.RecordBatch:
    """One Arrow batch from XRANGE-shaped entries ``[id, [f1, v1, f2, v2, ...]]``.

    Built column by column from flat lists: Arrow's per-value Python conversion of nested
    structs costs several times more than the HTTP read it follows.
    """
    ids: list[str] = []
    ms: list[int | None] = []
    seq: list[int | None] = []
    pair_offsets = [0]
    keys: list[str] = []
    values: list[str] = []
    map_offsets = [0]
    map_keys: list[str] = []
    map_values: list[str] = []
    for entry_id, flat in entries:
        ids.append(entry_id)
        ms_text, _, seq_text = entry_id.partition("-")
        ms.append(_long(ms_text))
        seq.append(_long(seq_text))
        names = flat[0::2]
        vals = flat[1::2]
        keys.extend(names)
        values.extend(vals)
        pair_offsets.append(len(keys))
        if len(names) > 1 and len(set(names)) != len(names):
            last = dict(zip(names, vals, strict=True))  # a repeated name: the last value wins
            map_keys.extend(last)
            map_values.extend(last.values())
        else:
            map_keys.extend(names)
            map_values.extend(vals)
        map_offsets.append(len(map_keys))
    key_arr = pa.array(keys, pa.string())
    val_arr = pa.array(values, pa.string())
    pairs = pa.ListArray.from_arrays(
        pa.array(pair_offsets, pa.int32()),
        pa.StructArray.from_arrays([key_arr, val_arr], fields=list(_PAIR)),
    )
    fields = pa.MapArray.from_arrays(
        pa.array(map_offsets, pa.int32()),
        pa.array(map_keys, pa.string()),
        pa.array(map_values, pa.string()),
    )
    n = len(ids)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([stream] * n, pa.string()),
            pa.array(ids, pa.string()),
            pa.array(ms, pa.int64()),
            pa.array(seq, pa.int64()),
            fields,
            pairs,
        ],
        schema=ARROW_SCHEMA,
    )
