"""Consumers: list (XINFO CONSUMERS), create / delete (XGROUP), and reads (XREADGROUP)."""

from __future__ import annotations

from fastapi import Request, Response

from app.api.deps import StoreDep
from app.api.encoding import rest_maybe_entry
from app.api.ops import apply, group_of, read, require_consumer
from app.api.rest.common import (
    ConsumerName,
    Encoded,
    FieldsParam,
    GroupName,
    StreamName,
    errors,
    router,
    segment,
    stream_url,
)
from app.api.rest.schemas.entries import FieldsForm, MaybeEntryList
from app.api.rest.schemas.groups import Consumer, ConsumerDeleted, ConsumerList, Read, consumer
from app.engine.commands import groups as ops
from app.engine.commands.info import consumers_info
from app.engine.store import Store

api = router("/v1/streams/{stream}/groups/{group}/consumers", "consumers")


def _consumer(store: Store, stream: str, group: str, name: str) -> Consumer:
    rows = consumers_info(store.keyspace, stream, group)
    return next(consumer(c) for c in rows if c.name == name)


@api.get(
    "",
    operation_id="list_consumers",
    summary="List a group's consumers",
    response_model=ConsumerList,
    responses=errors(404),
)
async def list_consumers(stream: StreamName, group: GroupName, store: StoreDep) -> ConsumerList:
    """Every consumer with its pending count and idle time (XINFO CONSUMERS)."""
    group_of(store, stream, group)
    return ConsumerList(
        consumers=[consumer(c) for c in consumers_info(store.keyspace, stream, group)]
    )


@api.put(
    "/{consumer}",
    operation_id="create_consumer",
    summary="Create a consumer",
    response_model=Consumer,
    responses={**errors(404, 503), 201: {"model": Consumer, "description": "Created."}},
)
async def create_consumer(
    stream: StreamName,
    group: GroupName,
    consumer: ConsumerName,
    store: StoreDep,
    response: Response,
) -> Consumer:
    """Create the consumer if it does not exist (XGROUP CREATECONSUMER): 201 with `Location`
    when created, 200 when it was there already (nothing changes)."""
    group_of(store, stream, group)
    if apply(store, ops.xgroup_createconsumer, stream, group, consumer):
        response.status_code = 201
        response.headers["Location"] = (
            f"{stream_url(stream)}/groups/{segment(group)}/consumers/{segment(consumer)}"
        )
    return _consumer(store, stream, group, consumer)


@api.delete(
    "/{consumer}",
    operation_id="delete_consumer",
    summary="Delete a consumer",
    response_model=ConsumerDeleted,
    responses=errors(404, 503),
)
async def delete_consumer(
    stream: StreamName, group: GroupName, consumer: ConsumerName, store: StoreDep
) -> ConsumerDeleted:
    """Delete the consumer (XGROUP DELCONSUMER); its pending entries leave the PEL, and their
    number is returned. Deleting it again answers 404."""
    require_consumer(store, stream, group, consumer)
    return ConsumerDeleted(pending=apply(store, ops.xgroup_delconsumer, stream, group, consumer))


@api.post(
    "/{consumer}/reads",
    operation_id="read_group",
    summary="Read as a consumer",
    response_model=MaybeEntryList,
    responses=errors(404, 413),
)
async def read_group(
    stream: StreamName,
    group: GroupName,
    consumer: ConsumerName,
    body: Read,
    store: StoreDep,
    request: Request,
    fields: FieldsParam = FieldsForm.object,
) -> MaybeEntryList | Encoded:
    """Read as `consumer` of `group` (XREADGROUP GROUP g c [COUNT] [BLOCK] [NOACK] STREAMS
    key id). `id` `>` delivers entries never delivered to the group, recording them as pending
    (unless `noack`); with `block_ms` the request waits on the server, and each new entry goes
    to exactly one waiting consumer. An ID instead reads this consumer's history: its pending
    entries after the ID, `fields` null for those deleted since. Empty list at timeout."""
    argv = ["XREADGROUP", "GROUP", group, consumer]
    if body.count is not None:
        argv += ["COUNT", str(body.count)]
    if body.block_ms is not None:
        argv += ["BLOCK", str(body.block_ms)]
    if body.noack:
        argv.append("NOACK")
    reads = await read(store, [*argv, "STREAMS", stream, body.id], request)
    return Encoded({"entries": [rest_maybe_entry(e, fields) for r in reads for e in r.entries]})
