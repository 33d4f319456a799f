"""Database failures: writes answer 503, and so do reads of state not yet durable, while the
rest of the keyspace stays readable; everything comes back by itself.

PostgreSQL "goes down" for the server by losing its login (the test's own role: NOLOGIN, its
sessions terminated), which is what a stopped server looks like from the client, without
stopping the PostgreSQL other tests use. SQLite fails by another connection holding the write
lock past the server's busy timeout (``?timeout=0.3`` in the URL) — "database is locked".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.conftest import Commands, Server
from tests.storage.conftest import PG_ADMIN_URL, DurableServer, pg_url, sqlite_locked, wait_ready
from tests.support.waiting import until


@contextmanager
def pg_down(role: str) -> Iterator[None]:
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'alter role "{role}" nologin'))
        conn.execute(
            text("select pg_terminate_backend(pid) from pg_stat_activity where usename = :r"),
            {"r": role},
        )
    try:
        yield
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'alter role "{role}" login'))
        admin.dispose()


@pytest.fixture
def pg_role(pg_schema: str) -> Iterator[str]:
    role = f"{pg_schema}_user"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'create role "{role}" login'))
        conn.execute(text(f'grant all on schema "{pg_schema}" to "{role}"'))
    yield role
    with admin.connect() as conn:
        conn.execute(
            text("select pg_terminate_backend(pid) from pg_stat_activity where usename = :r"),
            {"r": role},
        )
        conn.execute(text(f'drop owned by "{role}" cascade'))
        conn.execute(text(f'drop role "{role}"'))
    admin.dispose()


def exercise(srv: DurableServer, outage: Callable[[], object]) -> None:
    xs = Commands(srv.url)
    http = httpx.Client(base_url=srv.url, timeout=30)
    try:
        first = xs("XADD", "s", "*", "n", "1")
        assert xs("XGROUP", "CREATE", "s", "g", "0") == "OK"
        other = xs("XADD", "t", "*", "n", "1")
        with outage():  # type: ignore[attr-defined]
            r = http.post("/", json=["XADD", "s", "*", "n", "2"])  # in flight when it fails
            assert r.status_code == 503, r.text
            assert r.json()["error"].startswith("ERR storage unavailable"), r.text
            r = http.post("/", json=["XADD", "s", "*", "n", "3"])  # refused before it runs
            assert r.status_code == 503 and r.headers["retry-after"] == "1"
            r = http.post("/", json=["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"])
            assert r.status_code == 503
            # The in-flight entry is applied in memory but not durable: no read shows it.
            for read in (["XRANGE", "s", "-", "+"], ["XLEN", "s"], ["KEYS", "*"]):
                r = http.post("/", json=read)
                assert r.status_code == 503 and r.headers["retry-after"] == "1", r.text
            r = http.get("/v1/streams/s/entries")
            assert r.status_code == 503, r.text
            assert r.headers["content-type"] == "application/problem+json"
            # The rest of the keyspace is committed state: it stays readable.
            assert xs("XRANGE", "t", "-", "+") == [[other, ["n", "1"]]]
            r = http.get("/v1/streams/t/entries")
            assert r.status_code == 200 and [e["id"] for e in r.json()["entries"]] == [other]
            assert http.get("/readyz").json()["storage"] != "ok"
        # Back without a restart: the in-flight record is committed, writes are accepted.
        until(lambda: http.get("/readyz").json()["storage"] == "ok", 15, "storage ok again")
        assert [e[1] for e in xs("XRANGE", "s", "-", "+")] == [["n", "1"], ["n", "2"]]
        assert xs("XADD", "s", "*", "n", "4") > first
        assert [e[1][1] for e in xs("XRANGE", "s", "-", "+")] == ["1", "2", "4"]
    finally:
        xs.client.close()
        http.close()


@pytest.mark.timeout(90)
def test_sqlite_failure(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    srv = DurableServer(tmp_path, f"sqlite:///{db}?timeout=0.3")
    try:
        exercise(srv, lambda: sqlite_locked(db))
        srv.stop()
        srv = DurableServer(tmp_path, f"sqlite:///{db}")
        xs = Commands(srv.url)
        assert [e[1][1] for e in xs("XRANGE", "s", "-", "+")] == ["1", "2", "4"]
        xs.client.close()
    finally:
        srv.stop()


@pytest.mark.timeout(90)
def test_postgresql_failure(tmp_path: Path, pg_schema: str, pg_role: str) -> None:
    url = pg_url(pg_schema, pg_role)
    srv = DurableServer(tmp_path, url)
    try:
        exercise(srv, lambda: pg_down(pg_role))
        srv.kill()  # no shutdown snapshot: the journal alone must hold everything
        srv = DurableServer(tmp_path, url)
        xs = Commands(srv.url)
        assert [e[1][1] for e in xs("XRANGE", "s", "-", "+")] == ["1", "2", "4"]
        xs.client.close()
    finally:
        srv.stop()


@pytest.mark.timeout(90)
def test_postgresql_down_at_start_is_not_ready_until_it_is_back(
    tmp_path: Path, pg_schema: str, pg_role: str
) -> None:
    url = pg_url(pg_schema, pg_role)
    with pg_down(pg_role):
        srv = Server(tmp_path, "--database-url", url)  # healthy: alive, not ready
        try:
            time.sleep(1)  # a while later: still not ready
            r = httpx.get(srv.url + "/readyz", timeout=5)
            assert r.status_code == 503 and r.json()["status"] == "recovering"
        except BaseException:
            srv.stop()
            raise
    try:
        wait_ready(srv.url)
        xs = Commands(srv.url)
        assert xs("XADD", "s", "1-1", "a", "b") == "1-1"
        xs.client.close()
    finally:
        srv.stop()
