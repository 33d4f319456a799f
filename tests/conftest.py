"""Shared fixtures: a real xstreams server on loopback and the real redis-server.

Tests that need redis-server skip when it is absent, unless ``XSTREAMS_REQUIRE_SERVICES=1``
(set by .ci/run), which turns that skip into a failure so CI never passes by skipping.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.polling import until

REDIS_HOST = os.environ.get("XSTREAMS_TEST_REDIS_HOST", "127.0.0.1")
REDIS_PORT = int(os.environ.get("XSTREAMS_TEST_REDIS_PORT", "6379"))
# A database index of the tests' own, flushed by them; nothing else on the server is touched.
# Under pytest-xdist each worker (gw0, gw1...) takes two databases of its own, so workers
# never flush each other's data.
_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
REDIS_DB = (int(os.environ.get("XSTREAMS_TEST_REDIS_DB", "9")) + 2 * _WORKER) % 16
# The database an ``xstreams serve --backend redis://`` under test keeps its keyspace in: not
# REDIS_DB, which the differential and SDK tests use as the reference beside it.
# REDIS_DB already carries the worker's offset; an explicit index gets it added here.
_TARGET_DB_ENV = os.environ.get("XSTREAMS_TEST_TARGET_REDIS_DB")
TARGET_REDIS_DB = (
    REDIS_DB + 1 if _TARGET_DB_ENV is None else int(_TARGET_DB_ENV) + 2 * _WORKER
) % 16
REQUIRE_SERVICES = os.environ.get("XSTREAMS_REQUIRE_SERVICES") == "1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """An ``xstreams serve`` subprocess on a free loopback port."""

    def __init__(
        self,
        data_dir: Path,
        *extra: str,
        env: dict[str, str] | None = None,
        port: int | None = None,  # a restart on the same address (a client resuming)
    ) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [
            sys.executable, "-m", "app.cli", "serve",
            "--host", "127.0.0.1", "--port", str(self.port),
            "--data-dir", str(data_dir), "--log-level", "warning", *extra,
        ]  # fmt: skip
        self.proc = subprocess.Popen(cmd, env={**os.environ, **(env or {})})
        try:
            until(self._healthy, 30, "xstreams healthy", poll_s=0.05)
        except AssertionError:
            self.stop()
            raise RuntimeError("xstreams did not become healthy within 30 s") from None

    def _healthy(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"xstreams exited with {self.proc.returncode}")
        try:
            return httpx.get(self.url + "/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        stop_process(self.proc)


def stop_process(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM, then SIGKILL if it has not exited within 10 s."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Commands:
    """Sends Redis commands to the Upstash-protocol endpoint, one JSON array per request."""

    def __init__(self, url: str, token: str | None = None, client: httpx.Client | None = None):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = client or httpx.Client(base_url=url, headers=headers, timeout=30)

    def raw(self, *args: Any, **kwargs: Any) -> httpx.Response:
        # ASCII JSON: a byte that is not UTF-8 (a DUMP payload's) travels as its \udcNN
        # escape, the command endpoint's binary-safe form; httpx's json= cannot encode it.
        headers = {"Content-Type": "application/json", **kwargs.pop("headers", {})}
        body = json.dumps([str(a) for a in args]).encode()
        return self.client.post("/", content=body, headers=headers, **kwargs)

    def __call__(self, *args: Any) -> Any:
        """The command's result; a Redis error comes back as a ``ReplyError``."""
        r = self.raw(*args)
        body = r.json()
        if "error" in body:
            assert r.status_code == 400, (r.status_code, body)
            return ReplyError(body["error"])
        assert r.status_code == 200, (r.status_code, body)
        return body["result"]


class ReplyError(str):
    """A Redis error reply, compared by its text."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"ReplyError({str(self)!r})"


@pytest.fixture(scope="session")
def cluster_nodes() -> Iterator[list[str]]:
    """One 3-master Redis Cluster for the whole session, started on first use."""
    from tests.support.redis_cluster import cluster_or_skip

    with cluster_or_skip() as nodes:
        yield nodes


@pytest.fixture(scope="session")
def target(request: pytest.FixtureRequest) -> Any:
    """What the session's ``server`` serves: the embedded engine unless the directory's
    conftest parametrizes ``target`` over the three targets (tests/support/targets.py)."""
    from tests.support.targets import (
        CLUSTER,
        EMBEDDED,
        Target,
        cluster_url,
        redis_url,
        require_redis,
    )

    name: str = getattr(request, "param", EMBEDDED)
    if name == EMBEDDED:
        return Target(EMBEDDED, "embedded")
    if name == CLUSTER:
        return Target(CLUSTER, cluster_url(request.getfixturevalue("cluster_nodes")))
    require_redis()
    return Target(name, redis_url())


@pytest.fixture(scope="session")
def server(target: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``xstreams serve`` in front of the session's target, ready (/readyz 200)."""
    srv = target.serve(tmp_path_factory.mktemp(f"data-{target.name}"))
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def xs_client(server: Server) -> Iterator[Commands]:
    c = Commands(server.url)
    yield c
    c.client.close()


@pytest.fixture
def xs(xs_client: Commands) -> Commands:
    """The xstreams command endpoint, flushed before each test (one client per session:
    a new HTTP client per test costs more than most tests)."""
    assert xs_client("FLUSHALL") == "OK"
    return xs_client


def _redis_available() -> bool:
    try:
        with socket.create_connection((REDIS_HOST, REDIS_PORT), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def real_redis() -> Iterator[Any]:
    """A redis-py client on the tests' own database index, flushed before each test."""
    import redis

    if not _redis_available():
        msg = f"redis-server is not reachable on {REDIS_HOST}:{REDIS_PORT}"
        if REQUIRE_SERVICES:
            pytest.fail(msg + " and XSTREAMS_REQUIRE_SERVICES=1")
        pytest.skip(msg)
    client = redis.Redis(host=REDIS_HOST, port=REDIS_PORT, db=REDIS_DB, decode_responses=True)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


# -- markers by need ---------------------------------------------------------------------------
# Each test is marked with the services it needs, from its fixtures and its directory, so that
# `-m "not (postgres or spark)"` (or `make test-fast`) selects without editing every test.
REDIS_FIXTURES = frozenset({"real_redis", "pair"})
SERVER_FIXTURES = frozenset({"server", "browser_server", "auth_server", "front"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        params = getattr(getattr(item, "callspec", None), "params", {})
        path = item.path.as_posix()
        if names & REDIS_FIXTURES:
            item.add_marker(pytest.mark.redis)
        if params.get("db_url") == "postgresql" or "pg_schema" in names:
            item.add_marker(pytest.mark.postgres)
        if "/tests/pipeline/" in path:
            item.add_marker(pytest.mark.spark)
        if item.path.name == "test_browser.py":
            item.add_marker(pytest.mark.browser)
        if names & SERVER_FIXTURES or params.get("xs_mode") == "http":
            item.add_marker(pytest.mark.server)
