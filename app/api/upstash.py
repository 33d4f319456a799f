"""Reading Upstash REST requests: command arrays from JSON bodies and from URL paths.

JSON numbers count as their literal text (``1.50`` stays ``"1.50"``), as Redis would see
the argument a client typed; anything but strings and numbers is refused.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl, unquote

from app.api.binary import from_json, loads
from app.engine.errors import CommandError


def _literal(body: bytes) -> Any:
    return from_json(json.loads(body, parse_int=str, parse_float=str, parse_constant=str))


def parse_body(body: bytes) -> Any:
    """The decoded JSON document, numbers kept as their literal text; ``"\\udcff"`` is the
    byte 0xFF (app/api/binary)."""
    try:
        doc = loads(body)
    except ValueError as e:
        raise CommandError.err("failed to parse request body as JSON") from e
    if _has_numbers(doc):
        doc = _literal(body)
    return doc


def _has_numbers(doc: Any) -> bool:
    if isinstance(doc, list):
        return any(_has_numbers(x) for x in doc)
    return isinstance(doc, int | float) and not isinstance(doc, bool)


def command_args(doc: Any) -> list[str]:
    """One command: a non-empty array of strings (numbers already turned into text)."""
    if not isinstance(doc, list):
        raise CommandError.err("the request body must be a JSON array of command arguments")
    if not doc:
        raise CommandError.err("empty command")
    for a in doc:
        if not isinstance(a, str):
            raise CommandError.err(
                "each command argument must be a JSON string or number, got "
                + (
                    "null"
                    if a is None
                    else type(a)
                    .__name__.replace("dict", "object")
                    .replace("list", "array")
                    .replace("bool", "boolean")
                )
            )
    return doc


def command_list(doc: Any) -> list[list[str]]:
    """A pipeline or transaction: a non-empty array of commands."""
    if not isinstance(doc, list) or not doc:
        raise CommandError.err("the request body must be a JSON array of commands")
    return [command_args(c) for c in doc]


def path_args(raw_path: bytes, query: bytes, body: bytes | None) -> list[str]:
    """``/cmd/arg1/arg2?k=v``: path segments percent-decoded, then the POST body, then the
    query pairs (except ``_token``)."""
    parts = raw_path.decode("latin-1").strip("/").split("/")
    # Bytes that are not UTF-8 are kept (surrogateescape): values are binary-safe.
    args = [unquote(p, errors="surrogateescape") for p in parts]
    if body:
        args.append(body.decode("utf-8", "surrogateescape"))
    query_text = query.decode("latin-1")
    for k, v in parse_qsl(query_text, keep_blank_values=True, errors="surrogateescape"):
        if k == "_token":
            continue
        args.append(k)
        if v:
            args.append(v)
    if not args or not args[0]:
        raise CommandError.err("empty command")
    return args
