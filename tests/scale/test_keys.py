"""API keys in front of Redis: the front-end reads them from the SQL database ``xstreams keys``
writes (SQLite under --data-dir, or one --database-url several hosts share), exactly as the
embedded engine does: a key created on the command line is served within the refresh period
with its grant enforced, a revoked one is refused and its event streams end. A key database
that cannot be read is said so, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import Commands, Server
from tests.storage.conftest import pg_schema, pg_url  # noqa: F401  (pg_schema: a fixture)
from tests.support.access import FAST_KEYS, EventTail, create_key, keys
from tests.support.targets import (
    CLUSTER,
    EMBEDDED,
    REDIS,
    TARGET_PARAMS,
    Target,
    cluster_url,
    redis_url,
    require_redis,
)
from tests.support.waiting import until

ADMIN = "admin-secret"
REFRESH_S = 5.0  # FAST_KEYS refreshes every 200 ms; this bounds a slow CI machine


@pytest.fixture(params=TARGET_PARAMS)
def any_target(request: pytest.FixtureRequest) -> Target:
    """Each target, the embedded engine first: it is the reference the Redis ones match."""
    name: str = request.param
    if name == EMBEDDED:
        return Target(EMBEDDED, "embedded")
    if name == CLUSTER:
        return Target(CLUSTER, cluster_url(request.getfixturevalue("cluster_nodes")))
    require_redis()
    return Target(REDIS, redis_url())


@pytest.fixture
def redis_target() -> Target:
    require_redis()
    return Target(REDIS, redis_url())


def _bearer(text: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {text}"}


def _admin(url: str, *args: str) -> object:
    """One command with the admin token, on a client of its own, closed after."""
    c = Commands(url, ADMIN)
    try:
        return c(*args)
    finally:
        c.client.close()


def _served(url: str, key: str) -> bool:
    return httpx.get(url + "/v1/streams/orders/entries", headers=_bearer(key)).status_code == 200


def _known(url: str, key: str) -> bool:
    """Whether the front-end has read ``key`` (any answer but 401, whatever it may do)."""
    return httpx.get(url + "/v1/streams/orders/entries", headers=_bearer(key)).status_code != 401


def test_a_cli_key_is_served_scoped_and_revoked_on_every_target(
    any_target: Target, tmp_path: Path
) -> None:
    front = any_target.serve(tmp_path, "--token", ADMIN, env=FAST_KEYS)
    admin = Commands(front.url, ADMIN)
    try:
        assert admin("FLUSHALL") == "OK"
        for stream in ("orders", "audit"):
            assert admin("XADD", stream, "1-1", "f", "v") == "1-1"
        reader = create_key(tmp_path, "reader", "--read", "orders*")
        writer = create_key(tmp_path, "writer", "--write", "orders*")
        # Both keys, each created on its own: a refresh may fall between the two.
        until(lambda: _served(front.url, reader) and _known(front.url, writer), REFRESH_S)
        http = httpx.Client(base_url=front.url, timeout=10)
        # The read-only key: reads its prefix; a write (REST and command) and another prefix
        # are refused, with the embedded engine's statuses.
        r = http.post("/v1/streams/orders/entries", json={"fields": {"f": "x"}},
                      headers=_bearer(reader))  # fmt: skip
        assert r.status_code == 403, r.text
        r = http.post("/", json=["XADD", "orders", "*", "f", "x"], headers=_bearer(reader))
        assert (r.status_code, r.json()["error"]) == (
            403,
            "NOPERM this user has no permissions to run the 'xadd' command",
        )
        assert http.get("/v1/streams/audit/entries", headers=_bearer(reader)).status_code == 403
        # The prefix-scoped writer: writes its prefix, not another.
        r = http.post("/v1/streams/orders-eu/entries", json={"fields": {"f": "x"}},
                      headers=_bearer(writer))  # fmt: skip
        assert r.status_code == 201, r.text
        r = http.post("/v1/streams/audit/entries", json={"fields": {"f": "x"}},
                      headers=_bearer(writer))  # fmt: skip
        assert r.status_code == 403, r.text
        assert admin("XLEN", "orders") == 1 and admin("XLEN", "audit") == 1

        # The reader's event stream ends once the key is revoked; the key is refused after.
        tail = EventTail(f"{front.url}/v1/streams/orders/events?last_id=0&access_token={reader}")
        until(lambda: "id: 1-1" in tail.lines)
        assert tail.status == 200
        done = keys(tmp_path, "revoke", "reader")
        assert done.returncode == 0, done.stderr
        assert tail.ended.wait(REFRESH_S + 5), "the revoked key's stream is still open"
        assert http.get("/v1/streams/orders/entries", headers=_bearer(reader)).status_code == 401
        assert _served(front.url, writer) is False  # write-only: reads are refused (403)
        http.close()
    finally:
        admin.client.close()
        front.stop()


def _keys_at(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "keys", *args, "--database-url", url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.redis
def test_front_ends_sharing_one_postgresql_database_share_its_keys(
    redis_target: Target,
    tmp_path: Path,
    pg_schema: str,  # noqa: F811
) -> None:
    url = pg_url(pg_schema)
    shared = ("--database-url", url, "--token", ADMIN)
    a = redis_target.serve(tmp_path / "a", *shared, env=FAST_KEYS)
    b = redis_target.serve(tmp_path / "b", *shared, env=FAST_KEYS)
    try:
        assert _admin(a.url, "FLUSHALL") == "OK"
        assert _admin(b.url, "XADD", "orders", "1-1", "f", "v") == "1-1"
        made = _keys_at(url, "create", "--name", "shared", "--read", "orders")
        assert made.returncode == 0, made.stderr
        key = made.stdout.strip()
        until(lambda: _served(a.url, key) and _served(b.url, key), REFRESH_S)
        for front in (a, b):
            assert httpx.get(front.url + "/readyz").json()["keys"] == "ok"
        # Neither wrote a file of its own: the keys are the shared database's.
        assert not (tmp_path / "a" / "xstreams.db").exists()
        assert _keys_at(url, "revoke", "shared").returncode == 0
        until(lambda: not _served(a.url, key) and not _served(b.url, key), REFRESH_S)
    finally:
        a.stop()
        b.stop()


UNREACHABLE = "postgresql+psycopg://postgres@127.0.0.1:1/test"


@pytest.mark.redis
def test_an_unreadable_key_database_still_serves_the_token_and_says_why(
    redis_target: Target, tmp_path: Path
) -> None:
    front = redis_target.serve(tmp_path, "--database-url", UNREACHABLE, "--token", ADMIN)
    try:
        body = httpx.get(front.url + "/readyz").json()
        assert body["status"] == "ready"
        assert body["keys"].startswith("cannot read the API keys from " + UNREACHABLE), body
        assert _admin(front.url, "PING") == "PONG"
        r = httpx.get(front.url + "/v1/streams", headers=_bearer("xs_0123456789ab_" + "a" * 43))
        assert r.status_code == 401
    finally:
        front.stop()


@pytest.mark.redis
def test_an_unreadable_key_database_with_nothing_else_is_not_served(
    redis_target: Target, tmp_path: Path
) -> None:
    """Serving it would be serving an open service while keys may exist."""
    srv = Server(tmp_path, "--backend", redis_target.backend, "--database-url", UNREACHABLE)
    try:

        def waiting() -> bool:
            r = httpx.get(srv.url + "/readyz")
            return r.status_code == 503 and "cannot read the API keys" in r.json().get("reason", "")

        until(waiting)
        r = httpx.post(srv.url + "/", json=["PING"])
        assert r.status_code == 503 and "no token or JWT is configured" in r.text
        assert srv.proc.poll() is None  # waiting, not crashed
    finally:
        srv.stop()
