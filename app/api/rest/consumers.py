"""Consumers: list (XINFO CONSUMERS), create / delete (XGROUP), and reads (XREADGROUP)."""

from __future__ import annotations

from fastapi import Request, Response

from app.api.deps import wait_for_disconnect
from app.api.encoding import rest_maybe_entry
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
from app.api.rest.schemas import groups as schema
from app.api.rest.schemas.entries import FieldsForm, MaybeEntryList
from app.api.rest.schemas.groups import Consumer, ConsumerDeleted, ConsumerList, Read
from app.api.services import BackendDep
from app.backends import Backend
from app.engine.commands.reads import ReadRequest
from app.engine.errors import NoSuchConsumer
from app.engine.replies import ConsumerInfo

api = router("/v1/streams/{stream}/groups/{group}/consumers", "consumers")


async def _consumers(backend: Backend, stream: str, group: str) -> list[ConsumerInfo]:
    """The group's consumers (XINFO CONSUMERS), after NOGROUP naming both key and group when
    either is missing (as every path under a group answers)."""
    await backend.group(stream, group)
    return await backend.consumers(stream, group)


def _named(rows: list[ConsumerInfo], group: str, name: str) -> ConsumerInfo:
    found = next((c for c in rows if c.name == name), None)
    if found is None:
        raise NoSuchConsumer.named(group, name)
    return found


@api.get(
    "",
    operation_id="list_consumers",
    summary="List a group's consumers",
    response_model=ConsumerList,
    responses=errors(404),
)
async def list_consumers(stream: StreamName, group: GroupName, backend: BackendDep) -> ConsumerList:
    """Every consumer with its pending count and idle time (XINFO CONSUMERS)."""
    return ConsumerList(
        consumers=[schema.consumer(c) for c in await _consumers(backend, stream, group)]
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
    backend: BackendDep,
    response: Response,
) -> Consumer:
    """Create the consumer if it does not exist (XGROUP CREATECONSUMER): 201 with `Location`
    when created, 200 when it was there already (nothing changes)."""
    await backend.group(stream, group)
    if await backend.create_consumer(stream, group, consumer):
        response.status_code = 201
        response.headers["Location"] = (
            f"{stream_url(stream)}/groups/{segment(group)}/consumers/{segment(consumer)}"
        )
    rows = await backend.consumers(stream, group)
    return schema.consumer(_named(rows, group, consumer))


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
    _named(await _consumers(backend, stream, group), group, consumer)
    return ConsumerDeleted(pending=await backend.delete_consumer(stream, group, consumer))


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
    backend: BackendDep,
    request: Request,
    fields: FieldsParam = FieldsForm.object,
) -> MaybeEntryList | Encoded:
    """Read as `consumer` of `group` (XREADGROUP GROUP g c [COUNT] [BLOCK] [NOACK] STREAMS
    key id). `id` `>` delivers entries never delivered to the group, recording them as pending
    (unless `noack`); with `block_ms` the request waits on the server, and each new entry goes
    to exactly one waiting consumer. An ID instead reads this consumer's history: its pending
    entries after the ID, `fields` null for those deleted since. Empty list at timeout."""
    read = ReadRequest(
        [stream], [body.id], body.count or 0, body.block_ms, group, consumer, body.noack
    )
    reads = await backend.read(read, lambda: wait_for_disconnect(request))
    return Encoded({"entries": [rest_maybe_entry(e, fields) for r in reads for e in r.entries]})
