"""Delivery policies (a group's), retention (a stream's) and redrive (a dead-letter stream's):
issue 27's resources. The rules are the engine's (``app.engine.delivery``); each route parses,
makes the one backend call and shapes its answer.

Removing what is not there answers 404, as deleting a stream or a group twice does: a client
that must not care sends DELETE and takes 204 and 404 alike.

Access beyond the stream in the path (``RestRoute`` checks that one): a policy names its
dead-letter stream, into which the service will write, so setting one needs ``write`` there;
a redrive appends to ``to``, or to each entry's origin stream, so it needs ``write`` on each.
The origins are read from the entries before the move (dead-letter entries are never changed,
only deleted), and exactly the entries checked are moved.
"""

from __future__ import annotations

from fastapi import Request, Response

from app.access import check_keys
from app.api.access_gate import principal_of
from app.api.rest.common import GroupName, StreamName, errors, page_count, router, shown
from app.api.rest.explain import on_group, parsed_on_group
from app.api.rest.models import model_of
from app.api.rest.schemas.delivery import (
    Policy,
    Redrive,
    RedriveResult,
    Retention,
    RetentionView,
    policy_json,
    redriven,
    retention_json,
)
from app.api.services import BackendDep
from app.backends.roles import KeyspaceRole, StreamsRole
from app.engine.commands.streams import RangeArgs
from app.engine.delivery import RedriveArgs, split_dead_letter
from app.engine.errors import CommandError, NotFound
from app.engine.ids import MAX_ID, MIN_ID, StreamID, parse_strict_id

api = router("/v1/streams/{stream}", "delivery")


def no_policy(stream: str, group: str) -> NotFound:
    return NotFound(f"ERR no delivery policy for consumer group '{group}' of '{stream}'")


def no_retention(stream: str) -> NotFound:
    return NotFound(f"ERR no retention set for '{stream}'")


@api.get(
    "/groups/{group}/policy",
    operation_id="get_policy",
    summary="Get a group's delivery policy",
    response_model=Policy,
    responses=errors(404),
)
async def get_policy(
    stream: StreamName, group: GroupName, backend: BackendDep, request: Request
) -> Policy:
    """The group's delivery policy: what its consumers' XREADGROUP `>` reads take back first
    (visibility timeout, back-off) and when an entry goes to the dead-letter stream. A group
    without one (plain Redis) is a 404, as is a missing group."""
    policy = await on_group(backend, stream, group, backend.delivery_policy(stream, group))
    if policy is None:
        raise no_policy(stream, group)
    shown_policy = policy_json(policy)
    if shown_policy.dead_letter_stream is not None:
        shown_policy.dead_letter_stream = shown(request, shown_policy.dead_letter_stream)
    return shown_policy


@api.put(
    "/groups/{group}/policy",
    operation_id="set_policy",
    summary="Set a group's delivery policy",
    response_model=Policy,
    responses=errors(404, 413),
)
async def set_policy(
    stream: StreamName, group: GroupName, body: Policy, backend: BackendDep, request: Request
) -> Policy:
    """Set (or replace) the group's delivery policy. From then on every XREADGROUP `>` read
    of the group (the consumer read, its event stream, the command endpoint) first serves the
    entries due again as claims (XCLAIM), and moves those delivered `max_deliveries` times (or
    released by XNACK FATAL) to `dead_letter_stream` (XADD there, XACK here, atomically).
    Needs `admin`, and `write` on the dead-letter stream. A value out of range is a 400 naming
    it; on Redis Cluster a dead-letter stream in another hash slot is a 400 too. A policy
    whose dead letters would come back to this stream, through the policies of the groups
    on its dead-letter stream and further, is a 409: dead letters never go round."""
    policy = await parsed_on_group(backend, stream, group, body.policy)
    principal = principal_of(request.scope)
    if policy.dead_letter_stream is not None and not principal.unrestricted:
        check_keys(principal, model_of("append_entries"), [policy.dead_letter_stream])
    await on_group(backend, stream, group, backend.set_delivery_policy(stream, group, policy))
    return policy_json(policy)


@api.delete(
    "/groups/{group}/policy",
    operation_id="delete_policy",
    summary="Remove a group's delivery policy",
    status_code=204,
    response_class=Response,
    responses=errors(404, 503),
)
async def delete_policy(stream: StreamName, group: GroupName, backend: BackendDep) -> Response:
    """Remove the policy: the group is plain Redis again (XREADGROUP, XNACK as Redis's), its
    pending entries stay pending and its counters go. Removing it again answers 404."""
    act = backend.set_delivery_policy(stream, group, None)
    if not await on_group(backend, stream, group, act):
        raise no_policy(stream, group)
    return Response(status_code=204)


@api.get(
    "/retention",
    operation_id="get_retention",
    summary="Get a stream's retention",
    response_model=RetentionView,
    responses=errors(404),
)
async def get_retention(stream: StreamName, backend: BackendDep, request: Request) -> Retention:
    """The retention set for this stream name (the service trims it in the background with
    XTRIM MINID, and MAXLEN `~`); 404 when none is set. A glob-wide default from the settings
    is not shown here."""
    retention = await backend.retention(stream)
    if retention is None:
        raise no_retention(stream)
    return retention_json(retention, shown(request, stream), await _exists(backend, stream))


@api.put(
    "/retention",
    operation_id="set_retention",
    summary="Set a stream's retention",
    response_model=RetentionView,
    responses=errors(413),
)
async def set_retention(stream: StreamName, body: Retention, backend: BackendDep) -> Retention:
    """Keep the stream within `max_age_ms` (XTRIM MINID), `max_len` (XTRIM MAXLEN ~) and
    about `max_bytes`: the service trims it in the background, in small steps (LIMIT), each
    journaled as any XTRIM, with its reference `policy` (KEEPREF unless given; DELREF and
    ACKED need Redis 8.2 in front of Redis). Kept by name, as the settings' retention globs
    are: the stream need not exist (`state` is then `waiting`, `reason` says so), and the
    retention outlives a DEL of it. Needs `admin`."""
    retention = body.retention()
    await backend.set_retention(stream, retention)
    return retention_json(retention, stream, await _exists(backend, stream))


async def _exists(backend: KeyspaceRole, stream: str) -> bool:
    """Whether the stream is there for its retention to trim (``state``)."""
    return (await backend.stream_infos([stream]))[0] is not None


@api.delete(
    "/retention",
    operation_id="delete_retention",
    summary="Remove a stream's retention",
    status_code=204,
    response_class=Response,
    responses=errors(404, 503),
)
async def delete_retention(stream: StreamName, backend: BackendDep) -> Response:
    """Stop trimming the stream in the background (XTRIM by hand still works); a glob-wide
    default from the settings still applies. Removing it again answers 404."""
    if not await backend.set_retention(stream, None):
        raise no_retention(stream)
    return Response(status_code=204)


@api.post(
    "/redrive",
    operation_id="redrive_entries",
    summary="Move dead-letter entries back",
    response_model=RedriveResult,
    responses=errors(404, 413),
)
async def redrive_entries(
    stream: StreamName, body: Redrive, backend: BackendDep, request: Request
) -> RedriveResult:
    """Move entries of this dead-letter stream back: each is appended (XADD *) to `to`, or
    to the stream it came from, with its original fields (the `xs-dl-` fields removed), and
    deleted here (XDEL), atomically per entry. `ids` in their order, or the oldest `count`.
    A retry finds the moved entries gone and lists them as `skipped`, so it moves nothing
    twice. Needs `write` here and on every stream appended to. A missing stream is a 404."""
    if body.ids is not None and body.count is not None:
        raise CommandError.err("give ids or count, not both")
    ids: tuple[StreamID, ...] | None = None
    if body.ids is not None:
        page_count(request, len(body.ids), zero_allowed=False)
        ids = tuple(parse_strict_id(x) for x in body.ids)
    count = page_count(request, body.count, zero_allowed=False)
    principal = principal_of(request.scope)
    tenant = principal.tenant
    to = None if body.to is None else tenant.inward(body.to)
    if not principal.unrestricted:
        ids, targets = await _targets(backend, stream, ids, count, to)
        check_keys(principal, model_of("redrive_entries"), targets)
    args = RedriveArgs(stream, ids, to, count)
    result = redriven(await backend.redrive(args))
    for moved in result.moved:
        moved.stream = tenant.outward(moved.stream)
    return result


async def _targets(
    backend: StreamsRole, stream: str, ids: tuple[StreamID, ...] | None, count: int, to: str | None
) -> tuple[tuple[StreamID, ...] | None, list[str]]:
    """The streams a redrive would append to, and the entries it is then to move: with `to`,
    that stream and the request's entries; else the origins of the entries read now, which
    become the entries to move (the oldest `count` read now, not at the move)."""
    if to is not None:
        return ids, [to]
    if ids is None:
        found = await backend.range(RangeArgs(stream, MIN_ID, MAX_ID, count))
        ids = tuple(e.id for e in found)
    else:
        found = []
        for sid in ids:
            found += await backend.range(RangeArgs(stream, sid, sid, 1))
    origins = set()
    for entry in found:
        split = split_dead_letter(entry.fields)
        if split is not None:
            origins.add(split[1].stream)
    return ids, sorted(origins)
