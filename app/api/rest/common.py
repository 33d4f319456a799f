"""What every /v1 router shares: its route class, path parameters, documented errors, links.

Handlers are ``async def`` and call the ``Backend`` (``BackendDep``, ``ServicesDep``): FastAPI
would run a plain ``def`` in a worker thread, racing the event loop that owns the embedded
keyspace (and waking waiters' futures from the wrong thread). Each backend call is one atomic
step, as a Redis command is; a handler that first looks (does the group exist?) and then acts
makes two, as a Redis client would, and answers for the state each one met.

Path names are stream keys, group and consumer names: any bytes, each name one path segment,
percent-encoded (``/`` as ``%2F``: app/api/raw_paths). Bytes that are not UTF-8 travel as
``%NN`` in URLs and as ``\\udcNN`` in JSON (app/api/binary).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Coroutine
from http import HTTPStatus
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError
from starlette.types import Scope

from app.access import check_keys
from app.access.prefix import TenantPrefix
from app.api.access_gate import principal_of, tenant_of
from app.api.binary import encode_json, query_pairs, quote_name
from app.api.deps import wait_for_disconnect
from app.api.raw_paths import segmented
from app.api.replay import key_answer
from app.api.rest.models import MODELS, model_of
from app.api.rest.request import RestRequest
from app.api.rest.schemas.entries import FieldsForm
from app.api.rest.schemas.problem import Problem
from app.api.services import services_of
from app.backends import ClientGone
from app.backends.roles import StreamsRole
from app.engine.commands.reads import ReadRequest
from app.engine.errors import CommandError
from app.engine.ids import INT64_MAX
from app.engine.replies import StreamRead

_SEGMENT = " One path segment, percent-encoded: `/` as `%2F`, `%` as `%25`."
StreamName = Annotated[str, Path(description="The stream's key." + _SEGMENT, examples=["sensors"])]
GroupName = Annotated[
    str, Path(description="The consumer group's name." + _SEGMENT, examples=["billing"])
]
ConsumerName = Annotated[
    str, Path(description="The consumer's name." + _SEGMENT, examples=["alice"])
]
FieldsParam = Annotated[
    FieldsForm,
    Query(description="`object` (default) or `pairs`: every pair in order, repeats kept."),
]

_WHY = {
    400: "A bad ID or argument (the Redis error text says which).",
    401: "No credentials, or none valid now (unknown, revoked or expired key; bad JWT).",
    403: "Credentials that do not reach: the verb is not granted on this stream (NOPERM).",
    404: "No such stream, group, consumer or entry.",
    409: "BUSYGROUP, an ID not greater than the stream's top, or a stream holding its most "
    "groups (`max_stream_groups`) or a group its most consumers (`max_group_consumers`).",
    413: "The request body is larger than the configured limit.",
    415: "A body sent without `Content-Type: application/json` (or `application/*+json`);"
    " the detail names the type received.",
    422: "The JSON body is malformed or misses a field.",
    429: "A long poll (`block_ms`) past the credential's cap on event streams and long polls"
    " open at once (`Retry-After`).",
    503: "Storage cannot make the write durable now; retry later.",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The documented error responses of an operation: 400, 401 and 403 always; an operation
    with a body (413) can also answer 415 and 422, and every write 503."""
    codes = {400, 401, 403, *statuses}
    if 413 in codes:
        codes |= {415, 422, 503}
    return {
        s: {"model": Problem, "description": _WHY.get(s, HTTPStatus(s).phrase)}
        for s in sorted(codes)
    }


_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class RestRoute(APIRoute):
    """A /v1 route: what the command endpoint does around each command, done once here.

    - FastAPI gets a ``RestRequest`` (app/api/rest/request): its body is read through
      ``read_body``, so ``max_body_bytes`` holds (413) before FastAPI buffers and parses it,
      and a malformed JSON body is a 422.
    - Durability is the backend's: a write is refused while storage cannot make it durable
      (503), and no answer, errors included, shows state a crash could take back. The
      handler runs inside ``Backend.answering``, so its response is built while the journal
      commits and leaves once what it shows is durable.
    - A long poll whose client went away answers 499 (nobody reads it).
    - The caller must be granted what the Redis command the operation models needs
      (``routes.models``) on the stream in the path, or on every stream a multi-stream read
      names (``app.access``): else 403, before the body is even read.
    - Each path parameter is one segment of the raw path, percent-decoded after splitting, so
      a name may hold ``/`` as ``%2F`` (``segmented``, app/api/raw_paths).
    - Query values keep bytes that are not UTF-8 (``RestRequest.query_params``), as paths do.
    - The response model is encoded here (``_encoded``), in the one representation of such
      bytes: pydantic's JSON cannot write a lone surrogate.
    """

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        operation = kwargs.get("operation_id") or ""
        self.model = model_of(operation)  # the Redis command this operation is, for access
        kwargs["openapi_extra"] = {
            **(kwargs.get("openapi_extra") or {}),
            "x-redis-command": MODELS[operation].replace("|", " ").upper(),
        }
        # Every name in the path one raw segment, decoded after splitting (app/api/raw_paths).
        path = segmented(path)
        super().__init__(path, _encoded(endpoint, kwargs.get("status_code")), **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def rest(request: Request) -> Response:
            request = RestRequest(request.scope, request.receive)
            await self.admit(request)
            return await answered(request, lambda: handler(request))

        return rest

    async def admit(self, request: RestRequest) -> None:
        """The credential's prefix on the path's stream, the access check, then the body
        within its limit: before anything is solved."""
        principal = principal_of(request.scope)
        tenant = principal.tenant
        if tenant:
            inward_path(request.scope, tenant)
        if not principal.unrestricted:
            # The stream in the path, or the streams a multi-stream read names.
            stream = request.path_params.get("stream")
            named = (
                [stream]
                if stream is not None
                else [tenant.inward(s) for s in request.query_params.getlist("stream")]
            )
            check_keys(principal, self.model, named or None)
        if request.method in _WRITES:
            await request.load_body(json_only=self.body_field is not None)


async def answered(request: Request, call: Callable[[], Awaitable[Response]]) -> Response:
    """``call()`` inside ``Backend.answering``: its response is built while the journal
    commits and leaves once what it shows is durable. A client gone answers 499. Called
    once the route's access check passed: a request whose Idempotency-Key already has an
    answer gets it here instead (app/api/replay)."""
    answer = key_answer(request.scope)
    if answer is not None:
        return answer
    try:
        async with services_of(request).backend.answering():
            response = await call()
    except ClientGone:
        return Response(status_code=499)
    tenant = tenant_of(request.scope)
    if tenant and "location" in response.headers:
        response.headers["location"] = outward_url(tenant, response.headers["location"])
    return response


ASKED = "xstreams.asked_path_params"  # the path's names as the client sent them


def inward_path(scope: Scope, tenant: TenantPrefix) -> None:
    """The path's stream as the server names it (the credential's prefix in front), for the
    handler; the client's own names stay in the scope (``ASKED``) for error documents. Run
    again on a path matched again (the fallback from the fast path): the router sets the
    path parameters afresh each time."""
    params = scope.get("path_params")
    if params and "stream" in params:
        scope[ASKED] = dict(params)
        params["stream"] = tenant.inward(params["stream"])


def outward_url(tenant: TenantPrefix, url: str) -> str:
    """A URL this service built from a server name (``Location``), as the client names it."""
    head = "/v1/streams/" + quote_name(tenant.text)
    return "/v1/streams/" + url[len(head) :] if url.startswith(head) else url


def shown(request: Request, name: str) -> str:
    """The caller's name for the server's stream ``name`` (its prefix removed)."""
    return principal_of(request.scope).tenant.outward(name)


def sub_response() -> Response:
    """The ``Response`` an endpoint may set a status and headers on, as FastAPI makes it."""
    response = Response()
    del response.headers["content-length"]
    response.status_code = None  # type: ignore[assignment]
    return response


async def read_or_wait(
    request: Request, backend: StreamsRole, read: ReadRequest
) -> list[StreamRead]:
    """XREAD / XREADGROUP for a REST route. A long poll (``block_ms``) counts against the
    caller's cap on held requests while it runs, as an event stream does (app/api/holds:
    past it, 429), and stops waiting as soon as its client leaves."""
    gone = lambda: wait_for_disconnect(request)  # noqa: E731
    if read.block_ms is None:
        return await backend.read(read, gone)
    with services_of(request).holds.holding(principal_of(request.scope)):
        return await backend.read(read, gone)


class Encoded:
    """A response as plain values for ``encode_json`` (app/api/encoding), returned by a
    handler instead of its response model: a page of entries builds no model per entry. The
    route's ``response_model`` still documents it; tests/api/rest/test_openapi.py and the
    schemathesis run hold the two to one shape."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _encoded(
    endpoint: Callable[..., Coroutine[Any, Any, Any]], status_code: int | None
) -> Callable[..., Coroutine[Any, Any, Any]]:
    """The endpoint, answering its model as JSON bytes itself.

    pydantic writes the model (its fast path) unless a string holds a lone surrogate, which it
    cannot write (and its JSON mode would turn such object keys into U+FFFD); then the model's
    Python form goes through ``encode_json``. The status and headers an endpoint set on its
    ``Response`` parameter are kept, with FastAPI's precedence (the route's status first). The
    wrapper keeps the endpoint's signature (``functools.wraps``): FastAPI still solves the same
    parameters and documents ``response_model``.
    """

    @functools.wraps(endpoint)
    async def encoded(*args: Any, **kwargs: Any) -> Any:
        result = await endpoint(*args, **kwargs)
        if isinstance(result, Encoded):
            body = encode_json(result.value)
        elif not isinstance(result, BaseModel):
            return result
        else:
            try:
                body = result.__pydantic_serializer__.to_json(result)
            except PydanticSerializationError:
                body = encode_json(result.model_dump(mode="python"))
        set_on = next((v for v in kwargs.values() if isinstance(v, Response)), None)
        status = status_code or (set_on and set_on.status_code) or 200
        response = Response(body, status, media_type="application/json")
        if set_on is not None:
            response.headers.raw.extend(
                (k, v) for k, v in set_on.headers.raw if k != b"content-length"
            )
        return response

    return encoded


def page_count(request: Request, count: int | None, *, zero_allowed: bool = True) -> int:
    """A REST ``count``: the configured default page when absent, refused (400) above
    ``rest_max_count`` (and at 0 where 0 would mean "everything"), so one request reads a
    bounded page and pages on instead of holding the event loop."""
    settings = services_of(request).settings
    if count is None:
        return settings.rest_default_count
    most = settings.rest_max_count
    if count > most or (count == 0 and not zero_allowed):
        raise CommandError.err(
            f"count must be between {0 if zero_allowed else 1} and {most} (rest_max_count); "
            "read further pages with `next`"
        )
    return count


AfterParam = Annotated[
    str | None,
    Query(description="List the names after this one (the previous page's `next`)."),
]
PageParam = Annotated[
    int | None,
    Query(
        ge=1,
        le=INT64_MAX,
        description="At most this many per page; without it, the service's default page (100 "
        "unless configured), at most `rest_max_count` (1000 unless configured).",
    ),
]
Row = TypeVar("Row")


async def name_page(
    request: Request,
    response: Response,
    after: str | None,
    count: int | None,
    fetch: Callable[[str, int], Awaitable[list[Row]]],
    name: Callable[[Row], str],
) -> tuple[list[Row], str | None]:
    """One page of a listing by name (groups, consumers) and the name to go on after.

    ``fetch(start, n)`` gives at most ``n`` rows named ``start`` or after, in order. One row
    past the page is asked for, so a page says whether another follows (``Link: <...>;
    rel="next"``, and the returned name) and the last page never leads to an empty one. The
    smallest name after ``after`` is ``after`` with a NUL byte appended."""
    size = page_count(request, count, zero_allowed=False)
    rows = await fetch("" if after is None else after + "\0", size + 1)
    if len(rows) <= size:
        return rows, None
    rows = rows[:size]
    nxt = name(rows[-1])
    response.headers["Link"] = next_link(request, after=nxt, count=size)
    return rows, nxt


def next_link(request: Request, **params: str | int) -> str:
    """A ``Link`` header value to the next page: this request with ``params`` replaced.

    Built from the raw path and query, names re-quoted byte for byte (``quote_name``), so a
    stream whose name is not UTF-8 pages like any other (a header holds no lone surrogate)."""
    pairs = [(k, v) for k, v in query_pairs(request.scope["query_string"]) if k not in params]
    pairs += [(k, str(v)) for k, v in params.items()]
    query = "&".join(f"{quote_name(k)}={quote_name(v)}" for k, v in pairs)
    path = (request.scope.get("raw_path") or request.url.path.encode()).decode("latin-1")
    return f'<{path}?{query}>; rel="next"'


def router(prefix: str, tag: str) -> APIRouter:
    return APIRouter(prefix=prefix, tags=[tag], route_class=RestRoute)


def segment(name: str) -> str:
    """A name as one path segment, bytes that are not UTF-8 as ``%NN`` (they round-trip)."""
    return quote_name(name)


def stream_url(stream: str) -> str:
    return f"/v1/streams/{segment(stream)}"
