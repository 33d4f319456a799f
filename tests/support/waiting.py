"""Waiting on conditions, not on time: the one place tests poll from.

A fixed sleep before a write ("let the reader park") is either too short on a loaded box,
and the test fails now and then, or longer than needed every time. So a test waits for what
it needs: ``until`` / ``until_async`` poll a condition quickly and fail naming it (they
live in tests/support/polling.py, where tests/conftest.py finds them too), and
``parked`` / ``parked_async`` wait until a number of readers are blocked (XREAD / XREADGROUP
BLOCK, long polls, an SSE tail or group subscriber) where the test's target counts them:

- a ``Store`` served in process: its engine's blocked readers;
- an ``xstreams serve`` subprocess (``tests.conftest.Server``): for the embedded engine,
  ``blocked_clients`` of INFO over its command endpoint; in front of Redis, the clients
  redis-server shows blocked (CLIENT LIST flag ``b``) in the database it serves, or on every
  node of a Redis Cluster;
- the URL of an ``xstreams serve`` of the embedded engine: INFO, as above;
- a client that ``served_on`` (tests/support/targets.py) made: what it reaches, as above;
- a redis-py client: the clients blocked in its database.

A sleep stays only where time itself is tested (a BLOCK timeout, XCLAIM's min-idle, a
heartbeat), with a comment saying so.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

import httpx

from app.engine.store import Store
from tests.conftest import Server
from tests.support.polling import TIMEOUT_S, until, until_async

# -- readers parked ------------------------------------------------------------------------------


def _backend_of(server: Server) -> tuple[str, str | None]:
    """The ``--backend`` a server was started with ("embedded" without one), and its token."""
    args = [str(a) for a in server.proc.args]  # type: ignore[union-attr]

    def arg(name: str) -> str | None:
        return args[args.index(name) + 1] if name in args else None

    return arg("--backend") or "embedded", arg("--token")


def _blocked_in_redis(client: Any, db: int | None) -> int:
    """Clients of redis-server blocked in a command (flag ``b``), in ``db`` unless None."""
    rows = client.client_list()
    return sum(1 for c in rows if "b" in c["flags"] and (db is None or int(c["db"]) == db))


def blocked_behind(backend: str) -> int:
    """Blocked clients of the Redis (or every node of the Redis Cluster) at ``backend``."""
    import redis

    url = urlsplit(backend)
    if url.scheme == "redis+cluster":
        total = 0
        for node in url.netloc.split(","):
            host, _, port = node.rpartition(":")
            with redis.Redis(host=host, port=int(port), decode_responses=True) as c:
                total += _blocked_in_redis(c, None)
        return total
    db = int(url.path.strip("/") or 0)
    with redis.Redis(
        host=url.hostname or "127.0.0.1", port=url.port or 6379, decode_responses=True
    ) as c:
        return _blocked_in_redis(c, db)


def _info_blocked(url: str, token: str | None) -> int:
    """``blocked_clients`` of INFO over the command endpoint at ``url``."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    r = httpx.post(url + "/", json=["INFO", "clients"], headers=headers, timeout=10)
    for line in r.json()["result"].splitlines():
        name, _, value = line.partition(":")
        if name == "blocked_clients":
            return int(value)
    raise AssertionError(f"INFO clients has no blocked_clients: {r.text}")


def blocked_clients(where: Store | Server | str | Any) -> int:
    """How many readers are blocked now at ``where``: a ``Store``, a ``Server`` (whatever
    its backend), the URL of a server of the embedded engine, or a redis-py client (its
    database)."""
    if isinstance(where, Store):
        return where.keyspace.blocked.count()
    if isinstance(where, str):
        return _info_blocked(where, None)
    if isinstance(where, httpx.AsyncClient):
        from tests.support.targets import SERVED_BY

        return blocked_clients(SERVED_BY[where])
    if isinstance(where, Server):
        backend, token = _backend_of(where)
        if backend == "embedded":
            return _info_blocked(where.url, token)
        return blocked_behind(backend)
    if hasattr(where, "client_list"):
        return _blocked_in_redis(where, int(where.connection_pool.connection_kwargs.get("db", 0)))
    raise TypeError(f"cannot count blocked readers of {where!r}")


def blocked_per_read(where: Store | Server | str | Any, keys: list[str]) -> int:
    """How many blocked clients one blocking read of ``keys`` makes where ``blocked_clients``
    counts them: in front of a Redis Cluster the read is split by slot, each part blocked on
    a connection of its own; anywhere else one."""
    if isinstance(where, Server):
        backend, _ = _backend_of(where)
        if urlsplit(backend).scheme == "redis+cluster":
            from redis.crc import key_slot

            return len({key_slot(k.encode()) for k in keys})
    return 1


def _what(where: object, n: int, what: str | None) -> str:
    return what or f"{n} reader(s) blocked at {type(where).__name__}"


def parked(
    where: Store | Server | str | Any, n: int, timeout_s: float = TIMEOUT_S, what: str | None = None
) -> None:
    """Wait until exactly ``n`` readers are blocked at ``where`` (see ``blocked_clients``):
    the ones the test started are parked, and none left over from before is counted in."""
    seen: list[int] = []

    def ready() -> bool:
        seen.append(blocked_clients(where))
        return seen[-1] == n

    try:
        until(ready, timeout_s, _what(where, n, what))
    except AssertionError as e:
        raise AssertionError(f"{e} (last seen: {seen[-1] if seen else None})") from None


async def parked_async(
    where: Store | Server | str | Any, n: int, timeout_s: float = TIMEOUT_S, what: str | None = None
) -> None:
    """``parked`` from a coroutine: the event loop (and the requests the test has in flight
    on it) keeps running while the count is read on a thread."""
    if isinstance(where, httpx.AsyncClient):
        from tests.support.targets import SERVED_BY

        where = SERVED_BY[where]
    seen: list[int] = []

    async def ready() -> bool:
        if isinstance(where, Store):
            seen.append(blocked_clients(where))  # the loop itself moves that count
        else:
            seen.append(await asyncio.to_thread(blocked_clients, where))
        return seen[-1] == n

    try:
        await until_async(ready, timeout_s, _what(where, n, what))
    except AssertionError as e:
        raise AssertionError(f"{e} (last seen: {seen[-1] if seen else None})") from None
