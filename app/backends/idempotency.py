"""What a surface hands a backend to make one request exactly once (``Backend.idempotent``).

A request that carries an Idempotency-Key runs inside ``backend.idempotent(ticket)``. The
backend answers with a ``Run``: either the response kept for an earlier request with the same
key (``stored``: the surface sends it again), or leave to run, in which case the surface puts
the response it built in ``keep`` and the backend stores it atomically with what the request
wrote: the embedded backend in the same journal commit, the Redis backend in the same script.
A key reused for another request raises ``KeyReused``; a key whose first request is still
running raises ``StillRunning``.

A blocking read cannot run inside: its answer depends on when it is served, so no stored
answer could stand for it (``BLOCKING_REFUSED``).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.errors import WrongArgument

__all__ = ["BLOCKING_REFUSED", "KeyReused", "Run", "StillRunning", "Ticket", "blocking_refused"]

BLOCKING_REFUSED = (
    "ERR a blocking read cannot run under an Idempotency-Key: its answer depends on when it is"
    " served. Send it without BLOCK (block_ms) or without the key"
)


def blocking_refused() -> WrongArgument:
    return WrongArgument(BLOCKING_REFUSED)


@dataclass(frozen=True, slots=True)
class Ticket:
    """One idempotent request, as the backend stores it."""

    name: str  # the credential's scope and the client's key: what is looked up
    fingerprint: bytes  # of the request: the same key with another request is refused
    anchor: str | None = None  # a key the request names: Redis Cluster stores it in its slot


@dataclass(slots=True)
class Run:
    """A request's turn: ``stored`` to send again, or run and ``keep`` the response."""

    stored: bytes | None = None
    kept: bytes | None = None
    # An earlier attempt's writes were applied and this one answers from their replies
    # (Redis backend, after a front-end died or answered 5xx): a replay too.
    resumed: bool = False

    def keep(self, response: bytes) -> None:
        self.kept = response


class KeyReused(Exception):
    """The key was used for a different request (another fingerprint): 422."""


class StillRunning(Exception):
    """The key's first request has not finished: 409, retry later."""
