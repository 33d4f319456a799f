"""Pending entries, acknowledgements, releases and claims: XPENDING, XACK, XACKDEL, XNACK,
XCLAIM, XAUTOCLAIM."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from app.api.rest.schemas.body import Body
from app.api.rest.schemas.entries import ENTRY_EXAMPLE, Entry
from app.api.rest.schemas.writes import POLICY_DOC, RESULTS_EXAMPLE, IdStatus, Policy, token
from app.engine.commands.claims import ATTEMPTS_FACTOR, LONG_MAX
from app.engine.commands.nack import NackMode
from app.engine.ids import INT64_MAX
from app.engine.refs import RefPolicy

_ID = "1526569495631-0"


class Ack(Body):
    """XACK's IDs."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"ids": [_ID]}]})

    ids: list[str] = Field(min_length=1)


class Acked(BaseModel):
    """How many of the IDs were pending and are now acknowledged."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"acknowledged": 1}]})

    acknowledged: int


class AckDelete(Body):
    """XACKDEL's IDs and reference policy."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"ids": [_ID], "policy": "ACKED"}]})

    ids: list[str] = Field(min_length=1)
    policy: Policy = Field(RefPolicy.KEEPREF, description=POLICY_DOC)


class AckDeleted(BaseModel):
    """XACKDEL: what became of each ID, in order, and the counts. An ID pending in the group
    is acknowledged, then `deleted` or `kept` (`ACKED`: another group still needs it); one
    not pending is `not_found`, neither acknowledged nor deleted."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "acknowledged": 2,
                    "deleted": 1,
                    "kept": 1,
                    "not_found": 1,
                    "results": RESULTS_EXAMPLE,
                }
            ]
        }
    )

    acknowledged: int = Field(description="IDs that were pending and are now acknowledged.")
    deleted: int
    kept: int
    not_found: int = Field(description="IDs not pending in the group: nothing done.")
    results: list[IdStatus]


class Nack(Body):
    """XNACK's arguments."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"ids": [_ID], "mode": "FAIL"}]},
    )

    ids: list[str] = Field(min_length=1)
    mode: Annotated[NackMode, token(NackMode)] = Field(
        description="What the delivery count becomes: `SILENT` takes the delivery back "
        "(count - 1, never below 0), `FAIL` keeps it, `FATAL` sets it to the largest count "
        "(9223372036854775807), so a consumer can tell a poison entry. Any case."
    )
    retry_count: int | None = Field(
        None, ge=0, le=INT64_MAX, description="RETRYCOUNT: set the delivery count outright."
    )
    force: bool = Field(
        False,
        description="FORCE: also release IDs the stream holds that the group does not hold "
        "pending (created unowned).",
    )


class Released(BaseModel):
    """How many entries were released: pending, now without an owner, claimable at once."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"released": 1}]})

    released: int


class ConsumerPending(BaseModel):
    name: str
    pending: int


class PendingEntry(BaseModel):
    """One row of extended XPENDING."""

    id: str
    consumer: str
    idle_ms: int
    delivery_count: int


class Pending(BaseModel):
    """XPENDING: the summary, and the rows asked for when ``count`` was given (else null)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "count": 1,
                    "first_id": _ID,
                    "last_id": _ID,
                    "consumers": [{"name": "alice", "pending": 1}],
                    "entries": [
                        {"id": _ID, "consumer": "alice", "idle_ms": 9104, "delivery_count": 1}
                    ],
                }
            ]
        }
    )

    count: int
    first_id: str | None
    last_id: str | None
    consumers: list[ConsumerPending]
    entries: list[PendingEntry] | None


class Claim(Body):
    """XCLAIM's arguments."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"consumer": "bob", "min_idle_ms": 60000, "ids": [_ID], "retry_count": 2}]
        },
    )

    consumer: str
    min_idle_ms: int = Field(
        ge=0, le=INT64_MAX, description="Claim only entries idle at least this long."
    )
    ids: list[str] = Field(min_length=1)
    idle_ms: int | None = Field(None, ge=0, le=INT64_MAX, description="IDLE: set the idle time.")
    time_ms: int | None = Field(
        None, ge=0, le=INT64_MAX, description="TIME: set the delivery time (Unix ms)."
    )
    retry_count: int | None = Field(
        None, ge=0, le=INT64_MAX, description="RETRYCOUNT: set the delivery count."
    )
    force: bool = Field(False, description="FORCE: claim IDs even if not pending.")
    justid: bool = Field(False, description="JUSTID: return IDs only, count no delivery.")
    last_id: str | None = Field(None, description="LASTID: raise the group's last-delivered ID.")


class Claimed(BaseModel):
    """The IDs claimed; ``entries`` holds them with their fields, null with ``justid``."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"ids": [_ID], "entries": [ENTRY_EXAMPLE]}]}
    )

    ids: list[str]
    entries: list[Entry] | None


class AutoClaim(Body):
    """XAUTOCLAIM's arguments."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"consumer": "bob", "min_idle_ms": 60000, "start": "0-0", "count": 25}]
        },
    )

    consumer: str
    min_idle_ms: int = Field(
        ge=0, le=INT64_MAX, description="Claim only entries idle at least this long."
    )
    start: str = Field("0-0", description="The cursor: scan the PEL from this ID.")
    count: int = Field(
        100,
        ge=1,
        le=LONG_MAX // max(16, ATTEMPTS_FACTOR),
        description="COUNT: claim at most this many entries.",
    )
    justid: bool = Field(False, description="JUSTID: return IDs only, count no delivery.")


class AutoClaimed(BaseModel):
    """What XAUTOCLAIM did; continue from ``next_start`` until it is `0-0`."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "next_start": "0-0",
                    "ids": [_ID],
                    "entries": [ENTRY_EXAMPLE],
                    "deleted_ids": ["1526569495630-0"],
                }
            ]
        }
    )

    next_start: str
    ids: list[str]
    entries: list[Entry] | None
    deleted_ids: list[str] = Field(
        description="Pending IDs found deleted and removed from the PEL."
    )
