"""Messages in and out: a POST body as the entries it appends, entries as a response body.

A message is an entry with two fields, ``content-type`` (the stream's) and ``body`` (its
bytes, kept as ``str`` with ``surrogateescape`` like every value, app/api/binary.py). A JSON
stream (``application/json``) keeps message boundaries: a body that is an array appends each
element as a message (one level flattened), and a read answers the messages as one array.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from app.engine.commands.streams import XAddArgs
from app.engine.stream import Entry

from .headers import BadRequest

__all__ = ["concat", "decode", "messages", "payload"]

CONTENT_TYPE = "content-type"
BODY = "body"


def decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def payload(entry: Entry) -> bytes:
    """The entry's ``body`` field as bytes (empty when it has none)."""
    flat = entry.fields
    for i in range(0, len(flat) - 1, 2):
        if flat[i] == BODY:
            return flat[i + 1].encode("utf-8", "surrogateescape")
    return b""


def messages(body: bytes, json_mode: bool, *, allow_empty_array: bool) -> list[bytes]:
    """The messages a body appends: itself, or in JSON mode each element of an array."""
    if not json_mode:
        return [body]
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise BadRequest("the body is not valid JSON") from None
    if isinstance(doc, list):
        if not doc and not allow_empty_array:
            raise BadRequest("an empty JSON array appends nothing")
        return [orjson.dumps(item) for item in doc]
    return [orjson.dumps(doc)]


def appends(key: str, content_type: str, bodies: Sequence[bytes]) -> list[XAddArgs]:
    return [XAddArgs(key, (CONTENT_TYPE, content_type, BODY, decode(b))) for b in bodies]


def concat(entries: Sequence[Entry], json_mode: bool) -> bytes:
    """A read's body: the messages' bytes end to end, or in JSON mode one array."""
    if json_mode:  # an entry another surface wrote without a body reads as null
        return b"[" + b",".join(payload(e) or b"null" for e in entries) + b"]"
    return b"".join(payload(e) for e in entries)
