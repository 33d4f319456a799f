"""The three targets every surface is tested against (issue 14): the same ``xstreams serve``
subprocess in front of (a) the embedded engine, (b) the real redis-server on
127.0.0.1:6379 (a database of the tests' own, ``XSTREAMS_TEST_TARGET_REDIS_DB``) and (c) a
throwaway 3-master Redis Cluster started from the redis-server binaries
(tests/support/redis_cluster.py).

A target is a backend URL; ``Frontend`` is one front-end process serving it. Several
front-ends may serve one Redis target at once (they keep no state), which is how the
scale-out tests kill one and carry on through another.

Tests on the Redis targets are marked ``redis`` (the cluster's ``slow`` too): they fail, not
skip, when a service is missing under ``XSTREAMS_REQUIRE_SERVICES=1``.
"""

from __future__ import annotations

import os
import signal
import socket
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import REDIS_HOST, REDIS_PORT, REQUIRE_SERVICES, TARGET_REDIS_DB, Server
from tests.support.waiting import until

EMBEDDED, REDIS, CLUSTER = "embedded", "redis", "cluster"

# pytest params: the Redis ones marked, so `-m "not redis"` runs the embedded target alone.
TARGET_PARAMS = [
    pytest.param(EMBEDDED, id=EMBEDDED),
    pytest.param(REDIS, id=REDIS, marks=pytest.mark.redis),
    pytest.param(CLUSTER, id=CLUSTER, marks=[pytest.mark.redis, pytest.mark.slow]),
]
REDIS_PARAMS = TARGET_PARAMS[1:]

# For one test in a directory that otherwise runs on the embedded target alone (the other
# tests keep the unparametrized ``target``; the Redis front-ends start only for these).
every_target = pytest.mark.parametrize("target", TARGET_PARAMS, indirect=True, scope="session")


def every_target_with(argname: str, values: list[Any], on_redis: list[Any]) -> Any:
    """``every_target`` for a test with a parameter of its own: every value on the embedded
    target, only ``on_redis`` on the Redis ones (where the other values would repeat what
    the backend plays no part in, at a Spark job each)."""
    params = [pytest.param(EMBEDDED, v, id=f"{v}-{EMBEDDED}") for v in values]
    params += [
        pytest.param(p.values[0], v, marks=p.marks, id=f"{v}-{p.id}")
        for p in REDIS_PARAMS
        for v in on_redis
    ]
    return pytest.mark.parametrize(
        ("target", argname), params, indirect=["target"], scope="session"
    )


READY_TIMEOUT_S = 30.0


def three_targets(metafunc: pytest.Metafunc) -> None:
    """``pytest_generate_tests`` for a directory whose tests run on every target: each test
    that reaches ``target`` (through ``server``, ``xs``, ``api``...) runs three times, grouped
    by target so each front-end starts once."""
    if "target" in metafunc.fixturenames:
        metafunc.parametrize("target", TARGET_PARAMS, indirect=True, scope="session")


def require_redis() -> None:
    """Skip (fail under XSTREAMS_REQUIRE_SERVICES=1) when redis-server is not reachable."""
    try:
        with socket.create_connection((REDIS_HOST, REDIS_PORT), timeout=1):
            return
    except OSError:
        pass
    msg = f"redis-server is not reachable on {REDIS_HOST}:{REDIS_PORT}"
    if REQUIRE_SERVICES:
        pytest.fail(msg + " and XSTREAMS_REQUIRE_SERVICES=1")
    pytest.skip(msg)


def redis_url() -> str:
    return f"redis://{REDIS_HOST}:{REDIS_PORT}/{TARGET_REDIS_DB}"


def cluster_url(nodes: list[str]) -> str:
    return "redis+cluster://" + ",".join(nodes)


@dataclass(frozen=True)
class Target:
    name: str  # EMBEDDED | REDIS | CLUSTER
    backend: str  # the --backend value

    @property
    def redis(self) -> bool:
        return self.name != EMBEDDED

    def serve(self, data_dir: Path, *extra: str, env: dict[str, str] | None = None) -> Frontend:
        return Frontend(data_dir, "--backend", self.backend, *extra, env=env)


class Frontend(Server):
    """``xstreams serve`` on a free port, returned once /readyz answers 200 (recovered, or its
    Redis answered PING)."""

    def __init__(self, data_dir: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        super().__init__(data_dir, *extra, env=env)

        def ready() -> bool:
            if self.proc.poll() is not None:
                raise RuntimeError(f"xstreams on {self.url} exited with {self.proc.returncode}")
            try:
                return httpx.get(self.url + "/readyz", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        try:
            until(ready, READY_TIMEOUT_S, f"xstreams on {self.url} ready", poll_s=0.05)
        except BaseException:
            self.stop()
            raise

    def kill(self) -> None:
        """SIGKILL: no shutdown, no goodbye to its clients (a crashed front-end)."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


Served = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]

# What a client ``served`` made reaches, for tests.support.waiting to count blocked readers:
# the in-process app's store, or the front-end in front of Redis.
SERVED_BY: weakref.WeakKeyDictionary[httpx.AsyncClient, Any] = weakref.WeakKeyDictionary()


def served_on(request: pytest.FixtureRequest, name: str, data_dir: Path) -> Served:
    """For a test that sets settings of its own (limits) on each target: ``served(**settings)``
    is a client on the embedded app in process (tests/api/inproc.py), or on an ``xstreams
    serve`` started for it in front of the Redis target with the settings as ``XSTREAMS_*``
    environment variables, its keyspace flushed first."""
    backend = None
    if name == REDIS:
        require_redis()
        backend = redis_url()
    elif name == CLUSTER:
        backend = cluster_url(request.getfixturevalue("cluster_nodes"))

    @asynccontextmanager
    async def served(**settings: Any) -> AsyncIterator[httpx.AsyncClient]:
        if backend is None:
            from app.engine.store import Store
            from tests.api.inproc import serve

            store = Store()
            async with serve(store, **settings) as client:
                SERVED_BY[client] = store
                yield client
            return
        env = {f"XSTREAMS_{k.upper()}": str(v) for k, v in settings.items()}
        front = Frontend(data_dir, "--backend", backend, env=env)
        try:
            async with httpx.AsyncClient(base_url=front.url, timeout=30) as client:
                token = settings.get("token")
                auth = {"Authorization": f"Bearer {token}"} if token else {}
                flushed = await client.post("/", json=["FLUSHALL"], headers=auth)
                assert flushed.status_code == 200, flushed.text
                SERVED_BY[client] = front
                yield client
        finally:
            front.stop()

    return served
