"""Each Redis master's state, as /readyz reports it (``RedisBackend.shards``).

A front-end in front of Redis Cluster serves every shard; one shard in trouble costs only
its own streams. So readiness (a load balancer's question: "send requests here?") stays yes
while Redis answers, and says which shards are degraded, and why, beside it:

- unreachable: no answer from the master (a failover under way, a host down);
- not serving: the master is a replica now (writes answer READONLY) or its cluster is down
  (every command answers CLUSTERDOWN);
- fewer online replicas than ``--wait-replicas``: every write there waits the whole
  ``--wait-timeout`` and answers 503 (NOREPLICAS), although Redis applied it.

Taking a front-end out of rotation for that would not help: every front-end sees the same
shards, so all would leave together and a fault of some streams' writes would become an
outage of every stream's reads and writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "ReportsShards",
    "ShardHealth",
    "assess",
    "online_replicas",
    "readiness_fields",
    "unreachable",
]


@dataclass(frozen=True)
class ShardHealth:
    """One master (``node``: host:port) and why it is degraded (None: it is not)."""

    node: str
    replicas: int | None  # online replicas; None when the master did not answer
    degraded: str | None


def _fields(info: str) -> dict[str, str]:
    """``name:value`` lines of an INFO or CLUSTER INFO reply."""
    out: dict[str, str] = {}
    for line in info.splitlines():
        name, sep, value = line.partition(":")
        if sep and not name.startswith("#"):
            out[name.strip()] = value.strip()
    return out


def online_replicas(replication: dict[str, str]) -> int:
    """Replicas in state ``online`` in INFO replication (``slaveN:ip=..,state=online,..``):
    only those acknowledge a WAIT; one still syncing does not."""
    count = 0
    for name, value in replication.items():
        if name.startswith("slave") and name[5:].isdigit() and "state=online" in value.split(","):
            count += 1
    return count


def assess(node: str, replication: str, cluster: str | None, wanted: int) -> ShardHealth:
    """A master's health from its INFO replication and (in a cluster) CLUSTER INFO replies,
    against ``wanted`` replicas (``--wait-replicas``)."""
    info = _fields(replication)
    replicas = online_replicas(info)
    if info.get("role") not in (None, "master"):
        return ShardHealth(node, replicas, "a replica now: writes answer READONLY")
    if cluster is not None:
        state = _fields(cluster).get("cluster_state", "ok")
        if state != "ok":
            return ShardHealth(
                node, replicas, f"cluster_state:{state}: commands answer CLUSTERDOWN"
            )
    if replicas < wanted:
        return ShardHealth(
            node,
            replicas,
            f"{replicas} of {wanted} replicas online (--wait-replicas {wanted}):"
            " writes answer 503 after --wait-timeout",
        )
    return ShardHealth(node, replicas, None)


def unreachable(node: str, reason: str) -> ShardHealth:
    """A master that did not answer the probe."""
    return ShardHealth(node, None, f"unreachable: {reason}")


@runtime_checkable
class ReportsShards(Protocol):
    """A backend that can tell each of its shards' health (Redis, Redis Cluster)."""

    async def shards(self, timeout_s: float) -> list[ShardHealth]: ...


def readiness_fields(shards: list[ShardHealth]) -> dict[str, Any]:
    """What /readyz adds in front of Redis: how many shards (masters) there are, and the
    degraded ones with the reason (an empty list when none is)."""
    return {
        "shards": len(shards),
        "degraded": [
            {"node": s.node, "replicas": s.replicas, "reason": s.degraded}
            for s in shards
            if s.degraded is not None
        ],
    }
