"""The one table from errors to HTTP answers, and the JSON response used everywhere.

The command endpoint answers ``{"error": text}`` for everything, including unknown paths,
wrong methods, oversized bodies and unexpected failures: never HTML, never FastAPI's
``{"detail": ...}``, never an empty body.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.api.deps import BodyTooLarge
from app.engine.errors import CommandError

log = logging.getLogger("xstreams")


def json_response(
    content: Any, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    return Response(orjson.dumps(content), status, headers=headers, media_type="application/json")


def install(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        text = {404: "ERR not found", 405: "ERR method not allowed"}.get(
            exc.status_code, f"ERR {exc.detail}"
        )
        return json_response({"error": text}, exc.status_code, getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        return json_response({"error": "ERR invalid request"}, 400)

    @app.exception_handler(BodyTooLarge)
    async def too_large(request: Request, exc: BodyTooLarge) -> Response:
        limit = request.app.state.settings.max_body_bytes
        return json_response({"error": f"ERR request body larger than {limit} bytes"}, 413)

    @app.exception_handler(CommandError)
    async def command_error(request: Request, exc: CommandError) -> Response:
        return json_response({"error": exc.text}, 400)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error serving %s %s", request.method, request.url.path)
        return json_response({"error": "ERR internal error"}, 500)
