"""Errors a backend adds to the engine's tree (app/engine/errors.py): each is a
``CommandError`` carrying a Redis-style text, so every surface answers it as it answers any
error reply.

    CommandError                  (app/engine/errors.py)
     └── BackendUnavailable       the backend's trouble, not the request's: 503, Retry-After
          ├── BlockPoolExhausted  no connection left for one more blocking read
          ├── ReplicasUnavailable fewer replicas than --wait-replicas confirmed a write
          ├── RedisUnavailable    Redis could not be reached, or stopped answering
          └── RedisFault          Redis answered, but refuses for now (CLUSTERDOWN, LOADING...)
     └── NotAvailable             the command is newer than the Redis server behind the backend
                                  and no script does it exactly: 400, its text naming the version

    StorageUnavailable            (app/durability.py) the embedded backend's database does not
                                  take writes now: 503, Retry-After; a plain Exception, so no
                                  command's error handling takes it for that command's error

The API maps ``BackendUnavailable`` to 503 in its one table (app/api/errors.py): a client
retries later, or through another front-end; only a request's own mistake is a 4xx.
"""

from __future__ import annotations

from app.durability import StorageUnavailable
from app.engine.errors import CommandError, classify

# The embedded backend's database does not accept writes (503 with Retry-After): not a
# ``CommandError``, so no command's own error handling can swallow it and run on.
__all__ = [
    "FAULT_CODES",
    "BackendUnavailable",
    "BlockPoolExhausted",
    "NotAvailable",
    "RedisFault",
    "RedisUnavailable",
    "ReplicasUnavailable",
    "StorageUnavailable",
    "classify_reply",
    "fault_of",
]

# The error codes with which redis-server refuses a command for a state of its own that
# passes: a cluster without a slot's master (CLUSTERDOWN), a slot on the move (TRYAGAIN),
# a replica cut from its master (MASTERDOWN), a dataset being loaded (LOADING), a master
# demoted by a failover (READONLY), a script or module holding it (BUSY), its persistence
# or its memory in trouble (MISCONF, OOM), too few replicas for min-replicas-to-write
# (NOREPLICAS). The same command may succeed a moment later: none is the client's mistake.
FAULT_CODES = frozenset(
    {
        "CLUSTERDOWN",
        "TRYAGAIN",
        "MASTERDOWN",
        "LOADING",
        "READONLY",
        "BUSY",
        "MISCONF",
        "OOM",
        "NOREPLICAS",
    }
)


class BackendUnavailable(CommandError):
    """The backend cannot serve the command now; nothing is wrong with the request. Whether
    a write took effect is not known (``ReplicasUnavailable``: it did)."""


class BlockPoolExhausted(BackendUnavailable):
    """Every connection set aside for blocking reads is busy: a blocking read holds its
    connection for as long as it waits, so their number is bounded (``block_connections``)
    and one more is refused at once rather than queued behind waits of unknown length."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"BUSY all {limit} connections for blocking reads are in use; retry later "
            "or read without BLOCK"
        )


class ReplicasUnavailable(BackendUnavailable):
    """A write was applied by the master but fewer replicas than ``wait_replicas`` confirmed
    it within the timeout (``WAIT``): it may be lost in a failover. The text is Redis's own
    for ``min-replicas-to-write`` refusals, the nearest thing Redis says."""

    def __init__(self, acked: int, wanted: int) -> None:
        super().__init__("NOREPLICAS Not enough good replicas to write.")
        self.acked = acked
        self.wanted = wanted


class RedisUnavailable(BackendUnavailable):
    """Redis could not be reached (or stopped answering) for this command: the front-end is
    up but its backend is not; nothing is known about whether a write took effect."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"ERR the Redis backend is unavailable: {detail}")


class RedisFault(BackendUnavailable):
    """An error reply of one of the ``FAULT_CODES``, with Redis's own text: Redis is there
    but refuses the command for now (a failover, a load, a slot moving)."""


class NotAvailable(CommandError):
    """A command (or an option of one) that Redis added after the version of the server
    behind the Redis backend, which the backend cannot do exactly with the server's own
    commands: ``ERR XTRIM with ACKED needs Redis 8.2 or newer (this server is 7.0.15)``.
    Not the request's mistake, nor a passing state: the same request works on the embedded
    backend or on a newer Redis (app/backends/redis/features.py)."""


def fault_of(text: str) -> RedisFault | None:
    """``text``, an error reply of Redis's, as a ``RedisFault`` when its code is one of a
    passing state of the server's (``FAULT_CODES``); None for any other error."""
    if text.split(" ", 1)[0] in FAULT_CODES:
        return RedisFault(text)
    return None


def classify_reply(text: str) -> CommandError:
    """The class of an error reply of redis-server's: a passing state of the server is a
    ``RedisFault`` (``fault_of``), anything else the engine's class for that text
    (``classify``), so both backends' errors of one text get one status."""
    return fault_of(text) or classify(text)
