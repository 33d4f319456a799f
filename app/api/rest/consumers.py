"""Consumers: list (XINFO CONSUMERS), create / delete (XGROUP), and reads (XREADGROUP)."""

from __future__ import annotations

from collections.abc import Awaitable

from fastapi import Request, Response

from app.api.encoding import rest_maybe_entries
from app.api.rest.common import (
    AfterParam,
    ConsumerName,
    Encoded,
    FieldsParam,
    GroupName,
    PageParam,
    StreamName,
    errors,
    name_page,
    read_or_wait,
    router,
    segment,
    stream_url,
)
from app.api.rest.explain import on_group
from app.api.rest.schemas import groups as schema
from app.api.rest.schemas.entries import FieldsForm, MaybeEntryList
from app.api.rest.schemas.groups import Consumer, ConsumerDeleted, ConsumerList, Read
from app.api.services import BackendDep
from app.backends.roles import ExplainRoles
from app.engine.commands.reads import ReadRequest
from app.engine.errors import NoSuchConsumer
from app.engine.replies import ConsumerInfo

api = router("/v1/streams/{stream}/groups/{group}/consumers", "consumers")


async def _consumers(
    backend: ExplainRoles, stream: str, group: str, start: str, count: int
) -> list[ConsumerInfo]:
    """A page of the group's consumers (XINFO CONSUMERS), in one call: its "no such key" or
    NOGROUP becomes NOGROUP naming both key and group, as every path under a group answers."""
    return await on_group(backend, stream, group, backend.consumers(stream, group, start, count))


async def _named(backend: ExplainRoles, stream: str, group: str, name: str) -> ConsumerInfo:
    """The consumer's row: a page of one from its name, not the whole listing."""
    rows = await _consumers(backend, stream, group, name, 1)
    if not rows or rows[0].name != name:
        raise NoSuchConsumer.named(group, name)
    return rows[0]


@api.get(
    "",
    operation_id="list_consumers",
    summary="List a group's consumers",
    response_model=ConsumerList,
    responses=errors(404),
)
async def list_consumers(
    stream: StreamName,
    group: GroupName,
    backend: BackendDep,
    request: Request,
    response: Response,
    after: AfterParam = None,
    count: PageParam = None,
) -> ConsumerList:
    """The consumers, by name, one page at a time, each with its pending count and idle time
    (XINFO CONSUMERS). A page followed by another gives `next`, to pass as `after`, and a
    `Link: <...>; rel="next"` header to it."""

    def fetch(start: str, n: int) -> Awaitable[list[ConsumerInfo]]:
        return _consumers(backend, stream, group, start, n)

    rows, nxt = await name_page(request, response, after, count, fetch, lambda c: c.name)
    return ConsumerList(consumers=[schema.consumer(c) for c in rows], next=nxt)


@api.put(
    "/{consumer}",
    operation_id="create_consumer",
    summary="Create a consumer",
    response_model=Consumer,
    responses={**errors(404, 409, 503), 201: {"model": Consumer, "description": "Created."}},
)
async def create_consumer(
    stream: StreamName,
    group: GroupName,
    consumer: ConsumerName,
    backend: BackendDep,
    response: Response,
) -> Consumer:
    """Create the consumer if it does not exist (XGROUP CREATECONSUMER): 201 with `Location`
    when created, 200 when it was there already (nothing changes)."""
    # No look first: XGROUP CREATECONSUMER refuses a missing key or group itself. The
    # consumer's figures are read after it (XINFO CONSUMERS): the state a moment later, in
    # which another client may have deleted the consumer or destroyed the group (then 404,
    # as at that point). Redis has no reply that both creates and shows a consumer.
    if await on_group(backend, stream, group, backend.create_consumer(stream, group, consumer)):
        response.status_code = 201
        response.headers["Location"] = (
            f"{stream_url(stream)}/groups/{segment(group)}/consumers/{segment(consumer)}"
        )
    return schema.consumer(await _named(backend, stream, group, consumer))


@api.delete(
    "/{consumer}",
    operation_id="delete_consumer",
    summary="Delete a consumer",
    response_model=ConsumerDeleted,
    responses=errors(404, 503),
)
async def delete_consumer(
    stream: StreamName, group: GroupName, consumer: ConsumerName, backend: BackendDep
) -> ConsumerDeleted:
    """Delete the consumer (XGROUP DELCONSUMER); its pending entries leave the PEL, and their
    number is returned. Deleting it again answers 404."""
    # The one look-then-act left: XGROUP DELCONSUMER answers 0 both for a consumer without
    # pending entries, which it deletes, and for no consumer at all, and Redis 7.0 has no
    # reply that tells them apart; a look afterwards cannot either (it is gone both ways).
    # So the 404 is decided on a look before: a consumer deleted by another client between
    # the two calls is answered 200 with 0 pending, as if this request had deleted it.
    await _named(backend, stream, group, consumer)
    deleted = backend.delete_consumer(stream, group, consumer)
    return ConsumerDeleted(pending=await on_group(backend, stream, group, deleted))


@api.post(
    "/{consumer}/reads",
    operation_id="read_group",
    summary="Read as a consumer",
    response_model=MaybeEntryList,
    responses=errors(404, 409, 413, 429),
)
async def read_group(
    stream: StreamName,
    group: GroupName,
    consumer: ConsumerName,
    body: Read,
    backend: BackendDep,
    request: Request,
    fields: FieldsParam = FieldsForm.object,
) -> MaybeEntryList | Encoded:
    """Read as `consumer` of `group` (XREADGROUP GROUP g c [COUNT] [BLOCK] [NOACK] [CLAIM]
    STREAMS key id). `id` `>` delivers entries never delivered to the group, recording them
    as pending (unless `noack`); with `block_ms` the request waits on the server, and each new
    entry goes to exactly one waiting consumer. An ID instead reads this consumer's history:
    its pending entries after the ID, `fields` null for those deleted since. Empty list at
    timeout.

    With `claim_idle_ms` (CLAIM min-idle-time, Redis 8.4) a `>` read first claims the
    group's pending entries idle that long (released ones first), then reads new ones; every
    entry then has `idle_ms` and `delivery_count`. A blocked claim read is also served when
    a pending entry turns idle enough."""
    read = ReadRequest(
        [stream],
        [body.id],
        body.count or 0,
        body.block_ms,
        group,
        consumer,
        body.noack,
        body.claim_idle_ms,
    )
    reads = await read_or_wait(request, backend, read)
    return Encoded({"entries": rest_maybe_entries([e for r in reads for e in r.entries], fields)})
