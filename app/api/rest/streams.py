"""Streams: list (SCAN), info (XINFO STREAM [FULL]), delete (DEL), trim (XTRIM), XSETID."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request, Response

from app.access import readable
from app.api.access_gate import principal_of
from app.api.deps import StoreDep
from app.api.errors import no_such_stream
from app.api.ops import apply, stream_of
from app.api.rest.common import FieldsParam, StreamName, errors, page_count, router
from app.api.rest.schemas.entries import FieldsForm
from app.api.rest.schemas.streams import (
    StreamFullInfo,
    StreamInfo,
    StreamPage,
    stream_full_info,
    stream_info,
    stream_summary,
)
from app.api.rest.schemas.writes import LastId, Trim, Trimmed
from app.engine.commands import info
from app.engine.commands.streams import parse_trim_options, parse_xsetid, xsetid, xtrim
from app.engine.errors import CommandError
from app.engine.ids import INT64_MAX, UINT64_MAX
from app.engine.keyspace import Keyspace

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
    store: StoreDep,
    cursor: Annotated[int, Query(ge=0, le=UINT64_MAX, description="0 to start.")] = 0,
    count: Annotated[int, Query(ge=1, le=10_000, description="About this many per page.")] = 10,
    match: Annotated[str | None, Query(description="A glob on stream names.")] = None,
) -> StreamPage:
    """Page through the streams with a cursor (SCAN, with MATCH and COUNT), each with its
    length, groups, last ID, entries added and first and last entry IDs (XINFO STREAM). As
    SCAN guarantees, a stream present for the whole iteration is listed at least once; a page
    may be empty before the end. Only the streams the caller may read are listed."""
    ks = store.keyspace
    page = ks.scan(cursor, count, match, None)
    summaries = [
        stream_summary(key, info.stream_info(ks, key))
        for key in readable(principal_of(request.scope).grant, page.keys)
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
    store: StoreDep,
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
    if full:
        if count:
            count = page_count(request, count)
        else:  # 0, everything: only while everything is within one page
            s = stream_of(store, stream)
            most: int = request.app.state.settings.rest_max_count
            if s.length > most or any(len(g.pel) > most for g in s.groups.values()):
                raise CommandError.err(
                    f"count=0 (everything) needs a stream of at most {most} entries and "
                    f"pending entries per group (rest_max_count); pass a count"
                )
        return stream_full_info(
            stream, info.stream_full_info(store.keyspace, stream, count), fields
        )
    return stream_info(stream, info.stream_info(store.keyspace, stream), fields)


@api.delete(
    "/{stream}",
    operation_id="delete_stream",
    summary="Delete a stream",
    status_code=204,
    response_class=Response,
    responses=errors(404, 503),
)
async def delete_stream(stream: StreamName, store: StoreDep) -> Response:
    """Delete the stream with its entries and groups (DEL). Deleting again answers 404."""
    if not apply(store, Keyspace.delete, stream):
        raise no_such_stream()
    return Response(status_code=204)


def _trim(ks: Keyspace, stream: str, body: Trim) -> int:
    _, spec, _ = parse_trim_options(ks, ["XTRIM", stream, *body.tokens()], xadd=False)
    assert spec is not None  # XTRIM without a strategy is an error in the parser
    return xtrim(ks, stream, spec)


@api.post(
    "/{stream}/trim",
    operation_id="trim_stream",
    summary="Trim a stream",
    response_model=Trimmed,
    responses=errors(404, 413),
)
async def trim_stream(stream: StreamName, body: Trim, store: StoreDep) -> Trimmed:
    """Remove the oldest entries (XTRIM MAXLEN|MINID [~] threshold [LIMIT count]).
    Exactly one of `maxlen` and `minid`; `limit` only with `approximate`."""
    stream_of(store, stream)
    return Trimmed(trimmed=apply(store, _trim, stream, body))


def _setid(ks: Keyspace, stream: str, body: LastId) -> None:
    argv = ["XSETID", stream, body.last_id]
    if body.entries_added is not None:
        argv += ["ENTRIESADDED", str(body.entries_added)]
    if body.max_deleted_id is not None:
        argv += ["MAXDELETEDID", body.max_deleted_id]
    xsetid(ks, parse_xsetid(argv))


@api.put(
    "/{stream}/last-id",
    operation_id="set_last_id",
    summary="Set a stream's last ID",
    status_code=204,
    response_class=Response,
    responses=errors(404, 409, 413),
)
async def set_last_id(stream: StreamName, body: LastId, store: StoreDep) -> Response:
    """Set the last generated ID, and optionally entries-added and max-deleted-ID (XSETID).
    An ID smaller than the stream's top entry is a 409."""
    apply(store, _setid, stream, body)
    return Response(status_code=204)
