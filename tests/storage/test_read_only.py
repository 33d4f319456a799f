"""A database that cannot be written is found at start: not ready, with the reason, no write.

Before, a read-only database started and reported ready; a write was then applied in memory
and answered 503 by the failed commit (and served to readers until a restart took it back).
Now the service stays alive but not ready, names the database and why, refuses every request
at once, and loads once the database takes writes again — without a restart.

SQLite is made read-only by its mode (0444 file, 0555 folder); as root, for whom modes do not
count, by the immutable attribute (``chattr +i``), which the kernel enforces for root too.
PostgreSQL refuses writes through ``default_transaction_read_only``: in the URL's ``options``,
or set on the test's role and then reset (to see the service load by itself).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.conftest import REQUIRE_SERVICES, Commands, Server
from tests.storage.conftest import PG_ADMIN_URL, DurableServer, pg_url, wait_ready
from tests.storage.test_faults import pg_role  # noqa: F401  (a fixture)
from tests.support.waiting import until

ROOT = os.geteuid() == 0


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """``path`` (a file or a folder) refuses writes inside the block."""
    mode = path.stat().st_mode
    if ROOT:
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
        if done.returncode != 0:
            why = f"cannot make {path} immutable as root: {done.stderr.strip()}"
            if REQUIRE_SERVICES:
                pytest.fail(why)
            pytest.skip(why)
    else:
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        yield
    finally:
        if ROOT:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        path.chmod(mode)


def not_ready_reason(url: str, timeout_s: float = 20) -> str:
    """The reason /readyz gives once the service waits for its database."""

    def reason() -> str | None:
        r = httpx.get(url + "/readyz", timeout=5)
        assert r.status_code == 503, r.text
        return r.json().get("reason")  # type: ignore[no-any-return]

    return str(until(reason, timeout_s, "a reason given by /readyz"))


def assert_writes_refused(url: str) -> None:
    with httpx.Client(base_url=url, timeout=30) as http:
        r = http.post("/", json=["XADD", "s", "*", "n", "2"])
        assert r.status_code == 503, r.text
        assert "read-only" in r.json()["error"], r.text
        r = http.post("/v1/streams/s/entries", json={"fields": {"n": "3"}})
        assert r.status_code == 503, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        assert "read-only" in r.json()["detail"], r.text
        r = http.post("/", json=["XLEN", "s"])  # nothing is served: nothing is loaded
        assert r.status_code == 503, r.text


def seeded(tmp_path: Path, url: str) -> None:
    """A database holding one entry, its service stopped cleanly."""
    srv = DurableServer(tmp_path, url)
    xs = Commands(srv.url)
    assert xs("XADD", "s", "1-1", "n", "1") == "1-1"
    xs.client.close()
    srv.stop()


@pytest.mark.timeout(90)
@pytest.mark.parametrize("what", ["file", "folder"])
def test_read_only_sqlite_is_not_ready_and_loads_once_writable(tmp_path: Path, what: str) -> None:
    folder = tmp_path / "db"
    folder.mkdir()
    db = folder / "x.db"
    url = f"sqlite:///{db}"
    seeded(tmp_path, url)
    assert not Path(f"{db}-wal").exists()  # a clean stop leaves no WAL: it must be created
    srv: Server | None = None
    try:
        with read_only(db if what == "file" else folder):
            srv = Server(tmp_path, "--database-url", url)  # alive, not ready
            reason = not_ready_reason(srv.url)
            assert f"the database {url} is read-only (not writable)" in reason, reason
            assert str(db if what == "file" else folder) in reason, reason
            assert_writes_refused(srv.url)
        wait_ready(srv.url)  # writable again: it loads by itself
        xs = Commands(srv.url)
        assert xs("XRANGE", "s", "-", "+") == [["1-1", ["n", "1"]]]  # no refused write
        assert xs("XADD", "s", "2-1", "n", "4") == "2-1"
        xs.client.close()
    finally:
        if srv is not None:
            srv.stop()


@pytest.mark.timeout(90)
def test_postgresql_read_only_by_url_options_is_not_ready(tmp_path: Path, pg_schema: str) -> None:
    seeded(tmp_path, pg_url(pg_schema))
    url = pg_url(pg_schema) + "%20-cdefault_transaction_read_only%3Don"
    srv = Server(tmp_path, "--database-url", url)
    try:
        reason = not_ready_reason(srv.url)
        assert "is read-only (not writable): read-only transaction" in reason, reason
        assert "127.0.0.1" in reason, reason
        assert_writes_refused(srv.url)
    finally:
        srv.stop()


@pytest.mark.timeout(90)
def test_postgresql_read_only_role_loads_once_writable(
    tmp_path: Path,
    pg_schema: str,
    pg_role: str,  # noqa: F811
) -> None:
    url = pg_url(pg_schema, pg_role)
    seeded(tmp_path, url)
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'alter role "{pg_role}" set default_transaction_read_only = on'))
        srv = Server(tmp_path, "--database-url", url)
        try:
            assert "read-only transaction" in not_ready_reason(srv.url)
            assert_writes_refused(srv.url)
            with admin.connect() as conn:
                conn.execute(text(f'alter role "{pg_role}" reset default_transaction_read_only'))
            wait_ready(srv.url)
            xs = Commands(srv.url)
            assert xs("XRANGE", "s", "-", "+") == [["1-1", ["n", "1"]]]
            assert xs("XADD", "s", "2-1", "n", "4") == "2-1"
            xs.client.close()
        finally:
            srv.stop()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'alter role "{pg_role}" reset default_transaction_read_only'))
        admin.dispose()
