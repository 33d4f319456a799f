"""What a /v1 error is about, in words a person acts on: the one place that names it.

A Redis error text (``ERR no such key``) names neither the stream nor the parameter. The
route does: its path parameters (``stream``, ``group``, ``consumer``, ``id``, ``name``) say
what the request addresses, and the error's class says what went wrong with it. ``about``
turns the two into the problem's ``detail`` sentence and the members naming its subjects;
the Redis text itself stays in ``error`` and ``code`` (app/api/errors.py), byte for byte.
``field_errors`` does the same for a request FastAPI found malformed: one item per field,
where it is (``in``) and what it is called (``parameter``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from app.engine.errors import (
    BusyGroup,
    CommandError,
    NoGroup,
    NoSuchConsumer,
    NoSuchEntry,
    NoSuchKey,
    NotFound,
)

__all__ = ["about", "field_errors", "subjects", "validation_detail"]

INVALID_ID = "ERR Invalid stream ID specified as stream command argument"
# The path parameters that name a subject, and the member each becomes.
_SUBJECTS = (("stream", "stream"), ("group", "group"), ("consumer", "consumer"))
_WHERE = {"query": "query", "path": "path", "body": "body", "header": "header"}
_SHOWN_INPUT = 60  # characters of a refused value quoted in a detail


def _q(value: object) -> str:
    text = str(value)
    if len(text) > _SHOWN_INPUT:
        text = text[:_SHOWN_INPUT] + "..."
    return "'" + text.replace("'", "\\'") + "'"


def subjects(path_params: Mapping[str, Any]) -> dict[str, str]:
    """The members naming what a route's path addresses: ``stream``, ``group``, ``consumer``."""
    return {member: path_params[p] for p, member in _SUBJECTS if path_params.get(p) is not None}


def _of(s: Mapping[str, str]) -> str:
    """`` in group 'g' of stream 's'``, as far as the path names them."""
    parts = []
    if "group" in s:
        parts.append(f"group {_q(s['group'])}")
    if "stream" in s:
        parts.append(f"stream {_q(s['stream'])}")
    return (" in " + " of ".join(parts)) if parts else ""


def _parameter(message: str, document: Any, query: Mapping[str, Any]) -> str | None:
    """The parameter an engine error's message starts with, when the request sent one so
    called (``dead_letter_stream must be ...``): a body member or a query parameter."""
    first = message.split(" ", 1)[0].strip("'\":,")
    if isinstance(document, dict) and first in document:
        return first
    return first if first in query else None


def about(
    exc: CommandError,
    path_params: Mapping[str, Any],
    document: Any = None,
    query: Mapping[str, Any] | None = None,
) -> tuple[str, dict[str, Any]]:
    """The ``detail`` sentence for an engine error met serving a /v1 route, and the members
    naming what it is about (``stream``, ``group``, ``consumer``, ``entry``, ``parameter``)."""
    s = subjects(path_params)
    members: dict[str, Any] = dict(s)
    stream, group = s.get("stream"), s.get("group")
    entry = path_params.get("id")
    message = exc.text.split(" ", 1)[1] if " " in exc.text else exc.text
    if isinstance(exc, NoSuchKey) and stream is not None:
        return f"stream {_q(stream)} does not exist", members
    if isinstance(exc, NoGroup) and stream is not None and group is not None:
        return f"group {_q(group)} does not exist on stream {_q(stream)}", members
    if isinstance(exc, NoSuchConsumer) and "consumer" in s:
        return f"consumer {_q(s['consumer'])} does not exist{_of(s)}", members
    if isinstance(exc, NoSuchEntry) and entry is not None:
        members["entry"] = entry
        return f"entry {_q(entry)} does not exist{_of(s)}", members
    if exc.text == INVALID_ID and entry is not None:
        members["entry"] = entry
        return f"entry ID {_q(entry)} is not valid: expected <ms>-<seq>", members
    if isinstance(exc, BusyGroup) and isinstance(document, dict) and "name" in document:
        members["group"] = document["name"]
        return f"group {_q(document['name'])} already exists{_of(s)}", members
    parameter = _parameter(message, document, query or {})
    if parameter is not None:
        members["parameter"] = parameter
    if isinstance(exc, NotFound) or not s:
        return message, members
    named = ", ".join(f"{k} {_q(v)}" for k, v in s.items())
    return f"{message} ({named})", members


def _union_tag(part: object) -> bool:
    """A step pydantic adds to a location inside a union: the member's type (``FieldMap``,
    ``list[...]``, ``function-after[...]``), not a name the client sent."""
    if not isinstance(part, str):
        return False
    return "[" in part or part in _model_names()


@functools.cache
def _model_names() -> frozenset[str]:
    from pydantic import BaseModel

    import app.api.rest.schemas.body  # noqa: F401  (the bodies' models, defined)

    seen: set[str] = set()
    todo: list[type] = [BaseModel]
    while todo:
        cls = todo.pop()
        subs: list[type] = cls.__subclasses__()
        for sub in subs:
            if sub.__name__ not in seen:
                seen.add(sub.__name__)
                todo.append(sub)
    return frozenset(seen)


def _dotted(loc: Sequence[Any]) -> str:
    out = ""
    for part in loc:
        if _union_tag(part):
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def field_errors(errors: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One item per field FastAPI (pydantic) refused: ``parameter`` (``fields.qty``,
    ``entries[0].id``, ``count``), ``in`` (body, query, path, header) and ``message``; the
    older ``loc`` and ``msg`` are kept for clients that read them."""
    items = []
    for e in errors:
        loc = [x if isinstance(x, int) else str(x) for x in e.get("loc", ())]
        where = _WHERE.get(str(loc[0]), "body") if loc else "body"
        rest = loc[1:] if loc and loc[0] in _WHERE else loc
        if where == "body" and e.get("type") == "json_invalid":
            rest = []  # its loc ends in a character offset, not a member
        parameter = _dotted(rest) or where
        message = _sentence(e)
        items.append(
            {"parameter": parameter, "in": where, "message": message, "loc": loc, "msg": e["msg"]}
        )
    return items


def _sentence(e: Mapping[str, Any]) -> str:
    """pydantic's message as the end of ``parameter 'x' ...``."""
    msg = str(e.get("msg", "is not valid"))
    kind = e.get("type", "")
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "is not a known member"
    if kind == "json_invalid":
        error = (e.get("ctx") or {}).get("error")
        return "is not valid JSON" + (f": {error}" if error else "")
    if msg.startswith("Input should be "):
        msg = "must be " + msg[len("Input should be ") :]
    elif msg.startswith("Value error, "):
        msg = "is not valid: " + msg[len("Value error, ") :]
    else:
        msg = "is not valid: " + msg[:1].lower() + msg[1:]
    value = e.get("input")
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        msg += f", got {_q(value) if isinstance(value, str) else value}"
    return msg


def validation_detail(items: Sequence[Mapping[str, Any]]) -> str:
    """The ``detail`` of a malformed request: its first field's sentence, and how many more."""
    if not items:
        return "the request is not valid"
    first = items[0]
    text = f"parameter {_q(first['parameter'])} {first['message']}"
    if first["parameter"] == "body" and first["in"] == "body":
        text = f"the request body {first['message']}"
    more = len(items) - 1
    return text + (f" (and {more} more: see errors)" if more else "")
