"""Errors a backend adds to the engine's tree (app/engine/errors.py): each is a
``CommandError`` carrying a Redis-style text, so every surface answers it as it answers any
error reply; the API maps these classes to 503 (try again later, or elsewhere).
"""

from __future__ import annotations

from app.engine.errors import CommandError


class BlockPoolExhausted(CommandError):
    """Every connection set aside for blocking reads is busy: a blocking read holds its
    connection for as long as it waits, so their number is bounded (``block_connections``)
    and one more is refused at once rather than queued behind waits of unknown length."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"BUSY all {limit} connections for blocking reads are in use; retry later "
            "or read without BLOCK"
        )


class ReplicasUnavailable(CommandError):
    """A write was applied by the master but fewer replicas than ``wait_replicas`` confirmed
    it within the timeout (``WAIT``): it may be lost in a failover. The text is Redis's own
    for ``min-replicas-to-write`` refusals, the nearest thing Redis says."""

    def __init__(self, acked: int, wanted: int) -> None:
        super().__init__("NOREPLICAS Not enough good replicas to write.")
        self.acked = acked
        self.wanted = wanted


class RedisUnavailable(CommandError):
    """Redis could not be reached (or stopped answering) for this command: the front-end is
    up but its backend is not; nothing is known about whether a write took effect."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"ERR the Redis backend is unavailable: {detail}")
