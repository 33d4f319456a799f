"""With ``--fsync always`` no reply shows state that a crash can take back.

A commit is held up by another connection holding the database's write lock: an XADD is then
applied in memory but not durable, and the server is killed before the lock goes. Every
reader racing it (a plain range on the command endpoint and over REST, a blocked XREAD, a REST
long poll, XINFO, KEYS) must either wait or answer without the entry: after the restart the
entry is gone, never acknowledged, and nobody was shown it. A stream the pending write does not
touch stays readable meanwhile.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.storage.conftest import DurableServer, pg_url, sqlite_locked
from tests.support.polling import until
from tests.support.waiting import parked

# Long enough that the held-up commit neither fails nor gets through during the test.
LOCK_WAIT = "60"
READ_TIMEOUT_S = 1.5


@contextmanager
def pg_journal_lock(schema: str) -> Iterator[None]:
    engine = create_engine(pg_url(schema))
    conn = engine.connect()
    trans = conn.begin()
    conn.execute(text("lock table xstreams_journal in access exclusive mode"))
    try:
        yield
    finally:
        trans.rollback()
        conn.close()
        engine.dispose()


class Readers:
    """Requests racing the held-up write; every entry ID any reply carried is kept."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.seen: set[str] = set()
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []

    def start(self, name: str, request: Callable[[httpx.Client], httpx.Response]) -> None:
        def run() -> None:
            with httpx.Client(base_url=self.url, timeout=READ_TIMEOUT_S) as client:
                try:
                    r = request(client)
                except httpx.HTTPError:
                    return  # still waiting when the client gave up: it showed nothing
                with self.lock:
                    self.seen |= ids_in(r.text)

        t = threading.Thread(target=run, name=name, daemon=True)
        t.start()
        self.threads.append(t)

    def join(self) -> None:
        for t in self.threads:
            t.join(READ_TIMEOUT_S + 5)


def ids_in(body: str) -> set[str]:
    return set(re.findall(r"\b\d{10,}-\d+\b", body))


def cmd(*args: str) -> Callable[[httpx.Client], httpx.Response]:
    return lambda c: c.post("/", json=list(args))


def get(path: str) -> Callable[[httpx.Client], httpx.Response]:
    return lambda c: c.get(path)


def _uncommitted(http: httpx.Client) -> float:
    """The journal's records appended and not committed yet (/metrics)."""
    text = http.get("/metrics").text
    found = re.search(r"^xstreams_journal_uncommitted_records (\S+)$", text, re.MULTILINE)
    assert found is not None, text[:500]
    return float(found.group(1))


def race(srv: DurableServer, hold: Callable[[], Any]) -> None:
    http = httpx.Client(base_url=srv.url, timeout=10)
    kept = http.post("/", json=["XADD", "s", "*", "n", "1"]).json()["result"]
    other = http.post("/", json=["XADD", "t", "*", "n", "1"]).json()["result"]
    readers = Readers(srv.url)
    # Blocked before the write: the write serves them inside its own step.
    readers.start("xread", cmd("XREAD", "BLOCK", "20000", "STREAMS", "s", "$"))
    readers.start("long-poll", get("/v1/streams/s/entries?after=$&block_ms=20000"))
    parked(srv, 2)
    written: list[Any] = []
    with hold():

        def write() -> None:
            try:
                r = httpx.post(srv.url + "/", json=["XADD", "s", "*", "n", "2"], timeout=3)
            except httpx.HTTPError:
                return  # its reply waits for the commit: not acknowledged
            written.append(r)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        # Nothing a client reads shows when the write is applied in memory (that is the point);
        # the journal's gauge does: race the readers once it counts the record uncommitted.
        until(lambda: _uncommitted(http) >= 1, what="the write applied, not committed")
        for name, request in [
            ("xrange", cmd("XRANGE", "s", "-", "+")),
            ("xrevrange", cmd("XREVRANGE", "s", "+", "-", "COUNT", "1")),
            ("xlen", cmd("XLEN", "s")),
            ("xinfo", cmd("XINFO", "STREAM", "s")),
            ("rest-range", get("/v1/streams/s/entries")),
            ("rest-info", get("/v1/streams/s")),
            ("rest-read", get("/v1/read?stream=s&after=0")),
        ]:
            readers.start(name, request)
        # A stream with nothing uncommitted answers at once.
        r = http.post("/", json=["XRANGE", "t", "-", "+"])
        assert r.status_code == 200 and r.json()["result"] == [[other, ["n", "1"]]]
        readers.join()
        writer.join(READ_TIMEOUT_S + 5)
        assert not any(isinstance(w, httpx.Response) for w in written), "the write was acked"
        srv.kill()  # the held-up record never reaches the database
    http.close()
    again = DurableServer(srv.data_dir, srv.db_url)
    try:
        with httpx.Client(base_url=again.url, timeout=10) as c:
            present = {e[0] for e in c.post("/", json=["XRANGE", "s", "-", "+"]).json()["result"]}
        assert present == {kept}, "the unacknowledged entry survived: the lock did not hold"
        shown = readers.seen - present - {other}
        assert not shown, f"readers were shown {sorted(shown)}, which the crash took back"
    finally:
        again.stop()


class Visible(DurableServer):
    def __init__(self, data_dir: Path, db_url: str) -> None:
        self.data_dir, self.db_url = data_dir, db_url
        super().__init__(data_dir, db_url)


@pytest.mark.timeout(90)
def test_sqlite_readers_see_nothing_a_crash_takes_back(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    srv = Visible(tmp_path, f"sqlite:///{db}?timeout={LOCK_WAIT}")
    try:
        race(srv, lambda: sqlite_locked(db, "IMMEDIATE"))
    finally:
        srv.stop()


@pytest.mark.timeout(90)
def test_postgresql_readers_see_nothing_a_crash_takes_back(tmp_path: Path, pg_schema: str) -> None:
    srv = Visible(tmp_path, pg_url(pg_schema))
    try:
        race(srv, lambda: pg_journal_lock(pg_schema))
    finally:
        srv.stop()
