"""Redis URLs: which client a ``--backend`` URL names, and its blocking-read pools.

``redis://[user:pass@]host:port/db`` and ``rediss://`` (TLS) name one redis-server;
``redis+cluster://[user:pass@]host:port,host:port`` and ``rediss+cluster://`` name the
startup nodes of a Redis Cluster. Every client speaks RESP2, as the command endpoint answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlsplit

from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.connection import SSLConnection

# A pool of connections for blocking reads on one node (None: the one redis-server).
BlockPools = Callable[[ClusterNode | None], ConnectionPool]


def connect(url: str, block_connections: int) -> tuple[Redis | RedisCluster, BlockPools]:
    """The client ``url`` names (not connected yet) and how to make a node's pool of
    ``block_connections`` connections for blocking reads."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in ("redis", "rediss"):
        client = Redis.from_url(url, protocol=2)

        def standalone(node: ClusterNode | None) -> ConnectionPool:
            return ConnectionPool.from_url(url, max_connections=block_connections, protocol=2)

        return client, standalone
    if scheme not in ("redis+cluster", "rediss+cluster"):
        raise ValueError(f"unsupported Redis URL scheme {parts.scheme!r}")
    addresses, auth = cluster_address(url)
    tls = scheme == "rediss+cluster"
    nodes = [ClusterNode(host, port) for host, port in addresses]
    cluster = RedisCluster(
        startup_nodes=nodes,
        ssl=tls,
        protocol=2,
        username=auth.get("username"),
        password=auth.get("password"),
    )

    def per_node(node: ClusterNode | None) -> ConnectionPool:
        assert node is not None
        kwargs: dict[str, Any] = dict(auth)
        if tls:
            kwargs["connection_class"] = SSLConnection
        return ConnectionPool(
            host=node.host,
            port=node.port,
            max_connections=block_connections,
            protocol=2,
            **kwargs,
        )

    return cluster, per_node


def cluster_address(url: str) -> tuple[list[tuple[str, int]], dict[str, str]]:
    """``redis+cluster://[user:pass@]host[:port],host[:port]``: the startup nodes (port
    6379 when none is given; an IPv6 address in brackets) and the credentials, if any."""
    netloc = urlsplit(url).netloc
    userinfo, _, hosts = netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    auth: dict[str, str] = {}
    if user:
        auth["username"] = unquote(user)
    if password:
        auth["password"] = unquote(password)
    nodes = []
    for item in hosts.split(","):
        item = item.strip()
        if not item:
            continue
        if item.startswith("["):  # [::1]:7000
            host, _, rest = item[1:].partition("]")
            port = rest.removeprefix(":")
        elif item.count(":") == 1:
            host, _, port = item.partition(":")
        else:
            host, port = item, ""
        if port and not port.isdigit():
            raise ValueError(f"bad port in Redis Cluster address {item!r}")
        nodes.append((host or "127.0.0.1", int(port) if port else 6379))
    if not nodes:
        raise ValueError("a Redis Cluster URL names at least one host:port")
    return nodes, auth
