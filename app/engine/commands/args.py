"""Argument helpers shared by the command parsers (Redis's getLongLongFromObjectOrReply...)."""

from __future__ import annotations

from app.engine.errors import NOT_AN_INTEGER, CommandError
from app.engine.ids import INT64_MAX, parse_int


def int_arg(text: str, message: str | None = None) -> int:
    """A strict signed 64-bit integer, or Redis's error (``message`` replaces the default)."""
    v = parse_int(text)
    if v is None:
        raise CommandError("ERR " + message) if message else CommandError(NOT_AN_INTEGER)
    return v


def timeout_arg(text: str, now_ms: int) -> int:
    """BLOCK milliseconds (``getTimeoutFromObjectOrReply``); 0 means forever."""
    v = int_arg(text, "timeout is not an integer or out of range")
    if v < 0:
        raise CommandError.err("timeout is negative")
    if v > 0 and v > INT64_MAX - now_ms:
        raise CommandError.err("timeout is out of range")
    return v


def eq(text: str, word: str) -> bool:
    """Case-insensitive option match (``strcasecmp``)."""
    return text.lower() == word
