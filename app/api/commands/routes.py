"""The Redis-command endpoint, compatible with the Upstash REST protocol.

``POST /`` (one command as a JSON array), ``GET|POST /cmd/arg/...`` (path style),
``POST /pipeline`` (several, not atomic) and ``POST /multi-exec`` (atomic). Every answer is
``{"result": ...}`` or ``{"error": "<Redis error text>"}``; nothing else ever comes back.
Unlike Upstash, XREAD / XREADGROUP BLOCK wait on the server.

A request is parsed, checked (the command table's key positions decide access, its flags and
keys what the answer waits for), handed to the backend (``Services.backend``: its ``command``,
``pipeline`` or ``multi_exec``) and shaped; nothing here knows which backend answers. The
embedded engine keeps its fast paths behind those calls (app/backends/embedded/commands.py)
and times each command for ``/metrics`` (the engine's time, not a blocked read's wait, as Redis's
commandstats); each error answered is counted by its code here.

These are plain Starlette routes, not FastAPI ones: ``POST /``, ``/pipeline`` and
``/multi-exec`` are matched before the ``/v1`` routes and solve no dependencies, which cost
about 40 % of a one-entry XADD when they went through FastAPI's router (bench/REPORT.md).
"""

from __future__ import annotations

from collections.abc import Container
from operator import itemgetter
from typing import Any, cast

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.convertors import Convertor, register_url_convertor
from starlette.routing import Route

from app.access import Grant, NoPerm, check_command, readable
from app.access.prefix import TenantPrefix
from app.api.access_gate import principal_of
from app.api.commands.resp import Shaper
from app.api.commands.upstash import command_args, command_list, path_args
from app.api.deps import read_body, wait_for_disconnect
from app.api.errors import command_status, json_response, retry_headers
from app.api.holds import TooManyHeld
from app.api.replay import has_key_answer, items_answer, key_answer
from app.api.services import services_of
from app.backends import ClientGone
from app.backends.roles import CommandEndpointRoles
from app.engine.commands import Command, lookup
from app.engine.commands.table import Access, Flag
from app.engine.errors import EXECABORT, CommandError
from app.engine.ids import StreamID
from app.engine.replies import CommandReply, ScanPage


def _shaper(request: Request) -> Shaper:
    return Shaper(request.headers.get("upstash-encoding", "").lower() == "base64")


# What a backend that passes commands on to a server (Redis) is not handed: CONFIG SET there
# would reconfigure the Redis server itself (its files, its memory policy, its replication)
# from HTTP. Its configuration belongs to its operator; CONFIG GET and INFO pass.
NOT_PASSED_ON = frozenset({"config|set"})


def _lookup(args: list[str], backend: CommandEndpointRoles) -> Command:
    """The table's entry for ``args`` (arity checked), whichever backend runs it: access is
    decided from its key positions, durability from its flags and keys."""
    if not args:
        raise CommandError.err("empty command")
    cmd = lookup(args)
    if cmd.name in NOT_PASSED_ON and not backend.checks_commands:
        raise CommandError.err(
            f"{cmd.name.replace('|', ' ').upper()} is not served in front of {backend.name}:"
            " configure the Redis server itself"
        )
    return cmd


async def _refused(
    backend: CommandEndpointRoles, args: list[str], error: CommandError
) -> CommandError:
    """A line the table refuses: a backend that runs the table itself refuses it again, and
    counts it (INFO's rejected calls); no other backend ever sees it."""
    if backend.checks_commands:
        try:
            await backend.command(args)
        except CommandError as e:
            return e
    return error


def _permit(request: Request, cmd: Command, args: list[str]) -> Grant:
    """The caller's grant, once it may run ``args`` (else ``NoPerm``)."""
    principal = principal_of(request.scope)
    if not principal.unrestricted:
        check_command(principal, cmd, args)
    return principal.grant


def _lists(grant: Grant, cmd: Command) -> bool:
    """Whether ``cmd``'s reply is narrowed to what ``grant`` may read (SCAN, not for the
    admin): a kept one may list what another grant could read, so a retry runs it again."""
    return cmd.access is Access.LIST and not grant.admin


async def _listings_again(
    request: Request, grant: Grant, commands: list[list[str]], skip: Container[int] = ()
) -> dict[int, dict[str, Any]]:
    """The items of a retried request's SCANs (``_lists``), run again for this caller, by
    index; the rest of its answer is the kept one (app/api/replay). SCAN writes nothing."""
    if grant.admin:
        return {}
    backend: CommandEndpointRoles = services_of(request).backend
    tenant = principal_of(request.scope).tenant
    shaper = _shaper(request)
    items: dict[int, dict[str, Any]] = {}
    for i, args in enumerate(commands):
        if i in skip or not args:
            continue
        try:
            cmd = lookup(args)
        except CommandError:
            continue  # answered as it was (the table refuses it alike)
        if _lists(grant, cmd):
            try:
                listed = _listed(grant, cmd, await backend.command(args))
                items[i] = {"result": shaper(tenant.reply(cmd, listed))}
            except CommandError as e:
                items[i] = {"error": e.text}
    return items


def _one_command(commands: list[list[str]], backend: CommandEndpointRoles) -> Command | None:
    """The command every line is, when all are the same command with the same number of
    arguments (a pipeline of XADDs), found in C passes and looked up once; else None."""
    if len(set(map(len, commands))) != 1 or len(set(map(_FIRST, commands))) != 1:
        return None
    try:
        cmd = _lookup(commands[0], backend)
    except CommandError:
        return None
    return None if "|" in cmd.name else cmd


_FIRST = itemgetter(0)


def _blocks(cmd: Command, args: list[str]) -> bool:
    """Whether ``args`` may wait on the server (XREAD / XREADGROUP with BLOCK): only then is
    the client's leaving watched for (an over-eager yes costs a task, never a wrong answer)."""
    return Flag.MAY_BLOCK in cmd.flags and any(a.lower() == "block" for a in args)


def _error(request: Request, text: str, status: int = 400) -> Response:
    """A whole request's error answer, counted by its code; a 503 says when to retry."""
    services_of(request).metrics.error(text)
    return json_response({"error": text}, status, retry_headers(status))


def _too_many(request: Request, error: TooManyHeld) -> Response:
    """A blocking read past its credential's cap on held requests (app/api/holds)."""
    services_of(request).metrics.error(error.text)
    return json_response({"error": error.text}, 429, {"Retry-After": "1"})


def _listed(grant: Grant, cmd: Command | None, reply: CommandReply) -> CommandReply:
    """A SCAN page narrowed to the keys the caller may read (its cursor walks on): the
    engine's ``ScanPage``, or a pass-through backend's ``[cursor, [key, ...]]``."""
    if grant.admin:
        return reply
    if isinstance(reply, ScanPage):
        return ScanPage(reply.cursor, readable(grant, reply.keys))
    if (
        cmd is not None
        and cmd.access is Access.LIST
        and isinstance(reply, list)
        and len(reply) == 2
    ):
        return [reply[0], readable(grant, list(reply[1]))]
    return reply


async def _run_one(request: Request, args: list[str]) -> Response:
    """Parse was done; here: access check (the table's key positions), the backend's answer
    (durable before it returns: docs/architecture.md, "The request protocol"), its shape."""
    services = services_of(request)
    backend: CommandEndpointRoles = services.backend
    tenant = principal_of(request.scope).tenant
    try:
        try:
            cmd = _lookup(args, backend)
        except CommandError as e:
            raise await _refused(backend, args, e) from None
        args = tenant.argv(cmd, args)  # its keys inside the credential's prefix
        grant = _permit(request, cmd, args)
        if not _lists(grant, cmd) and (answer := key_answer(request.scope)) is not None:
            return answer  # the Idempotency-Key's, once the check passed (app/api/replay)
        if _blocks(cmd, args):
            # A blocking read holds its connection: it counts against the credential's cap,
            # and stops waiting as soon as its client leaves.
            with services.holds.holding(principal_of(request.scope)):
                reply = await backend.command(args, lambda: wait_for_disconnect(request))
        else:
            reply = await backend.command(args)
    except NoPerm as e:
        return _error(request, e.text, 403)
    except TooManyHeld as e:
        return _too_many(request, e)
    except CommandError as e:
        return _error(request, tenant.error(e.text), command_status(e))
    except ClientGone:
        return Response(status_code=499)
    reply = tenant.reply(cmd, _listed(grant, cmd, reply))
    return json_response({"result": _shaper(request)(reply)})


def _commands(request: Request, body: bytes) -> list[list[str]]:
    settings = services_of(request).settings
    return command_list(body, settings.max_pipeline_commands, settings.max_command_args)


async def run_command(request: Request) -> Response:
    settings = services_of(request).settings
    try:
        args = command_args(await read_body(request), settings.max_command_args)
    except CommandError as e:
        return _error(request, e.text)
    return await _run_one(request, args)


async def run_pipeline(request: Request) -> Response:
    """Every command is checked first (a refused one becomes its own error item and does not
    run); the rest go to the backend as one pipeline, whose replies are merged back in order."""
    services = services_of(request)
    backend: CommandEndpointRoles = services.backend
    try:
        commands = _commands(request, await read_body(request))
    except CommandError as e:
        return _error(request, e.text)
    principal = principal_of(request.scope)
    grant = principal.grant
    tenant = principal.tenant
    refusals: dict[int, CommandError] = {}
    sent: list[list[str]] | None = None  # None while every line so far goes to the backend
    # Of what is sent: each line's check, and SCAN's narrowing. None: nothing to check.
    cmds: list[Command | None] | None = None if principal.unrestricted else []
    blocks = False
    own_table = backend.checks_commands
    cmd: Command | None = None
    name, size = "", -1  # the previous line's: a run of XADDs is looked up once
    may_block = False
    one = _one_command(commands, backend) if principal.unrestricted else None
    if one is not None:  # every line the same command: nothing to check line by line
        blocks = Flag.MAY_BLOCK in one.flags and any(_blocks(one, args) for args in commands)
    else:
        for i, args in enumerate(commands):
            if cmd is None or len(args) != size or args[0] != name or "|" in cmd.name:
                try:
                    cmd = _lookup(args, backend)
                except CommandError as e:
                    cmd = None
                    if own_table:  # it refuses (and counts) the line itself
                        if sent is not None:
                            sent.append(args)
                        if cmds is not None:
                            cmds.append(None)
                    else:
                        sent = _refuse(refusals, i, e, sent, commands)
                    continue
                name, size = args[0], len(args)
                may_block = Flag.MAY_BLOCK in cmd.flags
            if tenant:
                try:
                    args = commands[i] = tenant.argv(cmd, args)
                except CommandError as e:  # not for a prefix: this line's error item
                    sent = _refuse(refusals, i, e, sent, commands)
                    continue
            if cmds is not None:
                try:
                    check_command(principal, cmd, args)
                except NoPerm as e:  # this command's error item; the others run
                    sent = _refuse(refusals, i, e, sent, commands)
                    continue
                cmds.append(cmd)
            if sent is not None:
                sent.append(args)
            if may_block and not blocks:
                blocks = _blocks(cmd, args)
    if has_key_answer(request.scope):  # the Idempotency-Key's, with what the check refuses now
        replaced = {i: {"error": e.text} for i, e in refusals.items()}
        replaced.update(await _listings_again(request, grant, commands, refusals))
        return items_answer(request.scope, replaced)
    lines = commands if sent is None else sent
    try:
        if blocks:
            with services.holds.holding(principal):
                results = await backend.pipeline(lines, lambda: wait_for_disconnect(request))
        else:
            results = await backend.pipeline(lines)
    except TooManyHeld as e:
        return _too_many(request, e)
    except ClientGone:
        return Response(status_code=499)
    except CommandError as e:  # the whole request's: the backend failed, not one command
        return _error(request, e.text, command_status(e))
    if not refusals and results and all(map(StreamID.__instancecheck__, results)):
        ids = _ids_answer(request, cast("list[StreamID]", results))  # every reply an ID
        if ids is not None:
            return ids
    return json_response(_items(request, grant, tenant, len(commands), refusals, cmds, results))


def _ids_answer(request: Request, ids: list[StreamID]) -> Response | None:
    """The answer to a pipeline whose every reply is an ID, written in two C passes (IDs need
    no JSON escaping): what ``_items`` and ``json_response`` make of it, byte for byte."""
    if _shaper(request).b64:
        return None
    texts = '"},{"result":"'.join(map("%d-%d".__mod__, ids))
    return Response(f'[{{"result":"{texts}"}}]'.encode(), media_type="application/json")


def _refuse(
    refusals: dict[int, CommandError],
    i: int,
    error: CommandError,
    sent: list[list[str]] | None,
    commands: list[list[str]],
) -> list[list[str]]:
    """Line ``i`` is answered ``error`` and not sent: what is sent is from now on a list of
    its own (every line before it went)."""
    refusals[i] = error
    return commands[:i] if sent is None else sent


def _items(
    request: Request,
    grant: Grant,
    tenant: TenantPrefix,
    n: int,
    refusals: dict[int, CommandError],
    cmds: list[Command | None] | None,
    results: list[Any],
) -> list[dict[str, Any]]:
    """The pipeline's answer, one item a command in its order, each error counted."""
    metrics = services_of(request).metrics
    shaper = _shaper(request)
    shape_id = shaper.id
    out: list[dict[str, Any]] = []
    j = 0
    for i in range(n):
        r: Any = refusals.get(i) if refusals else None
        if r is None:
            r = results[j]
            cmd = cmds[j] if cmds is not None else None  # (an admin's SCAN is not narrowed)
            j += 1
            if type(r) is StreamID:  # the common case (XADD), shaped at once
                out.append({"result": shape_id(r)})
                continue
        else:
            cmd = None
        if isinstance(r, CommandError):
            metrics.error(r.text)
            out.append({"error": tenant.error(r.text)})
        else:
            out.append({"result": shaper(tenant.reply(cmd, _listed(grant, cmd, r)))})
    return out


async def run_transaction(request: Request) -> Response:
    services = services_of(request)
    backend: CommandEndpointRoles = services.backend
    tenant = principal_of(request.scope).tenant
    try:
        commands = _commands(request, await read_body(request))
        # Every command is checked first: one refused, and none runs (Redis's EXECABORT).
        principal = principal_of(request.scope)
        grant = principal.grant
        aborted = False
        for i, args in enumerate(commands):
            try:
                cmd = _lookup(args, backend)
            except CommandError:
                aborted = True  # an unknown command: EXECABORT below, as Redis answers
                continue
            args = commands[i] = tenant.argv(cmd, args)  # not for a prefix: none runs
            if not principal.unrestricted:
                check_command(principal, cmd, args)
        if aborted and not backend.checks_commands:
            raise CommandError(EXECABORT)  # (one that runs the table answers it, and counts)
        if has_key_answer(request.scope):  # the Idempotency-Key's, once every command passed
            return items_answer(request.scope, await _listings_again(request, grant, commands))
        results = await backend.multi_exec(commands)
    except NoPerm as e:
        return _error(request, e.text, 403)
    except CommandError as e:
        return _error(request, tenant.error(e.text), command_status(e))
    metrics = services.metrics
    shaper = _shaper(request)
    out = []
    for args, r in zip(commands, results, strict=True):
        if isinstance(r, CommandError):
            metrics.error(r.text)
            out.append({"error": tenant.error(r.text)})
        else:
            cmd_of = None if grant.admin else lookup(args)
            out.append({"result": shaper(tenant.reply(cmd_of, _listed(grant, cmd_of, r)))})
    return json_response(out)


async def run_path_command(request: Request) -> Response:
    try:
        body = await read_body(request) if request.method in ("POST", "PUT") else None
        args = path_args(
            request.scope.get("raw_path") or request.url.path.encode(),
            request.scope.get("query_string", b""),
            body,
        )
    except CommandError as e:
        return _error(request, e.text)
    except UnicodeDecodeError:
        return _error(request, "ERR the request body must be UTF-8 text")
    return await _run_one(request, args)


class _Everything(Convertor[str]):
    """The path style's catch-all: any path, newlines too. Starlette's ``path`` convertor is
    ``.*``, which stops at a newline: an argument holding one (``%0A``) matched no route, or
    matched through the redirect to the path without its trailing slash (``$`` matches
    before a final newline) and got an empty 307."""

    regex = r"[\s\S]*"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("everything", _Everything())


def install(app: FastAPI) -> None:
    """``/``, ``/pipeline`` and ``/multi-exec`` go first; the path-style catch-all goes last,
    so call this after every other route is registered."""
    app.router.routes[:0] = [
        Route("/", run_command, methods=["POST"]),
        Route("/pipeline", run_pipeline, methods=["POST"]),
        Route("/multi-exec", run_transaction, methods=["POST"]),
    ]
    path_style = Route("/{path:everything}", run_path_command, methods=["GET", "POST", "PUT"])
    # Starlette adds HEAD to every GET route; a HEAD must not run a command (HEAD /xadd/...
    # used to append), so it gets 405 with Allow, as OPTIONS does until CORS is handled.
    assert path_style.methods is not None
    path_style.methods.discard("HEAD")
    app.router.routes.append(path_style)
