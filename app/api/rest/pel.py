"""Pending entries: acknowledge (XACK, XACKDEL), release (XNACK), inspect (XPENDING), claim
(XCLAIM, XAUTOCLAIM)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query

from app.api.encoding import rest_entries
from app.api.rest.common import Encoded, FieldsParam, GroupName, StreamName, errors, router
from app.api.rest.explain import on_group, parsed_on_group
from app.api.rest.schemas.entries import FieldsForm
from app.api.rest.schemas.pel import (
    Ack,
    AckDelete,
    AckDeleted,
    Acked,
    AutoClaim,
    AutoClaimed,
    Claim,
    Claimed,
    ConsumerPending,
    Nack,
    Pending,
    PendingEntry,
    Released,
)
from app.api.rest.schemas.writes import statuses
from app.api.services import BackendDep
from app.engine.commands.claims import AutoClaimArgs, ClaimArgs
from app.engine.commands.groups import PendingArgs
from app.engine.commands.nack import NackArgs
from app.engine.ids import (
    INT64_MAX,
    StreamID,
    format_id,
    parse_range_end,
    parse_range_start,
    parse_strict_id,
)
from app.engine.stream import Entry

api = router("/v1/streams/{stream}/groups/{group}", "pending entries")


@api.post(
    "/acks",
    operation_id="ack_entries",
    summary="Acknowledge entries",
    response_model=Acked,
    responses=errors(404, 413),
)
async def ack_entries(
    stream: StreamName, group: GroupName, body: Ack, backend: BackendDep
) -> Acked | Encoded:
    """Remove the entries from the group's PEL (XACK); IDs not pending are not counted."""
    ids = await parsed_on_group(
        backend, stream, group, lambda: [parse_strict_id(x) for x in body.ids]
    )
    acknowledged = await backend.ack(stream, group, ids)
    if not acknowledged:  # XACK answers 0 for a missing key or group too: the path's 404
        await backend.group(stream, group)  # act first, explain after (app/api/rest/explain)
    return Encoded({"acknowledged": acknowledged})  # ``Acked``, without a model (consume path)


@api.post(
    "/ackdels",
    operation_id="ack_delete_entries",
    summary="Acknowledge and delete entries",
    response_model=AckDeleted,
    responses=errors(404, 413),
)
async def ack_delete_entries(
    stream: StreamName, group: GroupName, body: AckDelete, backend: BackendDep
) -> AckDeleted | Encoded:
    """Acknowledge the entries in the group and delete them from the stream in one step
    (XACKDEL key group policy IDS numids id ..., Redis 8.2), under the reference `policy`
    (`KEEPREF`, `DELREF`, `ACKED`). Each ID's status, in order: `deleted` (1: acknowledged
    and deleted, or already gone from the stream), `kept` (2: acknowledged, but `ACKED` and
    another group still needs it) or `not_found` (-1: not pending in this group, so neither
    acknowledged nor deleted). Needs both the consume and the write grant on the stream."""
    ids = await parsed_on_group(
        backend, stream, group, lambda: [parse_strict_id(x) for x in body.ids]
    )
    codes = await on_group(
        backend, stream, group, backend.ack_delete(stream, group, ids, body.policy)
    )
    if all(c == -1 for c in codes):  # as XACK: a missing key or group answers -1 for each
        await backend.group(stream, group)  # act first, explain after (app/api/rest/explain)
    reply = statuses([format_id(x) for x in ids], codes)
    return Encoded({"acknowledged": reply["deleted"] + reply["kept"], **reply})


@api.post(
    "/nacks",
    operation_id="nack_entries",
    summary="Release pending entries",
    response_model=Released,
    responses=errors(404, 413),
)
async def nack_entries(
    stream: StreamName, group: GroupName, body: Nack, backend: BackendDep
) -> Released:
    """Give pending entries back to the group without acknowledging them (XNACK key group
    SILENT|FAIL|FATAL IDS numids id ... [RETRYCOUNT n] [FORCE], Redis 8.8): they stay
    pending with no owner (`consumer` "" and `idle_ms` -1 in the pending list), and the next
    claim of any consumer takes them first (a read with `claim_idle_ms`, XCLAIM, XAUTOCLAIM).
    `mode` says what their delivery count becomes. IDs not pending are skipped (unless
    `force`); `released` counts the others."""
    a = await parsed_on_group(
        backend,
        stream,
        group,
        lambda: NackArgs(
            stream,
            group,
            body.mode,
            [parse_strict_id(x) for x in body.ids],
            body.retry_count,
            body.force,
        ),
    )
    return Released(released=await on_group(backend, stream, group, backend.nack(a)))


@api.get(
    "/pending",
    operation_id="get_pending",
    summary="Inspect pending entries",
    response_model=Pending,
    responses=errors(404),
)
async def get_pending(
    stream: StreamName,
    group: GroupName,
    backend: BackendDep,
    start: Annotated[str, Query(description="`-`, an ID, or exclusive `(id`.")] = "-",
    end: Annotated[str, Query(description="`+`, an ID, or exclusive `(id`.")] = "+",
    count: Annotated[
        int | None, Query(ge=0, le=INT64_MAX, description="List up to this many entries.")
    ] = None,
    consumer: Annotated[str | None, Query(description="Only this consumer's entries.")] = None,
    min_idle_ms: Annotated[
        int, Query(ge=0, le=INT64_MAX, description="IDLE: only entries idle this long.")
    ] = 0,
) -> Pending:
    """The group's PEL summary (XPENDING key group) and, when `count` is given, the entries
    themselves (XPENDING key group [IDLE min_idle_ms] start end count [consumer])."""
    summary = await backend.pending_summary(stream, group)
    rows = None
    if count is not None:
        a = PendingArgs(
            stream,
            group,
            parse_range_start(start),
            parse_range_end(end),
            count,
            consumer,
            min_idle_ms,
        )
        rows = [
            PendingEntry(
                id=format_id(r.id),
                consumer=r.consumer,
                idle_ms=r.idle_ms,
                delivery_count=r.delivery_count,
            )
            for r in await backend.pending(a)
        ]
    return Pending(
        count=summary.count,
        first_id=format_id(summary.first) if summary.first else None,
        last_id=format_id(summary.last) if summary.last else None,
        consumers=[ConsumerPending(name=n, pending=p) for n, p in summary.consumers],
        entries=rows,
    )


def _claimed(found: list[Entry | StreamID], justid: bool, form: FieldsForm) -> dict[str, Any]:
    """``Claimed`` as plain values (app/api/encoding): no model per entry."""
    entries = [x for x in found if isinstance(x, Entry)]
    ids = [format_id(x.id if isinstance(x, Entry) else x) for x in found]
    return {"ids": ids, "entries": None if justid else rest_entries(entries, form)}


@api.post(
    "/claims",
    operation_id="claim_entries",
    summary="Claim pending entries",
    response_model=Claimed,
    responses=errors(404, 409, 413),
)
async def claim_entries(
    stream: StreamName,
    group: GroupName,
    body: Claim,
    backend: BackendDep,
    fields: FieldsParam = FieldsForm.object,
) -> Claimed | Encoded:
    """Give pending entries idle at least `min_idle_ms` to `consumer` (XCLAIM, with IDLE,
    TIME, RETRYCOUNT, FORCE, JUSTID and LASTID). Entries deleted from the stream leave the PEL
    and are not returned."""
    # No look first: XCLAIM refuses a missing key or group itself (app/api/rest/explain).
    a = await parsed_on_group(
        backend,
        stream,
        group,
        lambda: ClaimArgs(
            stream,
            group,
            body.consumer,
            body.min_idle_ms,
            [parse_strict_id(x) for x in body.ids],
            body.idle_ms,
            body.time_ms,
            body.retry_count,
            body.force,
            body.justid,
            parse_strict_id(body.last_id) if body.last_id is not None else None,
        ),
    )
    found = await on_group(backend, stream, group, backend.claim(a))
    return Encoded(_claimed(found, body.justid, fields))


@api.post(
    "/autoclaims",
    operation_id="autoclaim_entries",
    summary="Claim idle pending entries from a cursor",
    response_model=AutoClaimed,
    responses=errors(404, 409, 413),
)
async def autoclaim_entries(
    stream: StreamName,
    group: GroupName,
    body: AutoClaim,
    backend: BackendDep,
    fields: FieldsParam = FieldsForm.object,
) -> AutoClaimed | Encoded:
    """Scan the PEL from `start` and give entries idle at least `min_idle_ms` to `consumer`
    (XAUTOCLAIM, COUNT, JUSTID). Continue from `next_start` until it is `0-0`; `deleted_ids`
    lists pending entries found deleted from the stream (removed from the PEL)."""
    # No look first: XAUTOCLAIM refuses a missing key or group itself (app/api/rest/explain).
    start = await parsed_on_group(backend, stream, group, lambda: parse_range_start(body.start))
    a = AutoClaimArgs(
        stream, group, body.consumer, body.min_idle_ms, start, body.count, body.justid
    )
    result = await on_group(backend, stream, group, backend.autoclaim(a))
    claimed = _claimed(result.claimed, body.justid, fields)
    return Encoded(
        {
            "next_start": format_id(result.next_id),
            **claimed,
            "deleted_ids": [format_id(x) for x in result.deleted],
        }
    )
