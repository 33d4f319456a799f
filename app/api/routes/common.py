"""What every /v1 router shares: its route class, path parameters, documented errors, links.

Handlers are ``async def`` that never await while they touch the engine: FastAPI would run a
plain ``def`` in a worker thread, racing the event loop that owns the keyspace (and waking
waiters' futures from the wrong thread). As ``async def``, each engine call is one atomic step
on the loop, as a Redis command is.

Path names are stream keys, group and consumer names: any text without a ``/`` (a name with
``/`` cannot be addressed in a path segment; use the command endpoint for such keys).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from http import HTTPStatus
from typing import Annotated, Any
from urllib.parse import quote

import orjson
from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from app.api.deps import get_durability, read_body
from app.api.schemas.entries import FieldsForm
from app.api.schemas.problem import Problem
from app.engine.errors import CommandError
from app.engine.waiting import ClientGone

StreamName = Annotated[str, Path(description="The stream's key.", examples=["sensors"])]
GroupName = Annotated[str, Path(description="The consumer group's name.", examples=["billing"])]
ConsumerName = Annotated[str, Path(description="The consumer's name.", examples=["alice"])]
FieldsParam = Annotated[
    FieldsForm,
    Query(description="`object` (default) or `pairs`: every pair in order, repeats kept."),
]

_WHY = {
    400: "A bad ID or argument (the Redis error text says which).",
    401: "No or a wrong bearer token (when the service is started with one).",
    404: "No such stream, group, consumer or entry.",
    409: "BUSYGROUP, or an ID not greater than the stream's top.",
    413: "The request body is larger than the configured limit.",
    422: "The JSON body is malformed or misses a field.",
    503: "Storage cannot make the write durable now; retry later.",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The documented error responses of an operation: 400 and 401 always; an operation with a
    body (413) can also answer 422, and every write 503."""
    codes = {400, 401, *statuses}
    if 413 in codes:
        codes |= {422, 503}
    return {
        s: {"model": Problem, "description": _WHY.get(s, HTTPStatus(s).phrase)}
        for s in sorted(codes)
    }


_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class RestRoute(APIRoute):
    """A /v1 route: what the command endpoint does around each command, done once here.

    - The body is read through ``read_body``, so ``max_body_bytes`` holds (413) before
      FastAPI buffers and parses it.
    - A write (any method but GET) is refused while storage cannot make it durable (503), and
      its reply waits until it is (``Durability.wait_committed``), as for commands.
    - A long poll whose client went away answers 499 (nobody reads it).
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def rest(request: Request) -> Response:
            write = request.method in _WRITES
            if write:
                request._body = await read_body(request)
                _decode_json(request)
                get_durability(request).check_writable()
            try:
                response = await handler(request)
            except ClientGone:
                return Response(status_code=499)
            if write:
                await get_durability(request).wait_committed()
            return response

        return rest


def page_count(request: Request, count: int | None, *, zero_allowed: bool = True) -> int:
    """A REST ``count``: the configured default page when absent, refused (400) above
    ``rest_max_count`` (and at 0 where 0 would mean "everything"), so one request reads a
    bounded page and pages on instead of holding the event loop."""
    settings = request.app.state.settings
    if count is None:
        default: int = settings.rest_default_count
        return default
    most: int = settings.rest_max_count
    if count > most or (count == 0 and not zero_allowed):
        raise CommandError.err(
            f"count must be between {0 if zero_allowed else 1} and {most} (rest_max_count); "
            "read further pages with `next`"
        )
    return count


def next_link(request: Request, **params: str | int) -> str:
    """A ``Link`` header value to the next page: this request with ``params`` replaced."""
    url = request.url.include_query_params(**params)
    return f'<{url.path}?{url.query}>; rel="next"'


def _decode_json(request: Request) -> None:
    """Parse a JSON body before FastAPI does, so that every malformed one is a 422.

    FastAPI's own parse (the stdlib's) turns only a syntax error into a 422: a body that is
    not UTF-8, or nested past the stdlib's recursion limit, became a 400 "error parsing the
    body" (or a RecursionError). orjson refuses all of them alike (nesting past 1024, NaN),
    and FastAPI then uses the document found here (Starlette's ``Request.json`` cache).
    """
    body: bytes = request._body
    media = request.headers.get("content-type", "application/json").split(";")[0].strip()
    if not body or not (media == "application/json" or media.endswith("+json")):
        return
    try:
        request._json = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise RequestValidationError(
            [
                {
                    "type": "json_invalid",
                    "loc": ("body", e.pos),
                    "msg": "JSON decode error",
                    "input": {},
                    "ctx": {"error": e.msg},
                }
            ]
        ) from None


def router(prefix: str, tag: str) -> APIRouter:
    return APIRouter(prefix=prefix, tags=[tag], route_class=RestRoute)


def segment(name: str) -> str:
    return quote(name, safe="")


def stream_url(stream: str) -> str:
    return f"/v1/streams/{segment(stream)}"
