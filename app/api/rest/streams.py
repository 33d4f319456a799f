"""Streams: list (SCAN), info (XINFO STREAM [FULL]), delete (DEL), trim (XTRIM), XSETID,
configuration (XCFGSET)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request, Response

from app.access import readable
from app.api.access_gate import principal_of
from app.api.errors import no_such_stream
from app.api.rest.common import FieldsParam, StreamName, errors, page_count, router, shown
from app.api.rest.explain import explained
from app.api.rest.schemas.entries import FieldsForm
from app.api.rest.schemas.streams import (
    StreamFullInfo,
    StreamInfo,
    StreamPage,
    stream_full_info,
    stream_info,
    stream_summary,
)
from app.api.rest.schemas.writes import LastId, StreamConfig, Trim, Trimmed
from app.api.services import BackendDep, ServicesDep
from app.engine.commands.streams import xsetid_args
from app.engine.commands.xcfgset import xcfgset_args
from app.engine.errors import CommandError
from app.engine.ids import INT64_MAX, UINT64_MAX

api = router("/v1/streams", "streams")


@api.get(
    "",
    operation_id="list_streams",
    summary="List streams",
    response_model=StreamPage,
    responses=errors(),
)
async def list_streams(
    request: Request,
    backend: BackendDep,
    cursor: Annotated[int, Query(ge=0, le=UINT64_MAX, description="0 to start.")] = 0,
    count: Annotated[int, Query(ge=1, le=10_000, description="About this many per page.")] = 10,
    match: Annotated[str | None, Query(description="A glob on stream names.")] = None,
) -> StreamPage:
    """Page through the streams with a cursor (SCAN, with MATCH and COUNT), each with its
    length, groups, last ID, entries added and first and last entry IDs (XINFO STREAM). As
    SCAN guarantees, a stream present for the whole iteration is listed at least once; a page
    may be empty before the end. Only the streams the caller may read are listed."""
    principal = principal_of(request.scope)
    tenant = principal.tenant
    if tenant:  # only the credential's own streams (app/access/prefix.py)
        match = tenant.glob("*" if match is None else match)
    page = await backend.scan(cursor, match, count)
    keys = [k for k in readable(principal.grant, page.keys) if tenant.owns(k)]
    # One call for the page (one round trip on Redis), not one per key; None: deleted (or
    # replaced by another type) since the page was read.
    infos = await backend.stream_infos(keys)
    pairs = zip(keys, infos, strict=True)
    summaries = [
        stream_summary(tenant.outward(key), info) for key, info in pairs if info is not None
    ]
    return StreamPage(streams=summaries, next_cursor=page.cursor or None)


@api.get(
    "/{stream}",
    operation_id="get_stream",
    summary="Get a stream's info",
    response_model=StreamFullInfo | StreamInfo,
    response_description="XINFO STREAM, or XINFO STREAM FULL with `full=true`.",
    responses=errors(404),
)
async def get_stream(
    stream: StreamName,
    services: ServicesDep,
    request: Request,
    fields: FieldsParam = FieldsForm.object,
    full: Annotated[bool, Query(description="FULL: entries, groups, PELs, consumers.")] = False,
    count: Annotated[
        int,
        Query(
            ge=0,
            le=INT64_MAX,
            description="With `full`: bound each list, at most `rest_max_count` (1000 unless "
            "configured); 0: all, while the stream and each PEL are within that bound.",
        ),
    ] = 10,
) -> StreamFullInfo | StreamInfo:
    """XINFO STREAM, or XINFO STREAM FULL COUNT `count` with `full=true`."""
    backend = services.backend
    if full:
        if count:
            count = page_count(request, count)
        else:  # 0, everything: only while everything is within one page
            length = (await backend.stream_info(stream)).header.length
            most = services.settings.rest_max_count
            if length > most or any(g.pending > most for g in await backend.groups(stream)):
                raise CommandError.err(
                    f"count=0 (everything) needs a stream of at most {most} entries and "
                    f"pending entries per group (rest_max_count); pass a count"
                )
        full_info = await backend.stream_full_info(stream, count)
        return stream_full_info(shown(request, stream), full_info, fields)
    return stream_info(shown(request, stream), await backend.stream_info(stream), fields)


@api.delete(
    "/{stream}",
    operation_id="delete_stream",
    summary="Delete a stream",
    status_code=204,
    response_class=Response,
    responses=errors(404, 503),
)
async def delete_stream(stream: StreamName, backend: BackendDep) -> Response:
    """Delete the stream with its entries and groups (DEL). Deleting again answers 404."""
    if not await backend.delete_stream(stream):
        raise no_such_stream()
    return Response(status_code=204)


@api.post(
    "/{stream}/trim",
    operation_id="trim_stream",
    summary="Trim a stream",
    response_model=Trimmed,
    responses=errors(404, 413),
)
async def trim_stream(stream: StreamName, body: Trim, backend: BackendDep) -> Trimmed:
    """Remove the oldest entries (XTRIM MAXLEN|MINID [~] threshold [LIMIT count]
    [KEEPREF|DELREF|ACKED]). Exactly one of `maxlen` and `minid`; `limit` only with
    `approximate`. A `policy` other than `KEEPREF` is Redis 8.2's (XTRIM ... DELREF|ACKED)."""
    try:
        spec = body.spec()
    except CommandError as e:
        await explained(backend, stream, None, e)  # a missing stream's 404 first, as the path's
        raise
    # Act first, explain after (app/api/rest/explain): XTRIM answers 0 for a missing key too,
    # and only then is the stream looked up, for the path's 404.
    trimmed = await backend.trim(stream, spec)
    if not trimmed:
        await backend.stream_info(stream)
    return Trimmed(trimmed=trimmed)


@api.put(
    "/{stream}/last-id",
    operation_id="set_last_id",
    summary="Set a stream's last ID",
    status_code=204,
    response_class=Response,
    responses=errors(404, 409, 413),
)
async def set_last_id(stream: StreamName, body: LastId, backend: BackendDep) -> Response:
    """Set the last generated ID, and optionally entries-added and max-deleted-ID (XSETID).
    An ID smaller than the stream's top entry is a 409."""
    await backend.set_id(xsetid_args(stream, body.last_id, body.entries_added, body.max_deleted_id))
    return Response(status_code=204)


@api.put(
    "/{stream}/config",
    operation_id="configure_stream",
    summary="Configure a stream's idempotent appends",
    status_code=204,
    response_class=Response,
    responses=errors(404, 413),
)
async def configure_stream(stream: StreamName, body: StreamConfig, backend: BackendDep) -> Response:
    """Set how the stream deduplicates appends that name a `producer` (XCFGSET IDMP-DURATION
    IDMP-MAXSIZE: Redis 8.6). A setting left out stays as it is; changing either forgets
    every producer's idempotent IDs. The settings show in the stream's info. A missing
    stream is a 404; a value out of range a 400 with Redis's text."""
    try:
        args = xcfgset_args(stream, body.idmp_duration_s, body.idmp_maxsize)
    except CommandError as e:
        await explained(backend, stream, None, e)  # a missing stream's 404 first, as XCFGSET's
        raise
    await backend.configure_idmp(args)
    return Response(status_code=204)
