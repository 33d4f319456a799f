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
  command endpoint's path style (``query_pairs``; /v1 paths: app/api/raw_paths.py), and every
  URL the server builds quotes names back the same way (``quote_name``, ``/`` as ``%2F``).

A string is canonical when no run of surrogates spells valid UTF-8: ``"\\udcc3\\udca9"`` is the
bytes of ``"é"`` and must be the same key, so what comes in is normalized (``canonical``).
Other lone surrogates (``\\ud800``, ``\\udc41``) stand for no byte: refused (ValueError).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, quote, unquote

import orjson

from app.engine.json_codec import decode_json, encode_json

__all__ = [
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
