"""The Redis-command endpoint, compatible with the Upstash REST protocol.

``POST /`` (one command as a JSON array), ``GET|POST /cmd/arg/...`` (path style),
``POST /pipeline`` (several, not atomic) and ``POST /multi-exec`` (atomic). Every answer is
``{"result": ...}`` or ``{"error": "<Redis error text>"}``; nothing else ever comes back.
Unlike Upstash, XREAD / XREADGROUP BLOCK wait on the server.

Each command run is counted and timed for ``/metrics`` (the engine's time, not a blocked
read's wait, as Redis's commandstats), and each error answered is counted by its code.

These are plain Starlette routes, not FastAPI ones: ``POST /``, ``/pipeline`` and
``/multi-exec`` are matched before the ``/v1`` routes and solve no dependencies, which cost
about 40 % of a one-entry XADD when they went through FastAPI's router (bench/REPORT.md).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.routing import Route

from app.access import Grant, NoPerm, check_command, readable
from app.api.access_gate import principal_of
from app.api.commands.resp import Shaper
from app.api.commands.upstash import command_args, command_list, path_args
from app.api.deps import read_body, wait_for_disconnect
from app.api.errors import json_response
from app.durability import Durability, StorageUnavailable
from app.engine.blocking import Block
from app.engine.commands import Command, Reply
from app.engine.commands.bulk import run_at
from app.engine.errors import CommandError
from app.engine.ids import StreamID
from app.engine.replies import ScanPage
from app.engine.store import Store
from app.engine.waiting import ClientGone, wait
from app.observe import Metrics
from app.settings import Settings


def _shaper(request: Request) -> Shaper:
    return Shaper(request.headers.get("upstash-encoding", "").lower() == "base64")


def _scope(store: Store, commands: list[list[str]]) -> tuple[bool, list[str] | None]:
    """Whether any of ``commands`` writes (refused while storage is away), and the keys they
    name (None: the whole keyspace), whose records their replies wait for."""
    writes = False
    keys: list[str] | None = []
    for args in commands:
        try:
            cmd = store.command(args, counted=False)  # execute_atomic counts it
        except CommandError:
            continue  # refused before it runs: it shows nothing
        writes = writes or cmd.writes
        keys = _add_keys(keys, cmd.keys(args))
    return writes, keys


def _add_keys(keys: list[str] | None, named: list[str] | None) -> list[str] | None:
    if keys is None or named is None:
        return None
    keys.extend(named)
    return keys


def _permit(request: Request, cmd: Command, args: list[str]) -> Grant:
    """The caller's grant, once it may run ``args`` (else ``NoPerm``)."""
    grant = principal_of(request.scope).grant
    if not grant.admin:
        check_command(grant, cmd, args)
    return grant


def _error(request: Request, text: str, status: int = 400) -> Response:
    """A whole request's error answer, counted by its code."""
    request.app.state.metrics.error(text)
    return json_response({"error": text}, status)


async def _execute(store: Store, args: list[str], cmd: Command, request: Request) -> Reply:
    """Run one command (``waiting.execute``), timing the engine's part for the metrics."""
    metrics: Metrics = request.app.state.metrics
    started = time.perf_counter()
    try:
        reply = store.execute(args, cmd=cmd)
    finally:
        metrics.command(cmd.name, time.perf_counter() - started)
    if isinstance(reply, Block):
        # A blocked call counts in INFO's stats when it ends, as ``waiting.execute`` counts
        # it (an error by its code: NOGROUP when the group went away meanwhile).
        try:
            reply = await wait(store, reply, lambda: wait_for_disconnect(request))
        except CommandError as e:
            store.finished(cmd, e)
            raise
        store.finished(cmd)
    return reply


def _listed(grant: Grant, reply: Any) -> Any:
    """A SCAN page narrowed to the keys the caller may read (its cursor walks on)."""
    if isinstance(reply, ScanPage) and not grant.admin:
        return ScanPage(reply.cursor, readable(grant, reply.keys))
    return reply


async def _run_one(
    store: Any, args: list[str], request: Request, shaper: Shaper, durability: Durability
) -> Response:
    keys: list[str] | None = []
    try:
        cmd = store.command(args)  # once: for access, the keys, the write check, running
        grant = _permit(request, cmd, args)
        keys = cmd.keys(args)
        if cmd.writes:
            durability.check_writable()  # refused before it runs: nothing applied
        reply = await _execute(store, args, cmd, request)
    except NoPerm as e:
        return _error(request, e.text, 403)
    except CommandError as e:
        await durability.wait_visible(keys)  # an error can show state too (NOGROUP, the top ID)
        return _error(request, e.text)
    except ClientGone:
        return Response(status_code=499)
    # Nothing this reply shows may be taken back by a crash: a write's own record, another
    # client's write that a read (or a blocked XREADGROUP served by it) observed.
    await durability.wait_visible(keys)
    return json_response({"result": shaper(_listed(grant, reply))})


def _commands(request: Request, body: bytes) -> list[list[str]]:
    settings: Settings = request.app.state.settings
    return command_list(body, settings.max_pipeline_commands, settings.max_command_args)


async def run_command(request: Request) -> Response:
    store, durability = request.app.state.store, request.app.state.durability
    settings: Settings = request.app.state.settings
    try:
        args = command_args(await read_body(request), settings.max_command_args)
    except CommandError as e:
        return _error(request, e.text)
    return await _run_one(store, args, request, _shaper(request), durability)


async def run_pipeline(request: Request) -> Response:
    store, durability = request.app.state.store, request.app.state.durability
    try:
        commands = _commands(request, await read_body(request))
    except CommandError as e:
        return _error(request, e.text)
    metrics: Metrics = request.app.state.metrics
    shaper = _shaper(request)
    out: list[dict[str, Any]] = []
    keys: list[str] | None = []
    loop = asyncio.get_running_loop()
    slice_s = request.app.state.settings.pipeline_slice_ms / 1000
    started = loop.time()
    i = 0
    while i < len(commands):
        if loop.time() - started >= slice_s:
            # Not atomic: let other requests run between commands, as redis-server serves
            # other clients between the commands of a pipelined connection. By time, not by
            # count: a short pipeline runs whole, so its records share one group commit.
            await asyncio.sleep(0)
            started = loop.time()
        fused = _fused_appends(store, commands, i, request, durability, shaper)
        if fused is not None:
            keys = _add_keys(keys, [commands[i][1]])
            out.extend(fused)
            i += len(fused)
            continue
        args = commands[i]
        i += 1
        try:
            cmd = store.command(args)
            keys = _add_keys(keys, cmd.keys(args))
            grant = _permit(request, cmd, args)  # NoPerm: this command's error item
            if cmd.writes:
                durability.check_writable()
            reply = await _execute(store, args, cmd, request)
            out.append({"result": shaper(_listed(grant, reply))})
        except CommandError as e:
            metrics.error(e.text)
            out.append({"error": e.text})
        except ClientGone:
            return Response(status_code=499)
    await durability.wait_visible(keys)  # once: one group commit
    return json_response(out)


def _fused_appends(
    store: Store,
    commands: list[list[str]],
    i: int,
    request: Request,
    durability: Durability,
    shaper: Shaper,
) -> list[dict[str, Any]] | None:
    """Consecutive plain XADDs to one key from ``commands[i]`` on, run as one engine call
    (``commands.bulk``): each still gets its own reply or error. None when there is no such
    run, or when the first of them would be refused before running (no permission, storage
    away): then each runs on its own and gets that refusal."""
    run = run_at(store.keyspace, commands, i, serve_between=True)
    if not run:
        return None
    try:
        _permit(request, store.command(commands[i]), commands[i])  # one key, one verdict
        durability.check_writable()
    except (CommandError, StorageUnavailable):
        return None
    metrics: Metrics = request.app.state.metrics
    started = time.perf_counter()
    outcomes = store.append_run(run)
    each = (time.perf_counter() - started) / len(outcomes)
    for r in outcomes:  # counted as the XADDs they are
        metrics.command("xadd", each)
        if isinstance(r, CommandError):
            metrics.error(r.text)
    shape_id = shaper.id
    return [
        {"result": shape_id(r)}
        if type(r) is StreamID
        else {"error": r.text}
        if isinstance(r, CommandError)
        else {"result": None}
        for r in outcomes
    ]


async def run_transaction(request: Request) -> Response:
    store, durability = request.app.state.store, request.app.state.durability
    try:
        commands = _commands(request, await read_body(request))
        # Every command is checked first: one refused, and none runs (Redis's EXECABORT).
        grant = principal_of(request.scope).grant
        if not grant.admin:
            for args in commands:
                try:
                    check_command(grant, store.command(args, counted=False), args)
                except NoPerm:
                    raise
                except CommandError:
                    continue  # an unknown command: EXECABORT below, as Redis answers
        writes, keys = _scope(store, commands)
        if writes:
            durability.check_writable()
        started = time.perf_counter()
        results = store.execute_atomic(commands)
    except NoPerm as e:
        return _error(request, e.text, 403)
    except CommandError as e:
        return _error(request, e.text)
    _count_transaction(request.app.state.metrics, store, commands, results, started)
    await durability.wait_visible(keys)
    shaper = _shaper(request)
    return json_response(
        [
            {"error": r.text}
            if isinstance(r, CommandError)
            else {"result": shaper(_listed(grant, r))}
            for r in results
        ]
    )


def _count_transaction(
    metrics: Metrics,
    store: Store,
    commands: list[list[str]],
    results: list[Reply | CommandError],
    started: float,
) -> None:
    """A transaction is timed whole (``exec``, as Redis's commandstats); each of its commands
    is counted, and each error it answered."""
    metrics.command("exec", time.perf_counter() - started)
    for args, result in zip(commands, results, strict=True):
        metrics.commands.add((store.command(args).name,))
        if isinstance(result, CommandError):
            metrics.error(result.text)


async def run_path_command(request: Request) -> Response:
    store, durability = request.app.state.store, request.app.state.durability
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
    return await _run_one(store, args, request, _shaper(request), durability)


def install(app: FastAPI) -> None:
    """``/``, ``/pipeline`` and ``/multi-exec`` go first; the path-style catch-all goes last,
    so call this after every other route is registered."""
    app.router.routes[:0] = [
        Route("/", run_command, methods=["POST"]),
        Route("/pipeline", run_pipeline, methods=["POST"]),
        Route("/multi-exec", run_transaction, methods=["POST"]),
    ]
    path_style = Route("/{path:path}", run_path_command, methods=["GET", "POST", "PUT"])
    # Starlette adds HEAD to every GET route; a HEAD must not run a command (HEAD /xadd/...
    # used to append), so it gets 405 with Allow, as OPTIONS does until CORS is handled.
    assert path_style.methods is not None
    path_style.methods.discard("HEAD")
    app.router.routes.append(path_style)
