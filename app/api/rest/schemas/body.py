"""The base of every request body: strict types, unknown members refused, bytes Redis can store.

JSON can spell a lone UTF-16 surrogate. ``"\\udc80"`` .. ``"\\udcff"`` are the one
representation of bytes that are not UTF-8 (app/api/binary): they become those bytes, so a
client writes back what it read. Any other (``"\\ud800"``) stands for no byte: refused here
(422) rather than deep in the engine.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)

from app.api.binary import from_json


def _is_text(value: Any) -> bool:
    """Whether every string is valid Unicode (the common case: nothing to rewrite).

    orjson refuses exactly the strings that are not (lone surrogates), walking the whole
    document in C: a batch of entries is checked without a Python call per string. What it
    refuses for another reason (a number past 64 bits) is walked here."""
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        return _walk(value)
    return True


def _walk(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_walk(k) and _walk(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_walk(v) for v in value)
    return True


_SURROGATE = re.compile("[\ud800-\udfff]")


def _keep_bytes(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """pydantic refuses a lone surrogate in a string with constraints (``min_length``): they
    are checked on a stand-in of the same length, and the string is kept as it is."""
    if isinstance(value, str) and not _is_text(value):
        handler(_SURROGATE.sub("\ufffd", value))
        return value
    return handler(value)


KEEP_BYTES = WrapValidator(_keep_bytes)
"""Put on a constrained ``str`` field of a body: ``Annotated[str, Field(...), KEEP_BYTES]``."""


class Body(BaseModel):
    """Strict: JSON `false` is no integer and `1` no string, as the document says."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _bytes_only(cls, data: Any) -> Any:
        if _is_text(data):
            return data
        # ValueError (a lone surrogate that is no byte): pydantic reports it, 422.
        return from_json(data)


class Part(BaseModel):
    """A part of a ``Body`` (an entry of a batch): as strict, and its strings already checked
    and decoded by the document's own check, so not walked again per part."""

    model_config = ConfigDict(extra="forbid", strict=True)
