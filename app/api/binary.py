"""Bytes that are not UTF-8, on every surface: one representation, lossless both ways.

Keys, names, field names and values are bytes. Inside, they are ``str`` with the bytes that are
not part of valid UTF-8 kept as lone surrogates (``surrogateescape``, PEP 383: byte 0xNN
becomes U+DCNN), which is lossless and unambiguous, since valid UTF-8 never decodes to a lone
surrogate. Outside:

- in JSON (REST bodies, SSE data, the command endpoint's replies without base64) such a byte is
  the escape ``\\udcNN`` inside a JSON string (``encode_json``, the one codec, shared with the
  journal); a client writes back what it read, and ``from_json`` maps U+DC80..U+DCFF back to
  the byte;
- in URLs it is ``%NN``: paths and query strings are percent-decoded with the same rule as the
  command endpoint's path style (``RawPaths``, ``query_pairs``), and every URL the server
  builds quotes names back the same way (``quote_name``).

A string is canonical when no run of surrogates spells valid UTF-8: ``"\\udcc3\\udca9"`` is the
bytes of ``"é"`` and must be the same key, so what comes in is normalized (``canonical``).
Other lone surrogates (``\\ud800``, ``\\udc41``) stand for no byte: refused (ValueError).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, quote, unquote

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from app.engine.json_codec import decode_json, encode_json

__all__ = [
    "RawPaths",
    "canonical",
    "encode_json",
    "from_json",
    "loads",
    "query_pairs",
    "quote_name",
    "unquote_name",
]


def canonical(text: str) -> str:
    """The one spelling of ``text``'s bytes; ValueError for a surrogate that is no byte."""
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raise ValueError(
                "a string may hold lone surrogates only in U+DC80..U+DCFF (one byte each)"
            ) from None
    return text


def from_json(value: Any) -> Any:
    """A decoded JSON document with every string canonical (object keys too)."""
    if isinstance(value, str):
        return canonical(value)
    if isinstance(value, list):
        return [from_json(v) for v in value]
    if isinstance(value, dict):
        return {canonical(k): from_json(v) for k, v in value.items()}
    return value


def loads(body: bytes) -> Any:
    """A request body's JSON: orjson, and for a body it refuses the shared fallback that also
    reads ``\\udcNN`` escapes (``decode_json``), then made canonical. ValueError if invalid."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return from_json(decode_json(body))


def quote_name(name: str) -> str:
    """A name as one URL path segment or query value: every byte but unreserved ones as %NN."""
    return quote(name, safe="", errors="surrogateescape")


def unquote_name(text: str) -> str:
    """The inverse of ``quote_name`` (and of any client's percent-encoding)."""
    return unquote(text, errors="surrogateescape")


def query_pairs(query: bytes) -> list[tuple[str, str]]:
    """A query string's pairs, percent-decoded as paths are (Starlette's own parsing replaces
    bytes that are not UTF-8 with U+FFFD, so ``%FF`` and ``%FE`` would name one stream)."""
    return parse_qsl(query.decode("latin-1"), keep_blank_values=True, errors="surrogateescape")


REST_PREFIX = b"/v1"


class RawPaths:
    """Decode ``/v1`` paths from the raw bytes, keeping bytes that are not UTF-8.

    The server decodes ``scope["path"]`` replacing them with U+FFFD, so ``/v1/streams/%FF``
    and ``/v1/streams/%FE`` would both be one stream ``"\\ufffd"``. The app gets a copy of the
    scope: the server's own (used for its access log, which cannot quote a lone surrogate)
    stays as it was. ``%2F`` still decodes to ``/``, so a name holding ``/`` stays
    unaddressable in a path, as before.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw: bytes | None = scope.get("raw_path")
            root = scope.get("root_path", "")
            if raw is not None and b"%" in raw and raw[len(root) :].startswith(REST_PREFIX):
                inner = {**scope, "path": unquote_name(raw.decode("latin-1"))}
                try:
                    await self.app(inner, receive, send)
                finally:
                    # The route matched, for the layers outside (metrics, the access line).
                    for key in ("route", "endpoint"):
                        if key in inner:
                            scope[key] = inner[key]
                return
        await self.app(scope, receive, send)
