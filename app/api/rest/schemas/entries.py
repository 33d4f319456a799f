"""Entries, in the object form ``{"f": "v"}`` or the lossless pairs form ``[["f", "v"]]``.

Redis keeps an entry's field/value pairs in the order given and allows a field name twice.
A JSON object cannot say either for sure, so every read can ask for ``fields=pairs`` and every
write accepts both forms. In the object form a repeated name shows its last value, as client
libraries that map entries to dictionaries do; the pairs form never loses anything.
"""

from __future__ import annotations

from enum import StrEnum
from itertools import chain
from operator import attrgetter
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, RootModel
from pydantic.config import JsonDict

from app.engine.stream import Fields

FieldPair = Annotated[list[str], Field(min_length=2, max_length=2)]


class FieldMap(RootModel[Annotated[dict[str, str], Field(min_length=1)]]):
    """Fields as an object: `{"field": "value"}`; a repeated name shows its last value."""

    model_config = ConfigDict(strict=True)


class FieldPairs(RootModel[Annotated[list[FieldPair], Field(min_length=1)]]):
    """Fields as `[field, value]` pairs: every pair, in order, repeated names kept."""

    model_config = ConfigDict(strict=True)


FieldsIn = Annotated[
    FieldMap | FieldPairs,
    Field(description="Field/value pairs: an object, or a list of `[field, value]` pairs."),
]
FieldsOut = FieldMap | FieldPairs

ENTRY_EXAMPLE: JsonDict = {
    "id": "1526569495631-0",
    "fields": {"sensor": "7", "temperature": "19.8"},
}


class FieldsForm(StrEnum):
    """How an entry's fields are shaped in a response."""

    object = "object"  # {"field": "value"}; a repeated field name shows its last value
    pairs = "pairs"  # [["field", "value"], ...]: every pair, in order


class Entry(BaseModel):
    """A stream entry: its ID and its field/value pairs."""

    model_config = ConfigDict(json_schema_extra={"examples": [ENTRY_EXAMPLE]})

    id: str
    fields: FieldsOut


class MaybeEntry(BaseModel):
    """An entry read as a consumer; ``fields`` is null for one of its history deleted since.
    A read with ``claim_idle_ms`` (XREADGROUP ... CLAIM) adds ``idle_ms`` and
    ``delivery_count`` to every entry."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                ENTRY_EXAMPLE,
                {"id": "1526569495632-0", "fields": None},
                {**ENTRY_EXAMPLE, "idle_ms": 65000, "delivery_count": 1},
            ]
        }
    )

    id: str
    fields: FieldsOut | None
    idle_ms: int | None = Field(
        None,
        description="With `claim_idle_ms`: how long the entry was idle before this read took "
        "it (0 for a new entry; -1 for one released by XNACK). Absent otherwise.",
    )
    delivery_count: int | None = Field(
        None,
        description="With `claim_idle_ms`: how often it was delivered before this read (0 "
        "for a new entry). Absent otherwise.",
    )


class EntryList(BaseModel):
    """A page of entries; ``next`` continues the range when the page was full."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"entries": [ENTRY_EXAMPLE], "next": "(1526569495631-0"}]}
    )

    entries: list[Entry]
    next: str | None = Field(
        None,
        description="Pass as `start` (ascending) or `end` (descending) for the next page; "
        "null when the page was not full.",
    )


class MaybeEntryList(BaseModel):
    """Entries read as a consumer (XREADGROUP)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"entries": [ENTRY_EXAMPLE]}]})

    entries: list[MaybeEntry]


def flatten_all(forms: list[FieldMap | FieldPairs]) -> list[Fields]:
    """``flatten`` of many, in C passes when they all have one form (a batch)."""
    kinds = set(map(type, forms))
    roots = map(_ROOT, forms)
    if kinds == {FieldMap}:
        return list(map(tuple, map(chain.from_iterable, map(dict.items, roots))))
    if kinds == {FieldPairs}:
        return list(map(tuple, map(chain.from_iterable, roots)))
    return list(map(flatten, forms))


_ROOT = attrgetter("root")


def flatten(fields: FieldMap | FieldPairs) -> Fields:
    """A request's fields as the engine keeps them: (f1, v1, f2, v2, ...), order kept."""
    if isinstance(fields, FieldMap):
        return tuple(x for kv in fields.root.items() for x in kv)
    return tuple(x for pair in fields.root for x in pair)


class StreamEntries(BaseModel):
    """One stream's part of a multi-stream read."""

    stream: str
    entries: list[Entry]


class StreamsRead(BaseModel):
    """XREAD over several streams: only the streams that had entries."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"streams": [{"stream": "sensors", "entries": [ENTRY_EXAMPLE]}]}]
        }
    )

    streams: list[StreamEntries]
