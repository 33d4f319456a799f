"""Requests a credential holds open, counted against one cap per credential.

An event stream, a REST long poll (``block_ms``) and a blocking read on the command endpoint
(XREAD / XREADGROUP with BLOCK) each hold a connection and a parked reader for as long as
they wait. One API key or JWT subject may hold at most ``sse_max_connections_per_key`` of
them together; past it the next one is refused at once with 429 and ``Retry-After``, before
anything runs. Without a shared count a client refused a 101st event stream could park
thousands of long polls instead.

The admin token and an open service stand for every client alike (``Principal.scoped``), so
they are not counted here; the global caps (``sse_max_connections``, ``max_connections``)
bound them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from app.access import Principal
from app.engine.errors import CommandError

__all__ = ["Holds", "TooManyHeld"]


class TooManyHeld(CommandError):
    """The credential already holds as many waiting requests as it may: 429, Retry-After."""


class Holds:
    def __init__(self, max_per_key: int) -> None:
        self.max_per_key = max_per_key
        self.by_key: dict[str, int] = {}  # limit_key -> requests held now

    def take(self, principal: Principal) -> TooManyHeld | None:
        """Count one more request held by ``principal``: None, or the refusal (nothing
        counted)."""
        if not principal.scoped:
            return None
        key = principal.limit_key
        held = self.by_key.get(key, 0)
        if held >= self.max_per_key:
            return TooManyHeld(
                "ERR too many event streams and blocking reads for this credential (at most"
                f" {self.max_per_key} open, sse_max_connections_per_key)"
            )
        self.by_key[key] = held + 1
        return None

    def give_back(self, principal: Principal) -> None:
        """The request ``take`` counted has ended."""
        if not principal.scoped:
            return
        key = principal.limit_key
        held = self.by_key.get(key, 0) - 1
        if held > 0:
            self.by_key[key] = held
        else:
            self.by_key.pop(key, None)

    @contextmanager
    def holding(self, principal: Principal) -> Iterator[None]:
        """Count the ``with`` block as a held request; raise ``TooManyHeld`` past the cap."""
        refusal = self.take(principal)
        if refusal is not None:
            raise refusal
        try:
            yield
        finally:
            self.give_back(principal)
