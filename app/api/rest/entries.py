"""Entries: append (XADD), range (XRANGE / XREVRANGE), long poll (XREAD BLOCK), get, delete
(XDEL, or XDELEX with a reference policy)."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from itertools import repeat
from operator import add, attrgetter
from typing import Annotated, TypeVar, cast

from fastapi import Path, Query, Request, Response

from app.api.encoding import rest_entries, rest_entry
from app.api.errors import no_such_stream
from app.api.rest.common import (
    Encoded,
    FieldsParam,
    StreamName,
    errors,
    next_link,
    page_count,
    read_or_wait,
    router,
    stream_url,
)
from app.api.rest.explain import explained
from app.api.rest.schemas.entries import Entry as EntrySchema
from app.api.rest.schemas.entries import EntryList, FieldsForm, flatten, flatten_all
from app.api.rest.schemas.writes import (
    POLICY_DOC,
    Append,
    Appended,
    Deleted,
    statuses,
    token,
)
from app.api.services import BackendDep
from app.backends import Backend
from app.backends.roles import KeyspaceRole
from app.engine.commands.reads import ReadRequest
from app.engine.commands.streams import RangeArgs, XAddArgs
from app.engine.commands.xadd_options import IDMP_EXPLICIT_ID, idmp_key
from app.engine.errors import CommandError, Conflict, NoSuchEntry, WrongArgument
from app.engine.ids import (
    INT64_MAX,
    StreamID,
    format_id,
    parse_id,
    parse_range_end,
    parse_range_start,
)
from app.engine.ids import parse_strict_id as parse_entry_id
from app.engine.refs import RefPolicy
from app.engine.stream import Entry, TrimSpec

api = router("/v1/streams/{stream}/entries", "entries")
T = TypeVar("T")

EntryId = Annotated[
    str, Path(description="The entry's ID (`ms-seq`).", examples=["1526569495631-0"])
]


class Order(StrEnum):
    asc = "asc"  # XRANGE: oldest first
    desc = "desc"  # XREVRANGE: newest first


def _xadd_args(stream: str, body: Append) -> list[XAddArgs]:
    """The request as XADD arguments: IDs, IDMP and the trim clause checked by the engine's
    rules, with XADD's texts for its tokens."""
    trim: TrimSpec | None = None if body.trim is None else body.trim.spec()
    entries = body.batch()
    if set(map(_PLAIN, entries)) == {("*", None, None)}:  # a batch of `*` entries
        rows = flatten_all(list(map(_FIELDS, entries)))
        rest = (None, True, body.nomkstream, trim, None)  # id `*`, seq_given, ..., idmp
        return list(
            map(_new_args, repeat(XAddArgs), map(add, zip(repeat(stream), rows), repeat(rest)))
        )
    out = []
    for e in entries:
        idmp = None
        if e.producer is not None or e.idempotent_id is not None:
            idmp = idmp_key(e.producer or "", e.idempotent_id)
        sid, seq_given = (
            (None, True) if e.id == "*" else parse_id(e.id, strict=True, allow_seq_auto=True)
        )
        if idmp is not None and sid is not None:
            raise WrongArgument.err(IDMP_EXPLICIT_ID)
        out.append(XAddArgs(stream, flatten(e.fields), sid, seq_given, body.nomkstream, trim, idmp))
    return out


_new_args = tuple.__new__  # XAddArgs from a whole tuple, without its Python-level __new__
_PLAIN = attrgetter("id", "producer", "idempotent_id")
_FIELDS = attrgetter("fields")


async def _exists(backend: KeyspaceRole, stream: str) -> None:
    """404 unless the stream exists: asked only once a range came back empty or XDEL deleted
    nothing, since an entry found shows that it does (the hot path makes one call). Act
    first, explain after: app/api/rest/explain says why the reply is still one point's."""
    await backend.stream_info(stream)


async def _parsed(backend: KeyspaceRole, stream: str, parse: Callable[[], T]) -> T:
    """``parse()``; when it refuses, a missing stream's 404 comes first: the path is looked
    at before the query, and it costs a call only on the error path."""
    try:
        return parse()
    except CommandError:
        await _exists(backend, stream)
        raise


@api.post(
    "",
    operation_id="append_entries",
    summary="Append entries",
    status_code=201,
    response_model=Appended,
    responses=errors(404, 409, 413),
)
async def append_entries(
    stream: StreamName, body: Append, backend: BackendDep, response: Response
) -> Encoded:
    """Append one entry (`fields`), or several atomically (`entries`: all or none), with XADD's
    options: ID `*`, `ms-*` or explicit; NOMKSTREAM (404 when the stream is missing); MAXLEN or
    MINID trimming, `~` and LIMIT, and the trim's reference `policy` (KEEPREF, DELREF, ACKED:
    Redis 8.2); `producer` and `idempotent_id` (XADD's IDMP, or IDMPAUTO with `producer`
    alone: Redis 8.6), with which a repeat appends nothing and answers the first entry's ID,
    as XADD does (the reply cannot tell a repeat from a new entry). An ID not greater than
    the stream's top is a 409 (for a batch, `index` says which entry). `Location` names the
    new entry, or the range of a batch."""
    # One entry goes through XADD itself, so its errors are XADD's exactly.
    added = await backend.append(_xadd_args(stream, body))
    if None in added:
        raise no_such_stream()
    ids = cast("list[StreamID]", added)  # no None: checked above
    texts = list(map("%d-%d".__mod__, ids))  # format_id, in one C pass
    base = stream_url(stream) + "/entries"
    # A repeat's ID may be older than the batch's new ones: the range spans them all.
    first, last = format_id(min(ids)), format_id(max(ids))
    response.headers["Location"] = (
        f"{base}/{first}" if first == last else f"{base}?start={first}&end={last}"
    )
    # ``Appended``, encoded without a model: the answer leaves once the journal committed the
    # entries, so what runs after that wait (this) is kept short; the next group commit fills
    # meanwhile.
    return Encoded({"ids": texts})


def _shaped(entries: list[Entry], form: FieldsForm, nxt: str | None) -> Encoded:
    """``EntryList``, encoded without a model per entry."""
    return Encoded({"entries": rest_entries(entries, form), "next": nxt})


@api.get(
    "",
    operation_id="list_entries",
    summary="Read a range of entries, or wait for new ones",
    response_model=EntryList,
    responses=errors(404, 429),
)
async def list_entries(
    stream: StreamName,
    backend: BackendDep,
    request: Request,
    response: Response,
    start: Annotated[str, Query(description="`-`, an ID, `ms`, or exclusive `(id`.")] = "-",
    end: Annotated[str, Query(description="`+`, an ID, `ms`, or exclusive `(id`.")] = "+",
    count: Annotated[
        int | None,
        Query(
            ge=0,
            le=INT64_MAX,
            description="COUNT: the page size; without it, the service's default page (100 "
            "unless configured), at most `rest_max_count` (1000 unless configured).",
        ),
    ] = None,
    order: Annotated[Order, Query(description="`asc` (XRANGE) or `desc` (XREVRANGE).")] = Order.asc,
    after: Annotated[
        str | None, Query(description="XREAD: entries after this ID (`$`: after the last).")
    ] = None,
    block_ms: Annotated[
        int | None,
        Query(ge=0, le=INT64_MAX, description="With `after`: wait up to this long (0: forever)."),
    ] = None,
    fields: FieldsParam = FieldsForm.object,
) -> EntryList | Encoded:
    """Without `after`: entries between `start` and `end` (XRANGE, or XREVRANGE with
    `order=desc`), one page of at most `count` (a default page without it); a full page gives
    `next`, to pass as `start` (or `end` when descending), and a `Link: <...>; rel="next"`
    header to the next page. A missing stream is a 404.

    With `after`: the entries after that ID (XREAD); with `block_ms`, wait on the server until
    one arrives (XREAD BLOCK), answering an empty list at timeout. The stream may not exist
    yet. `next` is the last ID returned, to pass as `after` for the next poll."""
    # XREAD's COUNT 0 means "no limit": refused here, as XRANGE's COUNT 0 is an empty page.
    page = page_count(request, count, zero_allowed=after is None)
    if after is None:
        if block_ms is not None:
            raise CommandError.err("`block_ms` needs `after`")
        try:  # as _parsed does, inline on the hot path
            a = RangeArgs(stream, parse_range_start(start), parse_range_end(end), page)
        except CommandError:
            await _exists(backend, stream)
            raise
        found = await backend.range(a, rev=order is Order.desc)
        if not found:
            await _exists(backend, stream)
        if not (page and len(found) == page):
            return _shaped(found, fields, None)
        nxt = f"({format_id(found[-1].id)}"
        bound = "end" if order is Order.desc else "start"
        params: dict[str, str | int] = {bound: nxt, "count": page}
        response.headers["Link"] = next_link(request, **params)
        return _shaped(found, fields, nxt)
    if order is Order.desc:
        raise CommandError.err("`after` reads in ascending order only")
    reads = await read_or_wait(request, backend, ReadRequest([stream], [after], page, block_ms))
    got = [e for r in reads for e in r.entries if isinstance(e, Entry)]
    return _shaped(got, fields, format_id(got[-1].id) if got else None)


@api.get(
    "/{id}",
    operation_id="get_entry",
    summary="Get one entry",
    response_model=EntrySchema,
    responses=errors(404),
)
async def get_entry(
    stream: StreamName, id: EntryId, backend: BackendDep, fields: FieldsParam = FieldsForm.object
) -> EntrySchema | Encoded:
    """The entry with this ID (XRANGE key id id)."""
    sid = await _parsed(backend, stream, lambda: parse_entry_id(id))
    found = await backend.range(RangeArgs(stream, sid, sid))
    if not found:
        await _exists(backend, stream)
        raise NoSuchEntry()
    return Encoded(rest_entry(found[0], fields))


PolicyParam = Annotated[
    RefPolicy | None,
    token(RefPolicy),
    Query(
        description="XDELEX instead of XDEL, with this reference policy. "
        + POLICY_DOC
        + " Without it: XDEL (Redis 7.0), which keeps references."
    ),
]


async def _delete_with_policy(
    backend: Backend, stream: str, ids: list[StreamID], policy: RefPolicy
) -> list[int]:
    """XDELEX; an error it answers (a server without the command) comes after a missing
    stream's 404, as the path is read first (app/api/rest/explain)."""
    try:
        return await backend.delete_with_policy(stream, ids, policy)
    except CommandError as e:
        await explained(backend, stream, None, e)
        raise


def still_needed(sid: StreamID) -> Conflict:
    """XDELEX ACKED answered 2 for the one entry a path names: it is there and stays."""
    return Conflict(
        f"ERR entry {format_id(sid)} kept: a consumer group still needs it (policy ACKED)"
    )


@api.delete(
    "/{id}",
    operation_id="delete_entry",
    summary="Delete one entry",
    status_code=204,
    response_class=Response,
    responses=errors(404, 409, 503),
)
async def delete_entry(
    stream: StreamName, id: EntryId, backend: BackendDep, policy: PolicyParam = None
) -> Response:
    """Delete the entry (XDEL key id). Deleting it again answers 404.

    With `policy`: XDELEX key policy IDS 1 id (Redis 8.2). `ACKED` keeps an entry a group
    still needs: 409, nothing changed."""
    sid = await _parsed(backend, stream, lambda: parse_entry_id(id))
    if policy is None:
        found = await backend.delete_entries(stream, [sid]) > 0
    else:
        (code,) = await _delete_with_policy(backend, stream, [sid], policy)
        if code == 2:
            raise still_needed(sid)
        found = code == 1
    if not found:
        await _exists(backend, stream)
        raise NoSuchEntry()
    return Response(status_code=204)


@api.delete(
    "",
    operation_id="delete_entries",
    summary="Delete several entries",
    response_model=Deleted,
    responses=errors(404, 503),
)
async def delete_entries(
    stream: StreamName,
    backend: BackendDep,
    id: Annotated[list[str], Query(min_length=1, description="The IDs to delete (repeat).")],
    policy: PolicyParam = None,
) -> Deleted | Encoded:
    """Delete every entry named (XDEL key id [id ...]); IDs that are not there are skipped.

    With `policy`: XDELEX key policy IDS numids id ... (Redis 8.2), which also answers what
    became of each ID, in order: `deleted` (1), `kept` (2: `ACKED` and a group still needs
    it) or `not_found` (-1), with the counts of each. A missing stream is a 404 either way."""
    ids = await _parsed(backend, stream, lambda: [parse_entry_id(x) for x in id])
    if policy is None:
        deleted = await backend.delete_entries(stream, ids)
        if not deleted:
            await _exists(backend, stream)
        return Encoded({"deleted": deleted})  # XDEL's reply as before: no policy members
    codes = await _delete_with_policy(backend, stream, ids, policy)
    if all(c == -1 for c in codes):  # a missing key answers -1 for every ID too
        await _exists(backend, stream)
    return Encoded(statuses([format_id(x) for x in ids], codes))
