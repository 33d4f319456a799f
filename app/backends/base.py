"""The one boundary every surface calls: typed operations in, typed replies out.

REST, SSE and the command endpoint hand requests to a ``Backend`` and never touch a keyspace,
a store or a Redis connection themselves. Two implementations stand behind it:

- ``EmbeddedBackend`` (app/backends/embedded/): the in-process engine, journaled to SQL.
  It keeps the request protocol's durability itself: a write is refused before it runs while
  storage cannot take it (``StorageUnavailable``), and no answer, errors included, leaves
  before the journal records behind its keys are as durable as the fsync mode promises.
- ``RedisBackend`` (app/backends/redis/): redis-server or Redis Cluster through redis-py's
  asyncio clients. Redis decides the semantics; a write returns once Redis replied (and, with
  ``wait_replicas``, once enough replicas confirmed).

Requests reuse the engine's argument types (``XAddArgs``, ``RangeArgs``, ``ReadRequest``,
``PendingArgs``, ``ClaimArgs``, ``AutoClaimArgs``, ``XSetIdArgs``, ``TrimSpec``) and replies the
engine's reply types (app/engine/replies.py): both are plain data with no engine state, so a
Redis reply parses into the very objects the engine returns and every surface shapes them once.

So a surface calls a backend and nothing else: every answer it gets is safe to send. A blocking
read takes ``gone``, which returns when the caller left: the read stops at once with
``ClientGone``, typed calls and raw commands alike.

Errors are ``CommandError`` subclasses carrying Redis's exact text, of the classes in
app/engine/errors.py (not found, conflict, wrong argument ...): the engine raises them, and a
Redis backend turns Redis's error replies into them with ``classify``; surfaces map the class
to a status.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from app.backends.roles import (
    CommandsRole,
    DeliveryRole,
    Gone,
    GroupsRole,
    JsonReply,
    KeyspaceRole,
    LifecycleRole,
    RatesRole,
    RetentionRole,
    StreamsRole,
    WebhooksRole,
)
from app.engine.waiting import ClientGone

__all__ = ["Backend", "ClientGone", "Gone", "JsonReply"]


class CommandTimer(Protocol):
    """Where a backend that can time its own work reports each command the command endpoint
    ran through it (``Metrics`` is one): the engine's time, not a blocked read's wait, as
    Redis's commandstats. A backend given none, or one that cannot tell (a pass-through whose
    figures are the server's own, in its INFO commandstats), reports nothing."""

    def command(self, name: str, seconds: float) -> None: ...

    def command_run(self, name: str, n: int, seconds: float) -> None:
        """``n`` calls of one command run as one (a fused run of XADDs), ``seconds`` each."""
        ...

    def counted(self, name: str) -> None:
        """A command that ran inside a transaction timed whole (as ``exec``)."""
        ...


@runtime_checkable
class Backend(
    LifecycleRole,
    CommandsRole,
    KeyspaceRole,
    StreamsRole,
    GroupsRole,
    DeliveryRole,
    RetentionRole,
    WebhooksRole,
    RatesRole,
    Protocol,
):
    """Stream operations with Redis 7.0 semantics, every role of app/backends/roles.py in one.
    Every method may raise ``CommandError``. A caller that needs only some roles takes those."""

    name: str  # "embedded" | "redis" | "redis-cluster": for /readyz, INFO and logs
    stateless: bool  # True when several front-end processes may share it (--workers N)
    # Whether the backend runs the command table itself: a command line the table refuses
    # (unknown command, wrong arity) is then handed to it, to be refused with the same text
    # and counted in its INFO stats as Redis counts a rejected call. Any other backend never
    # sees such a line: the surface refuses it, so nothing outside the table reaches Redis.
    checks_commands: bool
