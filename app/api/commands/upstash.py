"""Reading Upstash REST requests: command arrays from JSON bodies and from URL paths.

JSON numbers count as their literal text (``1.50`` stays ``"1.50"``), as Redis would see
the argument a client typed, and booleans as theirs (``true`` is ``"true"``), as the Upstash
SDKs' users expect of ``xadd(key, "*", {done: true})``; null, objects and nested arrays are
refused.
"""

from __future__ import annotations

import json
import math
from itertools import chain
from typing import Any
from urllib.parse import parse_qsl, unquote

import orjson

from app.api.binary import from_json
from app.engine.errors import CommandError


def _literal(body: bytes) -> Any:
    """The stdlib parser, numbers as their text; ``"\\udcff"`` is the byte 0xFF
    (app/api/binary), a surrogate that is no byte a ValueError. Not JSON, and refused as
    orjson refuses them: NaN, Infinity, and a number too large for a double (``1e999``)."""
    return from_json(json.loads(body, parse_int=str, parse_float=_finite, parse_constant=_not_json))


def _finite(text: str) -> str:
    if math.isinf(float(text)):
        raise ValueError(f"number out of range: {text}")
    return text


def _not_json(text: str) -> str:
    raise ValueError(f"{text} is not JSON")


def _decode(body: bytes) -> Any:
    """The document, by orjson; by the stdlib parser (numbers as text) only when orjson
    refuses it: an integer beyond 64 bits, which Redis then refuses in its own words, or a
    ``\\udcNN`` escape, a byte that is not UTF-8. Bodies that are not UTF-8 JSON, or nested
    past either parser's limit, are malformed."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as e:
        try:
            return _literal(body)
        except (ValueError, RecursionError):
            raise CommandError.err("failed to parse request body as JSON") from e


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "object", list: "array", bool: "boolean"}.get(type(value), type(value).__name__)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_ONLY_TEXT = {str}


def _check_args(doc: Any, max_args: int) -> tuple[bool, bool]:
    """A command's shape (a non-empty array of strings, numbers and booleans, at most
    ``max_args``): whether it holds numbers, and booleans. Nothing is looked at below the
    array's own items."""
    if not isinstance(doc, list):
        raise CommandError.err("the request body must be a JSON array of command arguments")
    if not doc:
        raise CommandError.err("empty command")
    if len(doc) > max_args:
        raise CommandError.err(
            f"too many arguments: {len(doc)}, at most {max_args} per command (max_command_args)"
        )
    if set(map(type, doc)) == _ONLY_TEXT:
        return False, False  # the common case, checked in one pass in C
    numbers = booleans = False
    for a in doc:
        if isinstance(a, str):
            continue
        if isinstance(a, bool):
            booleans = True
        elif _is_number(a):
            numbers = True
        else:
            raise CommandError.err(
                "each command argument must be a JSON string, number or boolean, got " + _kind(a)
            )
    return numbers, booleans


def _texts(doc: list[Any]) -> list[str]:
    """Booleans as the text JSON spells them, everything else as it is (already text)."""
    return [("true" if a else "false") if isinstance(a, bool) else a for a in doc]


def command_args(body: bytes, max_args: int) -> list[str]:
    """One command from a JSON body, numbers as their literal text (``1.50`` stays
    ``"1.50"``), booleans as ``"true"`` / ``"false"``. The shape is checked on orjson's
    document before the stdlib parser reads the numbers' text, so that parser (which recurses)
    only ever sees a flat array."""
    doc = _decode(body)
    numbers, booleans = _check_args(doc, max_args)
    if numbers:
        doc = _literal(body)
    if booleans:
        doc = _texts(doc)
    result: list[str] = doc
    return result


def _all_text(doc: list[Any], max_args: int) -> bool:
    """The common pipeline, checked in C passes: non-empty arrays of at most ``max_args``
    strings each. Anything else is checked command by command, for its error."""
    if set(map(type, doc)) != _ONLY_LIST:
        return False
    sizes = set(map(len, doc))
    return (
        min(sizes) > 0
        and max(sizes) <= max_args
        and set(map(type, chain.from_iterable(doc))) == _ONLY_TEXT
    )


_ONLY_LIST = {list}


def command_list(body: bytes, max_commands: int, max_args: int) -> list[list[str]]:
    """A pipeline or transaction: a non-empty array of at most ``max_commands`` commands."""
    doc = _decode(body)
    if not isinstance(doc, list) or not doc:
        raise CommandError.err("the request body must be a JSON array of commands")
    if len(doc) > max_commands:
        raise CommandError.err(
            f"too many commands: {len(doc)}, at most {max_commands} per request "
            "(max_pipeline_commands); send them in several requests"
        )
    if _all_text(doc, max_args):
        return doc
    numbers = booleans = False
    for command in doc:
        has_numbers, has_booleans = _check_args(command, max_args)
        numbers, booleans = numbers or has_numbers, booleans or has_booleans
    if numbers:
        doc = _literal(body)
    if booleans:
        doc = [_texts(command) for command in doc]
    result: list[list[str]] = doc
    return result


def path_args(raw_path: bytes, query: bytes, body: bytes | None) -> list[str]:
    """``/cmd/arg1/arg2?k=v``: path segments percent-decoded, then the POST body, then the
    query pairs (except the credentials ``_token`` and ``access_token``)."""
    parts = raw_path.decode("latin-1").strip("/").split("/")
    # Bytes that are not UTF-8 are kept (surrogateescape): values are binary-safe.
    args = [unquote(p, errors="surrogateescape") for p in parts]
    if body:
        args.append(body.decode("utf-8", "surrogateescape"))
    query_text = query.decode("latin-1")
    for k, v in parse_qsl(query_text, keep_blank_values=True, errors="surrogateescape"):
        if k in ("_token", "access_token"):  # credentials, not arguments
            continue
        args.append(k)
        if v:
            args.append(v)
    if not args or not args[0]:
        raise CommandError.err("empty command")
    return args
