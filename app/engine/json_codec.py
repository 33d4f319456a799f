"""The one JSON codec of every surface and of the journal: lossless for bytes that are not UTF-8.

Stream fields are bytes; a surface's JSON carries them as strings. Bytes that are not UTF-8
travel as lone surrogates (PEP 383) and are written as ``\\udcNN`` escapes, so the text is
still strict UTF-8 and reads back byte for byte. orjson does the common case; the standard
library only the rare one.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

from app.engine.effects import Unstorable
from app.engine.int64 import INT64_MIN, UINT64_MAX


def encode_json(value: Any) -> bytes:
    """orjson, or for strings holding bytes that are not UTF-8 (kept as lone surrogates
    U+DC80..U+DCFF, PEP 383) the standard library's JSON with each such byte written as the
    escape ``\\udcNN``: the one JSON form of every surface, lossless and still strict UTF-8.
    ``decode_json`` reads both.

    orjson refuses lone surrogates, so the slower path runs only for such data. Raises
    ``Unstorable`` for what would not read back the same: an integer outside the 64-bit
    ranges (orjson refuses it; ``decode_json`` would read it as a float), or a high surrogate
    followed by a low one (JSON reads their escapes back as one character).
    """
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        _check_slow_path(value)
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        # A lone surrogate can only stand inside a JSON string here: its escape means the same.
        return _SURROGATE.sub(_escape, text).encode()


_SURROGATE = re.compile("[\ud800-\udfff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _check_slow_path(value: Any) -> None:
    """What orjson refused besides lone surrogates, which the standard library would write
    in a form that does not read back the same."""
    if isinstance(value, str):
        if _PAIR.search(value):
            raise Unstorable("a string holds a surrogate pair, which JSON reads as one character")
    elif isinstance(value, int) and not isinstance(value, bool):
        if not INT64_MIN <= value <= UINT64_MAX:
            raise Unstorable(f"the integer {value} is outside the 64-bit ranges")
    elif isinstance(value, list | tuple):
        for item in value:
            _check_slow_path(item)
    elif isinstance(value, dict):
        for k, item in value.items():
            _check_slow_path(k)
            _check_slow_path(item)


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match[0]):04x}"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"number out of range: {text}")
    return number


def decode_json(data: bytes) -> Any:
    """orjson, or the standard library's JSON for text orjson refuses only for its ``\\udcNN``
    escapes (it takes nothing else orjson refuses: no NaN, no infinite number). Raises
    ValueError for anything that is no such JSON (damaged data, text that is not UTF-8)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data, parse_constant=_no_constant, parse_float=_finite)
