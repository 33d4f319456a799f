"""Consumer groups: list (XINFO GROUPS), create / set ID / destroy (XGROUP), get."""

from __future__ import annotations

from collections.abc import Awaitable

from fastapi import Request, Response

from app.api.errors import no_such_stream
from app.api.rest.common import (
    AfterParam,
    GroupName,
    PageParam,
    StreamName,
    errors,
    name_page,
    router,
    segment,
    stream_url,
)
from app.api.rest.explain import explained, on_group
from app.api.rest.schemas import groups as schema
from app.api.rest.schemas.groups import Group, GroupList, GroupUpdate, NewGroup
from app.api.services import BackendDep
from app.backends import Backend
from app.engine.commands.groups import no_such_group
from app.engine.errors import CommandError, NotFound
from app.engine.replies import GroupInfo

api = router("/v1/streams/{stream}/groups", "groups")


@api.get(
    "",
    operation_id="list_groups",
    summary="List a stream's consumer groups",
    response_model=GroupList,
    responses=errors(404),
)
async def list_groups(
    stream: StreamName,
    backend: BackendDep,
    request: Request,
    response: Response,
    after: AfterParam = None,
    count: PageParam = None,
) -> GroupList:
    """The groups, by name, one page at a time: each with its consumers, pending count,
    last-delivered ID, entries-read and lag (XINFO GROUPS). A page followed by another gives
    `next`, to pass as `after`, and a `Link: <...>; rel="next"` header to it."""

    def fetch(start: str, n: int) -> Awaitable[list[GroupInfo]]:
        return backend.groups(stream, start, n)

    rows, nxt = await name_page(request, response, after, count, fetch, lambda g: g.name)
    # One call for the stream's policies, not one per group (one round trip on Redis).
    policies = await backend.delivery_policies(stream) if rows else {}
    return GroupList(groups=[schema.group(g, policies.get(g.name)) for g in rows], next=nxt)


@api.post(
    "",
    operation_id="create_group",
    summary="Create a consumer group",
    status_code=201,
    response_model=Group,
    responses=errors(404, 409, 413),
)
async def create_group(
    stream: StreamName, body: NewGroup, backend: BackendDep, response: Response
) -> Group:
    """Create a group that delivers entries after `id` (XGROUP CREATE [MKSTREAM]
    [ENTRIESREAD]). A missing stream is a 404 unless `mkstream`; an existing group is a 409
    (BUSYGROUP)."""
    # No look first: XGROUP CREATE refuses a missing key itself (without MKSTREAM), in its
    # words, answered here as every path to a missing stream answers. The group is shown as
    # read after it (XINFO GROUPS): a moment later, when another client may have moved or
    # destroyed it. Redis has no reply that both creates and shows a group.
    try:
        await backend.create_group(stream, body.name, body.id, body.mkstream, body.entries_read)
    except NotFound:
        raise no_such_stream() from None
    except CommandError as e:
        if not body.mkstream:  # a missing stream's 404 first, as the path is read first
            await explained(backend, stream, None, e)
        raise
    response.headers["Location"] = f"{stream_url(stream)}/groups/{segment(body.name)}"
    # A group is created without a policy (and a policy goes with its group).
    return schema.group(await backend.group(stream, body.name), None)


async def _shown(backend: Backend, stream: str, group: str) -> Group:
    """The group as XINFO GROUPS shows it and its policy: two calls, each of its own point
    (a policy removed with the group in between answers the group without one)."""
    info = await backend.group(stream, group)
    policies = await backend.delivery_policies(stream)
    return schema.group(info, policies.get(group))


@api.get(
    "/{group}",
    operation_id="get_group",
    summary="Get a consumer group",
    response_model=Group,
    responses=errors(404),
)
async def get_group(stream: StreamName, group: GroupName, backend: BackendDep) -> Group:
    """One group as XINFO GROUPS shows it, with its delivery policy."""
    return await _shown(backend, stream, group)


@api.patch(
    "/{group}",
    operation_id="set_group_id",
    summary="Set a group's last-delivered ID",
    response_model=Group,
    responses=errors(404, 413),
)
async def set_group_id(
    stream: StreamName, group: GroupName, body: GroupUpdate, backend: BackendDep
) -> Group:
    """Move the group's last-delivered ID and entries-read counter (XGROUP SETID
    [ENTRIESREAD]); `$` is the stream's last ID."""
    await backend.set_group_id(stream, group, body.last_delivered_id, body.entries_read)
    return await _shown(backend, stream, group)


@api.delete(
    "/{group}",
    operation_id="delete_group",
    summary="Destroy a consumer group",
    status_code=204,
    response_class=Response,
    responses=errors(404, 503),
)
async def delete_group(stream: StreamName, group: GroupName, backend: BackendDep) -> Response:
    """Destroy the group with its consumers and PEL (XGROUP DESTROY); its blocked readers get
    NOGROUP. Destroying it again answers 404."""
    # One call: XGROUP DESTROY refuses a missing key and answers 0 for a missing group; both
    # are the path's NOGROUP naming key and group, as of that call.
    if not await on_group(backend, stream, group, backend.destroy_group(stream, group)):
        raise no_such_group(stream, group)
    return Response(status_code=204)
