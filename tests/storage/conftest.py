"""Fixtures for the storage tests: a database of each kind, and durable servers on it.

PostgreSQL is the one on 127.0.0.1:5432 (trust auth, database ``test``); each test gets a
schema of its own (``xs_test_<random>``, through ``search_path``), dropped afterwards, so
nothing else in that database is touched. Without PostgreSQL the PostgreSQL cases skip,
unless ``XSTREAMS_REQUIRE_SERVICES=1`` (set by .ci/run), which makes them fail.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from app.storage import migrate
from app.storage.database import Database, create_db_engine
from tests.conftest import REQUIRE_SERVICES, Server
from tests.support.waiting import until

PG_HOST = os.environ.get("XSTREAMS_TEST_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("XSTREAMS_TEST_PG_PORT", "5432"))
PG_USER = os.environ.get("XSTREAMS_TEST_PG_USER", "postgres")
PG_DB = os.environ.get("XSTREAMS_TEST_PG_DB", "test")
PG_ADMIN_URL = f"postgresql+psycopg://{PG_USER}@{PG_HOST}:{PG_PORT}/{PG_DB}"


def pg_url(schema: str, user: str = PG_USER) -> str:
    return (
        f"postgresql+psycopg://{user}@{PG_HOST}:{PG_PORT}/{PG_DB}?options=-csearch_path%3D{schema}"
    )


def _pg_problem() -> str | None:
    try:
        engine = create_engine(PG_ADMIN_URL, connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.execute(text("select 1"))
        engine.dispose()
    except Exception as e:
        return f"PostgreSQL is not usable at {PG_ADMIN_URL}: {type(e).__name__}: {e}"
    return None


def require_pg() -> None:
    problem = _pg_problem()
    if problem is not None:
        if REQUIRE_SERVICES:
            pytest.fail(problem + " and XSTREAMS_REQUIRE_SERVICES=1")
        pytest.skip(problem)


@pytest.fixture
def pg_schema() -> Iterator[str]:
    """A fresh PostgreSQL schema, dropped with everything in it afterwards."""
    require_pg()
    schema = f"xs_test_{secrets.token_hex(4)}"
    admin = create_engine(PG_ADMIN_URL)
    with admin.begin() as conn:
        conn.execute(text(f'create schema "{schema}"'))
    yield schema
    with admin.begin() as conn:
        conn.execute(text(f'drop schema "{schema}" cascade'))
    admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database URL of each kind, empty."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'xstreams.db'}"
    schema: str = request.getfixturevalue("pg_schema")
    return pg_url(schema)


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    """A migrated, empty database of each kind, as storage sees it."""
    engine = create_db_engine(db_url)
    migrate.upgrade(engine)
    d = Database(engine)
    yield d
    d.close()


@contextmanager
def sqlite_locked(path: Path, mode: str = "EXCLUSIVE") -> Iterator[None]:
    """Another connection holding SQLite's lock: ``EXCLUSIVE`` stops readers and writers,
    ``IMMEDIATE`` only writers (a commit then waits, or fails past the busy timeout)."""
    conn = sqlite3.connect(path, timeout=5, isolation_level=None)
    conn.execute(f"BEGIN {mode}")
    try:
        yield
    finally:
        conn.execute("ROLLBACK")
        conn.close()


class DurableServer(Server):
    """``xstreams serve`` on ``db_url``, returned once recovery is done (``/readyz`` 200)."""

    def __init__(
        self,
        data_dir: Path,
        db_url: str,
        *extra: str,
        fsync: str = "always",
        env: dict[str, str] | None = None,
    ) -> None:
        super().__init__(data_dir, "--database-url", db_url, "--fsync", fsync, *extra, env=env)
        wait_ready(self.url)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


def wait_ready(url: str, timeout_s: float = 30) -> None:
    def ready() -> bool:
        try:
            return httpx.get(url + "/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    until(ready, timeout_s, f"{url} ready")
