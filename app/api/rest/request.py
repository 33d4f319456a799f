"""The request a /v1 route hands to FastAPI: raw query bytes kept, the body read and parsed once.

Starlette's ``Request`` caches its query, body and JSON document in private attributes. Writing
them from outside works until Starlette renames one. Instead ``RestRoute`` hands FastAPI this
subclass, the way FastAPI's documentation shows ("Custom Request and APIRoute class"): it
overrides the public ``query_params``, ``stream``, ``body`` and ``json``, which FastAPI and
Starlette call to read a request.

- ``query_params`` keeps bytes that are not UTF-8 (``query_pairs``), as paths do (``RawPaths``).
  Starlette would turn them into U+FFFD, so ``%FF`` and ``%FE`` would name one stream.
- ``load_body`` reads the body through ``read_body``, so ``max_body_bytes`` holds (413) before
  FastAPI buffers it. It parses a JSON body with orjson at once, so every malformed one is a 422
  (``parse_json``). FastAPI then gets those bytes and that document from ``body`` and ``json``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from starlette.datastructures import Headers, QueryParams
from starlette.types import Message, Receive

from app.api.binary import loads, query_pairs
from app.api.deps import read_body

__all__ = ["DOCUMENT", "RestRequest", "UnsupportedMediaType", "is_json", "parse_json"]

_UNREAD = object()  # no document parsed here: Starlette's own ``json`` reads it
# The scope key holding the parsed JSON body, for the error handlers (app/api/errors.py),
# which get a plain ``Request`` of the same scope, not this one.
DOCUMENT = "xstreams.document"


class UnsupportedMediaType(Exception):
    """A JSON body sent as another media type, or as none (415): FastAPI would read it as
    JSON anyway (no type) or refuse it with a 422 that does not mention the type."""

    def __init__(self, received: str | None) -> None:
        super().__init__(received)
        self.received = received


def is_json(media: str) -> bool:
    """``application/json`` or ``application/*+json``, parameters and case aside."""
    base = media.split(";")[0].strip().lower()
    if base == "application/json":
        return True
    return base.startswith("application/") and base.endswith("+json")


class RestRequest(Request):
    """A request whose query keeps raw bytes and whose body is read once, within its limit."""

    _raw_query: QueryParams | None = None
    _loaded_body: bytes | None = None
    _loaded_document: Any = _UNREAD

    @property
    def query_params(self) -> QueryParams:
        if self._raw_query is None:
            query: bytes = self.scope["query_string"]
            if b"%" not in query:
                return super().query_params  # nothing escaped: Starlette's parse is the same
            self._raw_query = QueryParams(query_pairs(query))
        return self._raw_query

    async def load_body(self, json_only: bool = False) -> None:
        """Read the body (413 past ``max_body_bytes``) and parse it if JSON (422 if bad).
        ``json_only`` (a route whose body is a JSON document): a body of another media
        type, or of none, is a 415 naming both."""
        body = await read_body(self)
        if json_only and body:
            media = self.headers.get("content-type")
            if media is None or not is_json(media):
                raise UnsupportedMediaType(media)
        self._loaded_document = parse_json(self.headers, body)
        self._loaded_body = body
        if self._loaded_document is not _UNREAD:
            self.scope[DOCUMENT] = self._loaded_document

    def document(self) -> Any:
        """The JSON document ``load_body`` parsed, or None (no body, not JSON, not read)."""
        return None if self._loaded_document is _UNREAD else self._loaded_document

    def replayed(self) -> Receive:
        """A ``receive`` that gives the body read here again, then the client's messages:
        for handing the request on after ``load_body``."""
        body, receive = self._loaded_body, self.receive
        if body is None:
            return receive
        pending = [{"type": "http.request", "body": body, "more_body": False}]

        async def replay() -> Message:
            return pending.pop() if pending else await receive()

        return replay

    async def stream(self) -> AsyncGenerator[bytes, None]:
        if self._loaded_body is None:
            async for chunk in super().stream():
                yield chunk
            return
        yield self._loaded_body
        yield b""

    async def body(self) -> bytes:
        if self._loaded_body is None:
            return await super().body()
        return self._loaded_body

    async def json(self) -> Any:
        if self._loaded_document is _UNREAD:
            return await super().json()
        return self._loaded_document


def parse_json(headers: Headers, body: bytes) -> Any:
    """A JSON body's document, parsed before FastAPI does, so that every malformed one is a 422.

    FastAPI's own parse (the stdlib's) turns only a syntax error into a 422: a body that is
    not UTF-8, or nested past the stdlib's recursion limit, became a 400 "error parsing the
    body" (or a RecursionError). orjson refuses all of them alike (nesting past 1024, NaN),
    the strict fallback that reads ``\\udcNN`` escapes likewise. A body that is empty or not
    JSON gives ``_UNREAD``: FastAPI then decides what it is, as before.
    """
    media = headers.get("content-type", "application/json").split(";")[0].strip()
    if not body or not (media == "application/json" or media.endswith("+json")):
        return _UNREAD
    try:
        return loads(body)  # orjson, then the reader of \udcNN escapes (app/api/binary)
    except (ValueError, RecursionError) as e:
        raise RequestValidationError(
            [
                {
                    "type": "json_invalid",
                    "loc": ("body", getattr(e, "pos", 0)),
                    "msg": "JSON decode error",
                    "input": {},
                    "ctx": {"error": getattr(e, "msg", type(e).__name__)},
                }
            ]
        ) from None
