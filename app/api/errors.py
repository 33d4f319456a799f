"""The one table from errors to HTTP answers, and the JSON responses used everywhere.

Two surfaces, two error shapes:

- ``/v1/...`` (the REST resources) answers RFC 9457 problem details
  (``application/problem+json``) carrying the Redis error text and code as extension members
  (``error``, ``code``: byte for byte, for clients that match on them), and a ``detail`` for
  people naming what it is about, with members of their own (``stream``, ``group``,
  ``consumer``, ``entry``, ``parameter``): app/api/problem_detail.py derives them, in one
  place, from the route's path parameters and the error's class;
- the command endpoint answers ``{"error": text}`` for everything, including unknown paths,
  wrong methods, oversized bodies and unexpected failures: never HTML, never FastAPI's
  ``{"detail": ...}``, never an empty body.

Status for an engine error, by its class alone (``status_of``, the one table): NOPERM
(credentials that do not reach) is 403; ``NotFound`` (a missing stream, group, consumer or
entry) is 404; ``Conflict`` (BUSYGROUP, an ID not greater than the stream's top) is 409;
``OverBudget`` (the credential's bytes appended or entries read spent: app/api/meter.py)
is 429, its ``Retry-After`` added by the rate gate; ``QuotaFull`` (an append past the storage
quota of the credential's prefix: app/api/quotas.py) is 507; ``BackendUnavailable`` (Redis
unreachable or refusing for a passing state of its own: CLUSTERDOWN, LOADING, READONLY...,
too few replicas, no connection for a blocking read) is 503 with ``Retry-After``; every
other Redis error is a client mistake, 400, ``NotAvailable``
included (an option newer than the Redis server behind the backend, which the backend cannot
do exactly there: that server answers an error reply too, and the detail names the version).
The engine raises each kind with its class, and the Redis backend's replies get the same classes
(``app.engine.errors.classify``, ``app.backends.errors.fault_of``), so both backends answer
alike. The command endpoint keeps the Upstash protocol's 400 for every other error reply
(``command_status``). A malformed JSON body is 422, a malformed query or path 400 (both
with an ``errors`` item per field: ``parameter``, ``in``, ``message``), a body over
``max_body_bytes`` 413, a /v1 body sent as another media type than JSON (or as none) 415.
A webhook whose destination the outbound rules refuse (``Refused``, app/delivery/outbound.py)
is 422, the rule and its setting named. Nothing a client sends can produce a 500.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.types import Scope, Send

from app.access import NoPerm
from app.api.binary import encode_json
from app.api.deps import BodyTooLarge
from app.api.holds import TooManyHeld
from app.api.meter import OverBudget
from app.api.problem_detail import about, field_errors, subjects, validation_detail
from app.api.quotas import QuotaFull
from app.api.rest.request import DOCUMENT, UnsupportedMediaType
from app.api.services import services_of
from app.backends.errors import BackendUnavailable, StorageUnavailable
from app.delivery.outbound import Refused
from app.engine.commands.bulk import BatchItemError
from app.engine.errors import CommandError, Conflict, NoSuchKey
from app.engine.errors import NotFound as NotFound  # re-exported: SSE raises it

log = logging.getLogger("xstreams")

REST_PREFIX = "/v1"
PROBLEM_JSON = "application/problem+json"

# How long a client is asked to wait before it tries a 503 again (``Retry-After``): a
# failover, a load or a slot move takes seconds; one second apart keeps retries cheap.
RETRY_AFTER_S = 1

# The one table, most specific first: an error's status is that of the first class it is.
# BackendUnavailable: the backend's trouble, not the request's (with --wait-replicas the
# write itself may have been applied: not to be retried blindly).
_STATUS: tuple[tuple[type[CommandError], int], ...] = (
    (NoPerm, 403),
    (OverBudget, 429),
    (QuotaFull, 507),
    (NotFound, 404),
    (Conflict, 409),
    (BackendUnavailable, 503),
)
# What the command endpoint answers other than Upstash's 400 for an error reply.
_COMMAND_STATUSES = frozenset({403, 429, 503, 507})


def no_such_stream() -> NoSuchKey:
    """A stream the path names is not there (404, "ERR no such key")."""
    return NoSuchKey()


def status_of(exc: CommandError) -> int:
    """The HTTP status for an engine error, by its class."""
    for cls, status in _STATUS:
        if isinstance(exc, cls):
            return status
    return 400


def command_status(exc: CommandError) -> int:
    """The command endpoint's status for an error: Upstash answers every error reply 400,
    and so does it, except credentials that do not reach (403), a spent budget (429) and
    the backend's trouble (503), which a client must tell from its own mistakes."""
    status = status_of(exc)
    return status if status in _COMMAND_STATUSES else 400


def retry_headers(status: int) -> dict[str, str] | None:
    """``Retry-After`` for a 503: the fault passes, the request may be sent again."""
    return {"Retry-After": str(RETRY_AFTER_S)} if status == 503 else None


def json_response(
    content: Any, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """JSON in the one representation of bytes that are not UTF-8 (``\\udcNN``, app/api/binary)."""
    return Response(encode_json(content), status, headers=headers, media_type="application/json")


def is_rest(path: str) -> bool:
    return path == REST_PREFIX or path.startswith(REST_PREFIX + "/")


def error_body(path: str, status: int, text: str, **extra: Any) -> tuple[str, bytes]:
    """The media type and body of an error in the shape of the surface ``path`` addresses:
    an RFC 9457 problem under /v1, ``{"error": text}`` elsewhere. Both shapes are made here
    only, for handlers and for the ASGI layers that answer before any route (the access
    gate's 401, the loading gate's 503, the connection protocol's 408)."""
    if is_rest(path):
        return PROBLEM_JSON, _problem_json(path, status, text, extra)
    return "application/json", encode_json({"error": text})


async def send_error(
    scope: Scope, send: Send, status: int, text: str, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """An error answered by an ASGI layer before any route (the access gate's 401, the rate
    and fairness gates' 429, the loading gate's 503), in the surface's shape, with
    ``headers`` after the content type and length."""
    media, body = error_body(scope["path"], status, text)
    start = [(b"content-type", media.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": [*start, *headers]})
    await send({"type": "http.response.body", "body": body})


def _problem_json(path: str, status: int, text: str, extra: dict[str, Any]) -> bytes:
    """``detail`` is for people (``extra["detail"]`` when given, else the text); ``error``
    and ``code`` keep the Redis text byte for byte, for clients that match on it."""
    detail = extra.pop("detail", None) or text
    return encode_json(
        {
            "type": "about:blank",
            "title": HTTPStatus(status).phrase,
            "status": status,
            "detail": detail,
            "instance": path,
            "code": text.split(" ", 1)[0],
            "error": text,
            **{k: v for k, v in extra.items() if v is not None},
        }
    )


def problem(
    request: Request,
    status: int,
    text: str,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> Response:
    """An RFC 9457 problem; ``text`` is Redis-style (``CODE message``)."""
    body = _problem_json(request.url.path, status, text, extra)
    return Response(body, status, headers=headers, media_type=PROBLEM_JSON)


def _is_rest(request: Request) -> bool:
    return is_rest(request.url.path)


def answer(
    request: Request, status: int, text: str, headers: dict[str, str] | None = None, **extra: Any
) -> Response:
    """The error in the shape of the surface the request addressed."""
    if _is_rest(request):
        return problem(request, status, text, headers, **extra)
    return json_response({"error": text}, status, headers)


def _document(request: Request) -> Any:
    """The JSON body a /v1 route parsed (app/api/rest/request), or None."""
    return request.scope.get(DOCUMENT)


def install(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        text = {404: "ERR not found", 405: "ERR method not allowed"}.get(
            exc.status_code, f"ERR {exc.detail}"
        )
        return answer(request, exc.status_code, text, getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        if not _is_rest(request):
            return json_response({"error": "ERR invalid request"}, 400)
        errors = field_errors(exc.errors())
        in_body = any(e["in"] == "body" for e in errors)
        first = errors[0] if errors else {"loc": [], "msg": "invalid"}
        where = ".".join(str(x) for x in first["loc"])
        text = f"ERR invalid request: {where}: {first['msg']}"
        status = 422 if in_body else 400
        detail = validation_detail(errors)
        parameter = errors[0]["parameter"] if errors else None
        return problem(request, status, text, detail=detail, parameter=parameter, errors=errors)

    @app.exception_handler(UnsupportedMediaType)
    async def unsupported_media_type(request: Request, exc: UnsupportedMediaType) -> Response:
        got = exc.received or "none"
        text = f"ERR unsupported media type: expected application/json, got {got}"
        detail = (
            "the request body must be JSON: send Content-Type: application/json (or"
            f" application/*+json); got {'no Content-Type' if exc.received is None else repr(got)}"
        )
        return problem(
            request, 415, text, {"Accept-Post": "application/json"}, detail=detail,
            expected="application/json", received=exc.received,
        )  # fmt: skip

    @app.exception_handler(BodyTooLarge)
    async def too_large(request: Request, exc: BodyTooLarge) -> Response:
        limit = services_of(request).settings.max_body_bytes
        return answer(request, 413, f"ERR request body larger than {limit} bytes")

    @app.exception_handler(CommandError)
    async def command_error(request: Request, exc: CommandError) -> Response:
        services_of(request).metrics.error(exc.text)
        text = _shown(request, exc.text)
        if not _is_rest(request):
            status = command_status(exc)
            return json_response({"error": text}, status, retry_headers(status))
        index = exc.index if isinstance(exc, BatchItemError) else None
        status = status_of(exc)
        detail, members = about(exc, _asked(request), _document(request), request.query_params)
        return problem(
            request, status, text, retry_headers(status), detail=detail, index=index, **members
        )

    @app.exception_handler(Refused)
    async def destination_refused(request: Request, exc: Refused) -> Response:
        text = f"ERR webhook destination refused: {exc}"
        services_of(request).metrics.error(text)
        return answer(request, 422, text, None, parameter="url", **subjects(_asked(request)))

    @app.exception_handler(TooManyHeld)
    async def too_many_held(request: Request, exc: TooManyHeld) -> Response:
        services_of(request).metrics.error(exc.text)
        return answer(request, 429, exc.text, {"Retry-After": "1"})

    @app.exception_handler(StorageUnavailable)
    async def storage_unavailable(request: Request, exc: StorageUnavailable) -> Response:
        services_of(request).metrics.error(exc.text)
        return answer(request, 503, exc.text, retry_headers(503))

    @app.exception_handler(ClientDisconnect)
    async def client_gone(request: Request, exc: ClientDisconnect) -> Response:
        # The client left (or its body timed out) before its body was read: nobody is there
        # to answer, and nothing failed on our side, so nothing is logged.
        return answer(request, 400, "ERR client disconnected before sending its body")

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error serving %s %s", request.method, request.url.path)
        return answer(request, 500, "ERR internal error")


def _asked(request: Request) -> Mapping[str, Any]:
    """The path's names as the client sent them: before a credential's prefix was put in
    front of the stream (app/api/rest/common.py ``inward_path``)."""
    asked: Mapping[str, Any] = (
        request.scope.get("xstreams.asked_path_params") or request.path_params
    )
    return asked


def _shown(request: Request, text: str) -> str:
    """An error text quoting a key, with the key as the caller names it (its prefix off)."""
    # (Not ``access_gate.tenant_of``: the gate imports this module for its 401's shape.)
    principal = request.scope.get("state", {}).get("principal")
    return text if principal is None else str(principal.tenant.error(text))
