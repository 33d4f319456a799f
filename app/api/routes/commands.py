"""The Redis-command endpoint, compatible with the Upstash REST protocol.

``POST /`` (one command as a JSON array), ``GET|POST /cmd/arg/...`` (path style),
``POST /pipeline`` (several, not atomic) and ``POST /multi-exec`` (atomic). Every answer is
``{"result": ...}`` or ``{"error": "<Redis error text>"}``; nothing else ever comes back.
Unlike Upstash, XREAD / XREADGROUP BLOCK wait on the server.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from app.api.deps import StoreDep, read_body, wait_for_disconnect
from app.api.errors import json_response
from app.api.resp import Shaper
from app.api.upstash import command_args, command_list, parse_body, path_args
from app.engine.errors import CommandError
from app.engine.waiting import ClientGone, execute

router = APIRouter(tags=["commands"], include_in_schema=False)


def _shaper(request: Request) -> Shaper:
    return Shaper(request.headers.get("upstash-encoding", "").lower() == "base64")


async def _run_one(store: Any, args: list[str], request: Request, shaper: Shaper) -> Response:
    try:
        reply = await execute(store, args, lambda: wait_for_disconnect(request))
    except CommandError as e:
        return json_response({"error": e.text}, 400)
    except ClientGone:
        return Response(status_code=499)
    return json_response({"result": shaper(reply)})


@router.post("/")
async def run_command(request: Request, store: StoreDep) -> Response:
    try:
        args = command_args(parse_body(await read_body(request)))
    except CommandError as e:
        return json_response({"error": e.text}, 400)
    return await _run_one(store, args, request, _shaper(request))


@router.post("/pipeline")
async def run_pipeline(request: Request, store: StoreDep) -> Response:
    try:
        commands = command_list(parse_body(await read_body(request)))
    except CommandError as e:
        return json_response({"error": e.text}, 400)
    shaper = _shaper(request)
    out: list[dict[str, Any]] = []
    for args in commands:
        try:
            reply = await execute(store, args, lambda: wait_for_disconnect(request))
            out.append({"result": shaper(reply)})
        except CommandError as e:
            out.append({"error": e.text})
        except ClientGone:
            return Response(status_code=499)
    return json_response(out)


@router.post("/multi-exec")
async def run_transaction(request: Request, store: StoreDep) -> Response:
    try:
        commands = command_list(parse_body(await read_body(request)))
        results = store.execute_atomic(commands)
    except CommandError as e:
        return json_response({"error": e.text}, 400)
    shaper = _shaper(request)
    return json_response(
        [
            {"error": r.text} if isinstance(r, CommandError) else {"result": shaper(r)}
            for r in results
        ]
    )


@router.api_route("/{path:path}", methods=["GET", "POST"])
async def run_path_command(request: Request, store: StoreDep) -> Response:
    try:
        body = await read_body(request) if request.method == "POST" else None
        args = path_args(
            request.scope.get("raw_path") or request.url.path.encode(),
            request.scope.get("query_string", b""),
            body,
        )
    except CommandError as e:
        return json_response({"error": e.text}, 400)
    except UnicodeDecodeError:
        return json_response({"error": "ERR the request body must be UTF-8 text"}, 400)
    return await _run_one(store, args, request, _shaper(request))
