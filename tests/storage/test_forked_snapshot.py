"""Snapshots encoded in a forked child (``app.storage.forked``), and the in-process fallback."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any, NoReturn

import pytest

from app.engine.clock import ManualClock
from app.engine.snapshot import decode_snapshot, encode_snapshot
from app.engine.store import Store
from app.settings import FsyncMode
from app.storage import database, forked, migrate
from app.storage.database import Database, create_db_engine
from app.storage.forked import ChildFailed, fork_encoder
from app.storage.recovery import recover
from app.storage.snapshots import Snapshotter
from app.storage.writer import JournalWriter
from tests.engine.helpers import T0

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")


def busy_store(journal: Any = None) -> Store:
    """A keyspace with most of what a snapshot holds: several nodes, deletions, a group with
    pending entries and acks, IDMP state, CONFIG SET and a kept response."""
    store = Store(clock=ManualClock(T0), journal=journal)
    store.execute(["CONFIG", "SET", "stream-node-max-entries", "8"])
    for i in range(40):
        store.execute(["XADD", "s", "*", "f", str(i), "g", "x" * (i % 5)])
    store.execute(["XADD", "t", "5-1", "a", "1"])
    store.execute(["XDEL", "s", f"{T0}-3", f"{T0}-17"])
    store.execute(["XGROUP", "CREATE", "s", "g", "0"])
    store.execute(["XREADGROUP", "GROUP", "g", "c1", "COUNT", "10", "STREAMS", "s", ">"])
    store.execute(["XACK", "s", "g", f"{T0}-1", f"{T0}-2"])
    store.execute(["XADD", "i", "IDMP", "p1", "iid-1", "*", "k", "v"])
    store.remember("key:a\nreq-1", b"\x01" * 32, b"HTTP/1.1 200 kept")
    return store


def test_the_child_encodes_the_same_bytes_as_the_process() -> None:
    store = busy_store()
    child = fork_encoder(store)
    assert child is not None
    assert child.collect() == encode_snapshot(store.snapshot_view())


def test_the_child_sees_the_state_at_the_fork_not_later_writes() -> None:
    store = busy_store()
    expected = encode_snapshot(store.snapshot_view())
    child = fork_encoder(store)
    assert child is not None
    for i in range(20):  # the parent moves on at once
        store.execute(["XADD", "s", "*", "later", str(i)])
    store.execute(["XTRIM", "s", "MAXLEN", "3"])
    assert child.collect() == expected


def test_a_failing_child_is_reported_and_reaped(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(_view: Any) -> NoReturn:
        raise ValueError("cannot encode")

    monkeypatch.setattr(forked, "encode_snapshot", fail)
    child = fork_encoder(busy_store())
    assert child is not None
    with pytest.raises(ChildFailed, match=f"exited with status {forked.FAILED}"):
        child.collect()
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)  # reaped


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Database:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'x.db'}")
    migrate.upgrade(engine)
    return Database(engine)


async def _snapshotting(db: Database, *, fork: bool) -> tuple[Store, Snapshotter, JournalWriter]:
    writer = JournalWriter(db, FsyncMode.ALWAYS)
    writer.start(0)
    store = busy_store(writer)
    return store, Snapshotter(db, store, writer, fork=fork), writer


def _recovered(db: Database) -> bytes:
    store = Store(clock=ManualClock(T0))
    recover(db, store)
    return encode_snapshot(store.snapshot_view())


async def test_writes_during_the_childs_encoding_are_journaled_after_it(db: Database) -> None:
    """The snapshot covers exactly the records before the fork; what the loop appends while
    the child encodes is in the journal after that position, and comes back on recovery."""
    store, snaps, writer = await _snapshotting(db, fork=True)
    covers = writer.last_seq
    at_fork = encode_snapshot(store.snapshot_view())
    taking = asyncio.create_task(snaps.take())
    await asyncio.sleep(0)  # the task forked and waits for the child
    for i in range(30):
        store.execute(["XADD", "s", "*", "during", str(i)])
    store.execute(["XGROUP", "CREATECONSUMER", "s", "g", "c2"])
    taken = await taking
    assert (taken.covers_seq, snaps.forked, snaps.taken) == (covers, 1, 1)
    assert taken.fork_us > 0
    await writer.close()
    stored = db.newest_snapshot()
    assert stored is not None and stored.covers_seq == covers
    assert stored.data == at_fork
    assert _recovered(db) == encode_snapshot(store.snapshot_view())


@pytest.mark.parametrize("how", ["no fork", "fork fails", "fork off"])
async def test_without_fork_the_process_encodes(
    how: str, sqlite_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    if how == "no fork":
        monkeypatch.delattr(os, "fork")
    elif how == "fork fails":

        def refuse() -> NoReturn:
            raise BlockingIOError(11, "Resource temporarily unavailable")

        monkeypatch.setattr(os, "fork", refuse)
    store, snaps, writer = await _snapshotting(sqlite_db, fork=how != "fork off")
    expected = encode_snapshot(store.snapshot_view())
    taken = await snaps.take()
    assert (snaps.taken, snaps.forked, taken.fork_us) == (1, 0, 0)
    await writer.close()
    stored = sqlite_db.newest_snapshot()
    assert stored is not None and (stored.covers_seq, stored.data) == (taken.covers_seq, expected)
    assert _recovered(sqlite_db) == expected
    sqlite_db.close()


async def test_a_child_killed_midway_stores_nothing(
    sqlite_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    def killed(_view: Any) -> NoReturn:
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")

    monkeypatch.setattr(forked, "encode_snapshot", killed)
    store, snaps, writer = await _snapshotting(sqlite_db, fork=True)
    with pytest.raises(ChildFailed, match="killed by signal 9"):
        await snaps.take()
    assert snaps.taken == 0 and writer.records_since_snapshot == writer.last_seq
    await writer.close()
    assert sqlite_db.newest_snapshot() is None
    assert _recovered(sqlite_db) == encode_snapshot(store.snapshot_view())  # from the journal
    sqlite_db.close()


def test_the_forked_snapshot_loads(sqlite_db: Database) -> None:
    store = busy_store()
    child = fork_encoder(store)
    assert child is not None
    loaded = Store(clock=ManualClock(T0))
    decode_snapshot(child.collect(), loaded.keyspace)
    assert encode_snapshot(loaded.snapshot_view()) == encode_snapshot(store.snapshot_view())
    sqlite_db.close()


def test_a_large_sqlite_snapshot_is_written_in_slices(
    sqlite_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``SQLITE_BLOB_SLICE`` the bytes go in through blob I/O, slice by slice; a write
    that fails midway leaves the previous snapshot and the journal as they were."""
    monkeypatch.setattr(database, "SQLITE_BLOB_SLICE", 1000)
    for seq in (1, 2, 3):
        sqlite_db.append([(seq, b"[%d]" % seq)])  # a row each
    first = os.urandom(2500)
    sqlite_db.write_snapshot(1, first)
    monkeypatch.setattr(database, "SQLITE_BLOB_SLICE", 0)  # range() refuses a step of 0
    with pytest.raises(ValueError):
        sqlite_db.write_snapshot(3, os.urandom(5000))
    monkeypatch.setattr(database, "SQLITE_BLOB_SLICE", 1000)
    stored = sqlite_db.newest_snapshot()
    assert stored is not None and (stored.covers_seq, stored.data) == (1, first)
    assert [r.seq for r in sqlite_db.rows_after(0)] == [2, 3]
    second = os.urandom(5001)
    sqlite_db.write_snapshot(2, second)
    stored = sqlite_db.newest_snapshot()
    assert stored is not None and (stored.covers_seq, stored.data) == (2, second)
    assert [r.seq for r in sqlite_db.rows_after(0)] == [3]
    sqlite_db.close()


def test_the_child_keeps_no_socket_of_the_parent_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection the parent closes while the child encodes is closed at once: the peer
    reads its end, not a socket held open by the child."""
    import socket
    import threading

    def slow(_view: Any) -> NoReturn:
        threading.Event().wait()  # the child stays alive until the test kills it
        raise AssertionError("killed before")

    monkeypatch.setattr(forked, "encode_snapshot", slow)
    ours, peer = socket.socketpair()
    child = fork_encoder(busy_store())
    assert child is not None
    try:
        ours.close()
        peer.settimeout(10)
        assert peer.recv(1) == b""  # EOF while the child still runs
    finally:
        peer.close()
        child.kill()
        with pytest.raises(ChildFailed, match="killed by signal 9"):
            child.collect()


def test_a_snapshot_read_back_in_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Linux reads at most ~2 GiB per call: a larger snapshot is read in several."""
    store = busy_store()
    child = fork_encoder(store)
    assert child is not None
    real = os.pread
    monkeypatch.setattr(os, "pread", lambda fd, n, at: real(fd, min(n, 1000), at))
    assert child.collect() == encode_snapshot(store.snapshot_view())
