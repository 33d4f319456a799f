"""The Redis backend: the Backend protocol served by redis-server or Redis Cluster.

Redis decides every semantic rule; this package only builds Redis argv from the engine's
typed arguments (the one place allowed to) and parses Redis's raw replies into the engine's
reply objects, so REST, SSE and the command endpoint shape them exactly as they shape the
embedded engine's. Front-ends keep no state: any number of them may share one Redis.

Split by concern, as redis-py keeps connections, commands and reply parsing apart; each
module's docstring says the choices a caller may rely on:

- urls.py: which client a ``--backend`` URL names;
- parse.py: bytes, IDs, errors and replies, to and from the engine's types;
- routing.py: connections, cluster routing, WAIT after a write, Redis's faults;
- blocking.py: blocking reads on connections of their own, XREAD split by slot;
- scripts.py: every Lua script; limits.py and caps.py: the engine's limits in front of Redis;
- reads.py: XREAD / XREADGROUP within the limits;
- passthrough.py: the command endpoint (one command, pipeline, multi-exec);
- streams.py, groups.py: the typed operations.
"""

from __future__ import annotations

from app.backends.redis.groups import Groups
from app.backends.redis.passthrough import Passthrough
from app.backends.redis.streams import Streams
from app.backends.redis.urls import cluster_address, connect
from app.engine.limits import Limits

__all__ = ["RedisBackend", "cluster_address"]


class RedisBackend(Passthrough, Streams, Groups):
    """The Backend protocol over redis-py's asyncio clients (standalone or cluster)."""

    stateless = True

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
        block_connections: int = 64,
        limits: Limits | None = None,
    ) -> RedisBackend:
        """A backend for ``url`` (app/backends/redis/urls.py), not connected yet."""
        client, block_pools = connect(url, block_connections)
        return cls(
            client,
            block_pools=block_pools,
            wait_replicas=wait_replicas,
            wait_timeout_ms=wait_timeout_ms,
            block_connections=block_connections,
            limits=limits,
        )
