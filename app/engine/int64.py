"""Redis's 64-bit C integers in Python's unbounded ones.

Redis keeps its stream counters in C types and lets them wrap: ``entries_added`` and a pending
entry's delivery count are ``uint64_t``; a group's ``entries_read``, times and idle times are
``long long``. Its replies print each through ``addReplyLongLong``, so an unsigned counter
past 2**63 - 1 shows as a negative number. Python's ints never wrap, so every place that does
arithmetic on such a counter goes through these functions: a value then stays within the C
type, the way redis-server 7.0 holds it, and the journal can store it exactly.
"""

from __future__ import annotations

from typing import Final

UINT64_MAX: Final = (1 << 64) - 1
INT64_MAX: Final = (1 << 63) - 1
INT64_MIN: Final = -(1 << 63)


def u64(n: int) -> int:
    """``n`` as a ``uint64_t`` holds it: modulo 2**64."""
    return n & UINT64_MAX


def i64(n: int) -> int:
    """``n`` as a ``long long`` holds it (two's complement): what ``addReplyLongLong`` prints
    for a ``uint64_t``, and what signed arithmetic past the range gives on every machine
    Redis runs on."""
    n &= UINT64_MAX
    return n - (1 << 64) if n > INT64_MAX else n


def elapsed_ms(now_ms: int, since_ms: int) -> int:
    """``now - since`` as Redis computes an idle time (``mstime_t``): a stored time far in
    the past or future wraps it, as it does in redis-server."""
    return i64(now_ms - since_ms)


def is_u64(n: object) -> bool:
    return type(n) is int and 0 <= n <= UINT64_MAX


def is_i64(n: object) -> bool:
    return type(n) is int and INT64_MIN <= n <= INT64_MAX
