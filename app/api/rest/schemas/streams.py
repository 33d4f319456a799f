"""Stream resources: the list page (SCAN), XINFO STREAM and XINFO STREAM FULL."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

from app.api.encoding import rest_entry
from app.api.rest.schemas.entries import ENTRY_EXAMPLE, Entry, FieldsForm
from app.engine import replies
from app.engine.idmp import IdmpInfo
from app.engine.ids import format_id
from app.engine.stream import Entry as EngineEntry

_INFO_EXAMPLE: JsonDict = {
    "name": "sensors",
    "length": 2,
    "radix_tree_keys": 1,
    "radix_tree_nodes": 2,
    "last_generated_id": "1526569495632-0",
    "max_deleted_entry_id": "0-0",
    "entries_added": 2,
    "recorded_first_entry_id": "1526569495631-0",
    "groups": 1,
    "first_entry": ENTRY_EXAMPLE,
    "last_entry": {"id": "1526569495632-0", "fields": {"sensor": "7", "temperature": "20.1"}},
}


class StreamSummary(BaseModel):
    """A stream as the list shows it: XINFO STREAM's counters and the IDs of its first and last
    entries (an ID's first part is the entry's time in ms; null when the stream is empty).
    ``entries_added`` only grows, so two pages read a while apart give the rate of appends."""

    name: str
    length: int
    groups: int
    last_generated_id: str
    entries_added: int
    first_entry_id: str | None
    last_entry_id: str | None


class StreamPage(BaseModel):
    """One SCAN page; ``next_cursor`` is null once the iteration is complete."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "streams": [
                        {
                            "name": "sensors",
                            "length": 2,
                            "groups": 1,
                            "last_generated_id": "1526569495632-0",
                            "entries_added": 2,
                            "first_entry_id": "1526569495631-0",
                            "last_entry_id": "1526569495632-0",
                        }
                    ],
                    "next_cursor": 2983154621,
                }
            ]
        }
    )

    streams: list[StreamSummary]
    next_cursor: int | None = Field(description="Pass as `cursor` for the next page.")


class IdmpState(BaseModel):
    """The stream's idempotent appends (Redis 8.6's IDMP fields of XINFO STREAM)."""

    duration_s: int = Field(description="IDMP-DURATION: seconds an idempotent ID is kept.")
    maxsize: int = Field(description="IDMP-MAXSIZE: idempotent IDs kept per producer.")
    pids_tracked: int = Field(description="Producers with idempotent IDs kept now.")
    iids_tracked: int = Field(description="Idempotent IDs kept now, over all producers.")
    iids_added: int = Field(description="Appends that recorded a new idempotent ID, ever.")
    iids_duplicates: int = Field(description="Repeats answered without appending, ever.")
    pids_evicted: int = Field(
        description="Producers forgotten, with their idempotent IDs, because the stream held"
        " XSTREAMS_IDMP_MAX_PRODUCERS others that appended more recently (embedded backend;"
        " always 0 in front of Redis, which has no such cap)."
    )


IDMP_DOC = (
    "Idempotent appends (Redis 8.6): present once an append named a `producer` or the "
    "stream was configured (`PUT .../config`); null before."
)


class _StreamHeader(BaseModel):
    """The stream's name, then the fields XINFO STREAM and XINFO STREAM FULL begin with."""

    name: str
    length: int
    radix_tree_keys: int
    radix_tree_nodes: int
    last_generated_id: str
    max_deleted_entry_id: str
    entries_added: int
    recorded_first_entry_id: str


def _header(name: str, h: replies.StreamHeader) -> dict[str, Any]:
    """``_StreamHeader``'s fields from the engine's header, shaped once for both resources."""
    return {
        "name": name,
        "length": h.length,
        "radix_tree_keys": h.radix_tree_keys,
        "radix_tree_nodes": h.radix_tree_nodes,
        "last_generated_id": format_id(h.last_generated_id),
        "max_deleted_entry_id": format_id(h.max_deleted_entry_id),
        "entries_added": h.entries_added,
        "recorded_first_entry_id": format_id(h.recorded_first_entry_id),
        "idmp": None if h.idmp is None else _idmp(h.idmp),
    }


def _idmp(m: IdmpInfo) -> IdmpState:
    return IdmpState(
        duration_s=m.idmp_duration,
        maxsize=m.idmp_maxsize,
        pids_tracked=m.pids_tracked,
        iids_tracked=m.iids_tracked,
        iids_added=m.iids_added,
        iids_duplicates=m.iids_duplicates,
        pids_evicted=m.pids_evicted,
    )


class StreamInfo(_StreamHeader):
    """XINFO STREAM."""

    model_config = ConfigDict(json_schema_extra={"examples": [_INFO_EXAMPLE]})

    groups: int
    first_entry: Entry | None
    last_entry: Entry | None
    idmp: IdmpState | None = Field(None, description=IDMP_DOC)


class PendingDelivery(BaseModel):
    """A pending entry as XINFO STREAM FULL lists it."""

    id: str
    consumer: str
    delivered_at_ms: int
    delivery_count: int


class ConsumerFull(BaseModel):
    name: str
    seen_time_ms: int
    pel_count: int
    pending: list[PendingDelivery]


class GroupFull(BaseModel):
    name: str
    last_delivered_id: str
    entries_read: int | None = Field(description="Null when Redis cannot tell.")
    lag: int | None = Field(description="Null when Redis cannot tell.")
    pel_count: int
    pending: list[PendingDelivery]
    consumers: list[ConsumerFull]


class StreamFullInfo(_StreamHeader):
    """XINFO STREAM FULL: entries, groups, their PELs and consumers (each list bounded)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "sensors",
                    "length": 1,
                    "radix_tree_keys": 1,
                    "radix_tree_nodes": 2,
                    "last_generated_id": "1526569495631-0",
                    "max_deleted_entry_id": "0-0",
                    "entries_added": 1,
                    "recorded_first_entry_id": "1526569495631-0",
                    "entries": [ENTRY_EXAMPLE],
                    "groups": [
                        {
                            "name": "billing",
                            "last_delivered_id": "1526569495631-0",
                            "entries_read": 1,
                            "lag": 0,
                            "pel_count": 1,
                            "pending": [
                                {
                                    "id": "1526569495631-0",
                                    "consumer": "alice",
                                    "delivered_at_ms": 1526569498000,
                                    "delivery_count": 1,
                                }
                            ],
                            "consumers": [
                                {
                                    "name": "alice",
                                    "seen_time_ms": 1526569498000,
                                    "pel_count": 1,
                                    "pending": [
                                        {
                                            "id": "1526569495631-0",
                                            "consumer": "alice",
                                            "delivered_at_ms": 1526569498000,
                                            "delivery_count": 1,
                                        }
                                    ],
                                }
                            ],
                        }
                    ],
                }
            ]
        }
    )

    entries: list[Entry]
    groups: list[GroupFull]
    idmp: IdmpState | None = Field(None, description=IDMP_DOC)


def stream_summary(name: str, i: replies.StreamInfo) -> StreamSummary:
    return StreamSummary(
        name=name,
        length=i.header.length,
        groups=i.groups,
        last_generated_id=format_id(i.header.last_generated_id),
        entries_added=i.header.entries_added,
        first_entry_id=format_id(i.first_entry.id) if i.first_entry else None,
        last_entry_id=format_id(i.last_entry.id) if i.last_entry else None,
    )


def entry(e: EngineEntry, form: FieldsForm) -> Entry:
    """An entry of XINFO's reply, from the shared encoder's values (app/api/encoding)."""
    return Entry.model_validate(rest_entry(e, form))


def stream_info(name: str, i: replies.StreamInfo, form: FieldsForm) -> StreamInfo:
    return StreamInfo(
        **_header(name, i.header),
        groups=i.groups,
        first_entry=entry(i.first_entry, form) if i.first_entry else None,
        last_entry=entry(i.last_entry, form) if i.last_entry else None,
    )


def _delivery(p: replies.PendingDelivery) -> PendingDelivery:
    return PendingDelivery(
        id=format_id(p.id),
        consumer=p.consumer,
        delivered_at_ms=p.delivered_at_ms,
        delivery_count=p.delivery_count,
    )


def stream_full_info(name: str, i: replies.StreamFullInfo, form: FieldsForm) -> StreamFullInfo:
    return StreamFullInfo(
        **_header(name, i.header),
        entries=[entry(e, form) for e in i.entries],
        groups=[
            GroupFull(
                name=g.name,
                last_delivered_id=format_id(g.last_delivered_id),
                entries_read=g.entries_read,
                lag=g.lag,
                pel_count=g.pel_count,
                pending=[_delivery(p) for p in g.pending],
                consumers=[
                    ConsumerFull(
                        name=c.name,
                        seen_time_ms=c.seen_time_ms,
                        pel_count=c.pel_count,
                        pending=[_delivery(p) for p in c.pending],
                    )
                    for c in g.consumers
                ],
            )
            for g in i.groups
        ],
    )
