"""Argument helpers shared by the command parsers (Redis's getLongLongFromObjectOrReply...)."""

from __future__ import annotations

from app.engine.errors import NOT_AN_INTEGER, WrongArgument
from app.engine.ids import INT64_MAX, parse_int


def int_arg(text: str, message: str | None = None) -> int:
    """A strict signed 64-bit integer, or Redis's error (``message`` replaces the default)."""
    v = parse_int(text)
    if v is None:
        raise WrongArgument("ERR " + message) if message else WrongArgument(NOT_AN_INTEGER)
    return v


def timeout_arg(text: str, now_ms: int) -> int:
    """BLOCK milliseconds (``getTimeoutFromObjectOrReply``); 0 means forever."""
    return block_ms_arg(int_arg(text, "timeout is not an integer or out of range"), now_ms)


def block_ms_arg(block_ms: int, now_ms: int) -> int:
    """BLOCK milliseconds given as a number (a typed request): Redis's range checks."""
    if block_ms < 0:
        raise WrongArgument.err("timeout is negative")
    if block_ms > 0 and block_ms > INT64_MAX - now_ms:
        raise WrongArgument.err("timeout is out of range")
    return block_ms


def eq(text: str, word: str) -> bool:
    """Case-insensitive option match (``strcasecmp``)."""
    return text.lower() == word
