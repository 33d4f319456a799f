"""Entries as JSON: the one encoder behind the command endpoint, the REST resources and SSE.

Every surface shows an entry from the same engine object, in one representation of bytes that
are not UTF-8 (``\\udcNN``, app/api/binary), so what one surface writes another reads back.
No model is built per entry: a page of entries becomes plain lists and dicts around the
engine's own field tuples, and orjson writes the whole reply in one call (``encode_json``).
The response models in app/api/schemas describe these bytes in the OpenAPI contract
(tests/api/rest/test_openapi.py holds the contract); they are not instantiated on the read path.

Shapes:

- command endpoint (RESP as JSON): ``["1-0", ["f", "v", ...]]`` (``resp_entries``);
- REST and SSE: ``{"id": "1-0", "fields": {"f": "v"}}``, or with ``fields=pairs``
  ``{"id": "1-0", "fields": [["f", "v"]]}`` (``rest_entry``); a consumer's history entry
  deleted since has ``"fields": null`` (``rest_maybe_entry``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import Any

from app.api.binary import encode_json
from app.api.rest.schemas.entries import FieldsForm
from app.engine.ids import format_id
from app.engine.replies import ClaimedEntry, MissingEntry
from app.engine.stream import Entry, Fields

__all__ = [
    "encode_json",
    "fields_value",
    "resp_entries",
    "rest_entries",
    "rest_entry",
    "rest_maybe_entries",
    "rest_maybe_entry",
    "sse_entry_data",
]


_ID, _FIELDS = itemgetter(0), itemgetter(1)


def resp_entries(entries: Sequence[Entry]) -> list[Any]:
    """XRANGE's reply shape: (ID, fields) pairs, which orjson writes as arrays, made in C
    passes (an ID is a tuple of two integers, formatted by ``%``)."""
    texts = map("%d-%d".__mod__, map(_ID, entries))
    return list(zip(texts, map(_FIELDS, entries), strict=True))


def fields_value(fields: Fields, form: FieldsForm) -> dict[str, str] | list[list[str]]:
    """``object``: a repeated field name shows its last value; ``pairs``: every pair, in
    order (``schemas.entries.FieldsForm``)."""
    if form is FieldsForm.pairs:
        return [[fields[i], fields[i + 1]] for i in range(0, len(fields), 2)]
    return dict(zip(fields[0::2], fields[1::2], strict=True))


def rest_entry(e: Entry, form: FieldsForm) -> dict[str, Any]:
    """``schemas.entries.Entry`` as plain values."""
    return {"id": "%d-%d" % e.id, "fields": fields_value(e.fields, form)}  # noqa: UP031


def rest_entries(entries: Iterable[Entry], form: FieldsForm) -> list[dict[str, Any]]:
    if form is FieldsForm.pairs:
        return [rest_entry(e, form) for e in entries]
    # The common form, without a call per entry; one iterator zipped with itself pairs a
    # field tuple (always even: the engine's) at half the cost of two slices.
    return [
        {"id": "%d-%d" % e.id, "fields": dict(zip(it := iter(e.fields), it, strict=False))}  # noqa: UP031
        for e in entries
    ]


def rest_maybe_entry(e: Entry | MissingEntry | ClaimedEntry, form: FieldsForm) -> dict[str, Any]:
    """``schemas.entries.MaybeEntry`` as plain values; a claimed entry (a read with CLAIM)
    adds how long it was idle and how often it was delivered before."""
    if isinstance(e, MissingEntry):
        return {"id": format_id(e.id), "fields": None}
    if isinstance(e, ClaimedEntry):
        body = rest_entry(Entry(e.id, e.fields), form)
        body["idle_ms"] = e.idle_ms
        body["delivery_count"] = e.delivery_count
        return body
    return rest_entry(e, form)


def rest_maybe_entries(
    entries: list[Entry | MissingEntry | ClaimedEntry], form: FieldsForm
) -> list[dict[str, Any]]:
    """``rest_maybe_entry`` for each; a page of plain entries (a ``>`` read's) is encoded as
    ``rest_entries`` encodes a range."""
    if all(type(e) is Entry for e in entries):
        return rest_entries(entries, form)  # type: ignore[arg-type]
    return [rest_maybe_entry(e, form) for e in entries]


def sse_entry_data(e: Entry, form: FieldsForm, stream: str | None) -> bytes:
    """An SSE ``entry`` event's data: the REST entry, with ``stream`` first on a multi-stream
    connection."""
    body = rest_entry(e, form)
    if stream is not None:
        body = {"stream": stream, **body}
    return encode_json(body)
