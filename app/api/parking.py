"""The running request's way to say it is about to wait on purpose (``park``).

Apart from ``app/api/fairness.py`` so ``app/api/holds.py``, which every surface's error table
imports, needs nothing of the admission gate (nor the gate of the error table's imports).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar, Token

__all__ = ["park", "parking", "unparked"]

_give_back: ContextVar[Callable[[], None] | None] = ContextVar("xstreams_slot", default=None)


def parking(give_back: Callable[[], None]) -> Token[Callable[[], None] | None]:
    """Until ``unparked``, ``park`` in this request calls ``give_back`` (its slot's)."""
    return _give_back.set(give_back)


def unparked(token: Token[Callable[[], None] | None]) -> None:
    _give_back.reset(token)


def park() -> None:
    """The running request is about to wait: its admission slot goes to the next in turn."""
    give_back = _give_back.get()
    if give_back is not None:
        give_back()
