"""Server-Sent Events: live tails of streams and consumer-group delivery, for EventSource.

Thin handlers: each parses its query (IDs only through the engine's parsers, checked as the
backend's XREAD checks them), checks what must exist (a 404 problem comes before anything
streams), and hands an ``EventStream`` the source that will feed it (``tail.follow`` or
``group.deliver``). ``Last-Event-ID``, which a browser sends by itself when it reconnects,
wins over ``last_id``. Everything goes through the app's ``Services`` (its backend, which
answers only what is durable), never a store or keyspace.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Header, Query, Request
from starlette.responses import Response

from app.api.access_gate import principal_of
from app.api.meter import METER, patiently
from app.api.rest.common import ConsumerName, GroupName, RestRoute, StreamName, errors
from app.api.rest.schemas.entries import FieldsForm
from app.api.rest.schemas.problem import Problem
from app.api.services import Services, ServicesDep, services_of
from app.api.sse.group import GroupDelivery, deliver
from app.api.sse.outbox import Outbox, Parked
from app.api.sse.response import EventStream
from app.api.sse.subscriber import Subscriber
from app.api.sse.tail import follow, stream_info
from app.api.sse.wire import parse_positions
from app.engine.commands.reads import ReadRequest
from app.engine.ids import INT64_MAX, MIN_ID, StreamID, parse_strict_id

router = APIRouter(prefix="/v1", tags=["events"], route_class=RestRoute)

LastEventId = Annotated[
    str | None,
    Header(
        alias="Last-Event-ID",
        description="Sent by EventSource on reconnect: resume after this event (wins over "
        "`last_id`).",
    ),
]
Fields = Annotated[
    FieldsForm, Query(description="`object` (default) or `pairs` (every pair, in order).")
]


def _stream_doc(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """An event stream's responses: the events, and its errors, which come before the stream
    starts as problem documents (``application/problem+json``, as on every route)."""
    return {
        200: {
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
            "description": "Events: `entry` (`id:` = entry ID), `gap`, `error`; `: ping` comments.",
        },
        **errors(*statuses),
        429: {"model": Problem, "description": "Too many event streams open (`Retry-After`)."},
    }


def install(app: FastAPI) -> None:
    """Register the SSE routes (before the /v1 fallback). The state they share, the registry
    of open streams and the tails, is the app's ``Services`` (``sse``, ``sse_tails``)."""
    app.include_router(router)


async def _positions(services: Services, keys: list[str], last_id: str) -> dict[str, StreamID]:
    """Each stream's start: ``$`` (only new entries) or an ID, as XREAD reads them.

    The request is first checked by an XREAD of one entry naming the same streams and IDs
    (no BLOCK): its errors (an invalid ID, ``>``, more streams than ``max_read_keys``) are
    this request's, with the backend's text; ``$`` is then each stream's last ID."""
    backend = services.backend
    await backend.read(ReadRequest(keys, [last_id] * len(keys), count=1))
    if last_id != "$":
        start = parse_strict_id(last_id)
        return dict.fromkeys(keys, start)
    positions: dict[str, StreamID] = {}
    for key in keys:
        info = await stream_info(backend, key)
        positions[key] = info.header.last_generated_id if info is not None else MIN_ID
    return positions


def _tail(request: Request, positions: dict[str, StreamID], form: FieldsForm,
          multi: bool) -> EventStream:  # fmt: skip
    tails = services_of(request).sse_tails
    meter = METER.get()  # its entries are counted as they are sent, and wait for the rate
    if meter is not None and meter.entries is not None:
        meter.patient = True
    else:
        meter = None
    tenant = principal_of(request.scope).tenant

    async def source(outbox: Outbox) -> Parked | None:
        return await follow(tails, Subscriber(outbox, positions, form, multi, meter, tenant))

    return EventStream(request, source)


@router.get(
    "/streams/{stream}/events",
    operation_id="tail_stream_events",
    summary="Live tail of a stream (XREAD BLOCK as Server-Sent Events)",
    response_class=EventStream,
    status_code=200,  # EventStream takes no status_code: FastAPI needs it for OpenAPI
    responses=_stream_doc(),
)
async def stream_events(
    request: Request,
    services: ServicesDep,
    stream: StreamName,
    last_event_id: LastEventId = None,
    last_id: Annotated[
        str, Query(description="`$` (default): only new entries; an ID: the entries after it.")
    ] = "$",
    fields: Fields = FieldsForm.object,
) -> Response:
    """Each entry is an `entry` event whose `id:` is the entry ID, so EventSource resumes
    exactly where it stopped; entries removed before they could be sent give a `gap` event."""
    positions = await _positions(services, [stream], last_id)
    if last_event_id:
        positions[stream] = parse_strict_id(last_event_id)
    return _tail(request, positions, fields, multi=False)


@router.get(
    "/events",
    operation_id="tail_streams_events",
    summary="Live tail of several streams in one connection",
    response_class=EventStream,
    status_code=200,  # EventStream takes no status_code: FastAPI needs it for OpenAPI
    responses=_stream_doc(),
)
async def streams_events(
    request: Request,
    services: ServicesDep,
    stream: Annotated[list[str], Query(min_length=1, description="A stream; repeat it.")],
    last_event_id: LastEventId = None,
    last_id: Annotated[str, Query(description="Start of every stream: `$` or an ID.")] = "$",
    fields: Fields = FieldsForm.object,
) -> Response:
    """Events carry `"stream"` in their data; the event ID holds every stream's position
    (`a=1-0&b=5-2`, names percent-encoded), so `Last-Event-ID` resumes all of them."""
    tenant = principal_of(request.scope).tenant
    keys = [tenant.inward(s) for s in dict.fromkeys(stream)]
    positions = await _positions(services, keys, last_id)
    if last_event_id:
        resumed = parse_positions(last_event_id)
        named = ((tenant.inward(k), v) for k, v in resumed.items())
        positions.update((k, v) for k, v in named if k in positions)
    return _tail(request, positions, fields, multi=True)


@router.get(
    "/streams/{stream}/groups/{group}/consumers/{consumer}/events",
    operation_id="consume_group_events",
    summary="Consumer-group delivery (XREADGROUP BLOCK as Server-Sent Events)",
    response_class=EventStream,
    status_code=200,  # EventStream takes no status_code: FastAPI needs it for OpenAPI
    responses=_stream_doc(404),
)
async def consumer_events(
    request: Request,
    services: ServicesDep,
    stream: StreamName,
    group: GroupName,
    consumer: ConsumerName,
    last_event_id: LastEventId = None,
    last_id: Annotated[
        str, Query(description="History (pending entries) after this ID; `0`: all of it.")
    ] = "0",
    noack: Annotated[bool, Query(description="Do not record entries as pending.")] = False,
    max_unacked: Annotated[
        int, Query(ge=0, description="Pause while the consumer holds this many (0: no limit).")
    ] = 0,
    fields: Fields = FieldsForm.object,
    claim_idle_ms: Annotated[
        int | None,
        Query(
            ge=0,
            le=INT64_MAX,
            description="CLAIM min-idle-time (Redis 8.4): before new entries, take over the "
            "group's pending entries idle this long (released by XNACK first); their events "
            "carry `idle_ms` and `delivery_count`.",
        ),
    ] = None,
) -> Response:
    """The consumer's pending entries first, then new ones (`>`), each recorded as pending for
    it unless `noack`; subscribers of one group share the entries. Acknowledge with the acks
    resource (XACK). The consumer is created by its first read, as XREADGROUP creates it;
    the group must exist (404 NOGROUP).

    With `claim_idle_ms` each read of new entries is XREADGROUP ... CLAIM (Redis 8.4): idle
    pending entries of the group, and entries released by XNACK, come before new ones, and
    every entry event after the history says in its data how long the entry was idle
    (`idle_ms`: -1 released, 0 new) and how often it was delivered before
    (`delivery_count`). An entry sent and not acknowledged within that time comes again."""
    # XPENDING's summary: NOGROUP (404) for a missing stream or group, and nothing created.
    await services.backend.pending_summary(stream, group)
    after = parse_strict_id(last_event_id or last_id)
    d = GroupDelivery(stream, group, consumer, after, noack, max_unacked, fields, claim_idle_ms)
    patiently()  # past the entries budget the stream pauses (app/api/meter.py)

    async def source(outbox: Outbox) -> None:
        await deliver(services.backend, d, outbox)

    return EventStream(request, source)
