"""Several streams at once (XREAD [BLOCK]), as one long poll."""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import Query, Request

from app.api.access_gate import principal_of
from app.api.encoding import rest_entries
from app.api.rest.common import Encoded, FieldsParam, errors, page_count, read_or_wait, router
from app.api.rest.schemas.entries import FieldsForm, StreamsRead
from app.api.services import BackendDep
from app.engine.commands.reads import ReadRequest
from app.engine.ids import INT64_MAX
from app.engine.stream import Entry

api = router("/v1/read", "entries")


@api.get(
    "",
    operation_id="read_streams",
    summary="Read or wait for entries of several streams",
    response_model=StreamsRead,
    responses=errors(429),
)
async def read_streams(
    backend: BackendDep,
    request: Request,
    stream: Annotated[list[str], Query(min_length=1, description="A stream key (repeat).")],
    after: Annotated[
        list[str],
        Query(
            min_length=1,
            description="Per stream, in order: entries after this ID (`$`: after the last). "
            "One value applies to every stream.",
        ),
    ],
    count: Annotated[
        int | None,
        Query(
            ge=0,
            le=INT64_MAX,
            description="COUNT per stream: without it, the service's default page (100 unless "
            "configured), at most `rest_max_count` (1000 unless configured).",
        ),
    ] = None,
    block_ms: Annotated[
        int | None, Query(ge=0, le=INT64_MAX, description="Wait up to this long (0: forever).")
    ] = None,
    fields: FieldsParam = FieldsForm.object,
) -> StreamsRead | Encoded:
    """The entries after the given IDs in each stream (XREAD COUNT n STREAMS k1 k2 id1 id2);
    with `block_ms`, wait on the server until any stream has one (XREAD BLOCK), answering an
    empty list at timeout. Only streams with entries are listed; missing streams are waited
    for, as Redis does."""
    ids = after * len(stream) if len(after) == 1 else after
    page = page_count(request, count, zero_allowed=False)
    tenant = principal_of(request.scope).tenant
    keys = [tenant.inward(s) for s in stream]
    reads = await read_or_wait(request, backend, ReadRequest(keys, ids, page, block_ms))
    # A plain XREAD never gives a MissingEntry (only a group's history does).
    return Encoded(
        {
            "streams": [
                {
                    "stream": tenant.outward(r.key),
                    "entries": rest_entries(cast(list[Entry], r.entries), fields),
                }
                for r in reads
            ]
        }
    )
