"""Stream IDs: the immutable ``StreamID`` pair and Redis's exact parsing rules.

Strings such as ``"1-2"``, ``"-"``, ``"+"``, ``"5"`` or ``"(5"`` exist only here and in
serializers. The parser reproduces ``streamGenericParseIDOrReply`` and ``string2ull``
byte for byte, including their quirks (``strtoull`` accepts leading blanks, a ``+`` sign and
leading zeros; the text stops at a NUL; more than 127 bytes is invalid). The grammars are
compiled regular expressions and ``int()``: parsing runs for every ID of every command, so
no character is looked at by a Python loop.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from app.engine.errors import WrongArgument, invalid_id

UINT64_MAX = (1 << 64) - 1
INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)


class StreamID(NamedTuple):
    """An entry ID: milliseconds and sequence, each an unsigned 64-bit integer."""

    ms: int
    seq: int

    def __str__(self) -> str:
        return f"{self.ms}-{self.seq}"

    def incr(self) -> StreamID | None:
        """The next ID, or None past the largest (``streamIncrID``)."""
        if self.seq < UINT64_MAX:
            return StreamID(self.ms, self.seq + 1)
        if self.ms < UINT64_MAX:
            return StreamID(self.ms + 1, 0)
        return None

    def decr(self) -> StreamID | None:
        """The previous ID, or None before 0-0 (``streamDecrID``)."""
        if self.seq > 0:
            return StreamID(self.ms, self.seq - 1)
        if self.ms > 0:
            return StreamID(self.ms - 1, UINT64_MAX)
        return None


MIN_ID = StreamID(0, 0)
MAX_ID = StreamID(UINT64_MAX, UINT64_MAX)


_LL = re.compile(r"-?[1-9][0-9]{0,19}|0")
"""``string2ll``'s grammar: optional '-', digits, no leading zero or blank (range apart)."""
_ULL = re.compile(r"[ \t\n\v\f\r]*([+-]?)([0-9]+)")
"""C ``strtoull``'s grammar as Redis calls it: leading blanks, a sign, digits (zeros too)."""
_DIGITS_ID = re.compile(r"([0-9]{1,127})-([0-9]{1,127})")
"""The common ``ms-seq`` form, all digits: parsed without the general path."""


def string2ll(s: str) -> int | None:
    """Redis's strict signed 64-bit parse: optional '-', digits, no leading zeros or blanks.

    Plain ASCII digits (values, ID parts, counts: nearly every call) are decided by two C
    string methods instead of the regex."""
    if s.isdigit() and s.isascii():
        if s[0] == "0" and len(s) > 1:
            return None
        v = int(s)
        return v if v <= INT64_MAX else None
    if _LL.fullmatch(s) is None:
        return None
    v = int(s)
    if v < INT64_MIN or v > INT64_MAX:
        return None
    return v


def string2ull(s: str) -> int | None:
    """Redis's ``string2ull``: ``string2ll`` first, then C ``strtoull`` with its leniency."""
    if _LL.fullmatch(s) is not None:
        ll = int(s)
        if INT64_MIN <= ll <= INT64_MAX:
            return None if ll < 0 else ll
    m = _ULL.fullmatch(s)
    if m is None:
        return None
    v = int(m[2])
    if v > UINT64_MAX:
        return None
    return (-v) % (1 << 64) if m[1] == "-" else v


def parse_int(s: str) -> int | None:
    """``getLongLongFromObject``: a strict 64-bit signed integer, else None."""
    return string2ll(s)


def _c_string(s: str) -> str:
    nul = s.find("\0")
    return s if nul < 0 else s[:nul]


def parse_id(
    text: str, missing_seq: int = 0, *, strict: bool = False, allow_seq_auto: bool = False
) -> tuple[StreamID, bool]:
    """Parse ``ms-seq``, ``ms``, ``-``, ``+`` (not when strict) and ``ms-*`` (when allowed).

    Returns the ID and whether the sequence was given (False only for ``ms-*``).
    """
    fast = _DIGITS_ID.fullmatch(text) if len(text) <= 127 else None
    if fast is not None:  # strtoull on digits: their value, if it fits in 64 bits
        ms_digits, seq_digits = int(fast[1]), int(fast[2])
        if ms_digits > UINT64_MAX or seq_digits > UINT64_MAX:
            raise invalid_id()
        return StreamID(ms_digits, seq_digits), True
    # A UTF-8 character takes at most 4 bytes: only longer texts need encoding to measure.
    if len(text) > 31 and len(text.encode("utf-8", "surrogateescape")) > 127:
        raise invalid_id()
    buf = _c_string(text)
    if strict and buf in ("-", "+"):
        raise invalid_id()
    if buf == "-":
        return MIN_ID, True
    if buf == "+":
        return MAX_ID, True
    ms_text, dash, seq_text = buf.partition("-")
    ms = string2ull(ms_text)
    if ms is None:
        raise invalid_id()
    if not dash:
        return StreamID(ms, missing_seq), True
    if allow_seq_auto and seq_text == "*":
        return StreamID(ms, 0), False
    seq = string2ull(seq_text)
    if seq is None:
        raise invalid_id()
    return StreamID(ms, seq), True


def parse_strict_id(text: str, missing_seq: int = 0) -> StreamID:
    """An ID where ``-`` and ``+`` are not allowed (``streamParseStrictIDOrReply``)."""
    return parse_id(text, missing_seq, strict=True)[0]


def parse_range_start(text: str) -> StreamID:
    """The start of an XRANGE interval: ``-``, an ID, an incomplete ``ms``, or exclusive ``(id``."""
    exclusive, sid = _parse_interval(text, 0)
    if exclusive:
        nxt = sid.incr()
        if nxt is None:
            raise WrongArgument.err("invalid start ID for the interval")
        return nxt
    return sid


def parse_range_end(text: str) -> StreamID:
    """The end of an XRANGE interval: ``+``, an ID, an incomplete ``ms``, or exclusive ``(id``."""
    exclusive, sid = _parse_interval(text, UINT64_MAX)
    if exclusive:
        prev = sid.decr()
        if prev is None:
            raise WrongArgument.err("invalid end ID for the interval")
        return prev
    return sid


def _parse_interval(text: str, missing_seq: int) -> tuple[bool, StreamID]:
    if len(text) > 1 and text[0] == "(":
        return True, parse_strict_id(text[1:], missing_seq)
    return False, parse_id(text, missing_seq)[0]


def format_id(sid: StreamID) -> str:
    return f"{sid.ms}-{sid.seq}"
