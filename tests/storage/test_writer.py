"""The journal writer: group commit, the three fsync modes, and what a database failure does."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError

from app.durability import StorageUnavailable
from app.engine.codec import decode_record, encode_record, record_from_wire
from app.engine.effects import KeyDeleted, PendingSet, Record
from app.engine.ids import StreamID
from app.settings import FsyncMode
from app.storage import migrate
from app.storage.database import Database, create_db_engine
from app.storage.tables import journal
from app.storage.writer import JournalWriter
from tests.support.waiting import until_async


def wire(record: list[Any]) -> Record:
    """A record written in its stored form (the bytes the tests expect to find)."""
    return record_from_wire(record)


class FlakyDatabase(Database):
    """A real database that can be told to fail, as a stopped server or a full disk would."""

    broken = False
    calls = 0

    def append(self, rows: Sequence[tuple[int, bytes]], *, retry: bool = False) -> None:
        self.calls += 1
        if self.broken:
            raise OperationalError("INSERT", {}, ConnectionRefusedError("database is down"))
        super().append(rows, retry=retry)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[FlakyDatabase]:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'x.db'}")
    migrate.upgrade(engine)
    d = FlakyDatabase(engine)
    yield d
    d.close()


def rows(db: Database) -> list[tuple[int, bytes]]:
    """The stored records, one (seq, record) each, whatever rows hold them."""
    out: list[tuple[int, bytes]] = []
    for row in db.rows_after(0):
        first, last, blob = row.seq, row.last_seq, row.records
        records = orjson.loads(blob)
        assert len(records) == last - first + 1
        out += [(first + i, orjson.dumps(r)) for i, r in enumerate(records)]
    return out


def row_count(db: Database) -> int:
    with db.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(journal)).scalar() or 0)


async def test_records_of_one_tick_are_one_transaction(db: FlakyDatabase) -> None:
    w = JournalWriter(db, FsyncMode.ALWAYS)
    w.start(0)
    for i in range(100):
        w.append(wire([["add", "s", f"{i}-0", ["f", "v"]]]))
    await w.wait_committed()
    assert w.commits == 1 and w.committed_seq == 100 and row_count(db) == 1
    assert [s for s, _ in rows(db)] == list(range(1, 101))
    assert rows(db)[0][1] == b'[["add","s","0-0",["f","v"]]]'
    await w.close()


async def test_always_waits_for_the_commit_and_later_records_group(db: FlakyDatabase) -> None:
    w = JournalWriter(db, FsyncMode.ALWAYS)
    w.start(41)

    async def writer(i: int) -> int:
        w.append(wire([["del", f"k{i}"]]))
        await w.wait_committed()
        return w.committed_seq

    seen = await asyncio.gather(*(writer(i) for i in range(50)))
    assert all(s >= 42 for s in seen)
    assert [s for s, _ in rows(db)] == list(range(42, 92))
    assert w.commits <= 3  # group commit, not one per record
    await w.close()


async def test_everysec_replies_at_once_and_commits_within_a_second(db: FlakyDatabase) -> None:
    w = JournalWriter(db, FsyncMode.EVERYSEC)
    w.start(0)
    w.append(wire([["flush"]]))
    await asyncio.sleep(0)
    w.append(wire([["flush"]]))
    t0 = time.monotonic()
    await w.wait_committed()  # returns at once
    assert time.monotonic() - t0 < 0.05
    await until_async(lambda: w.committed_seq >= 2, 2, "the second record committed")
    assert time.monotonic() - t0 < 1.2
    assert len(rows(db)) == 2
    await w.close()


async def test_off_journals_nothing_but_counts(db: FlakyDatabase) -> None:
    w = JournalWriter(db, FsyncMode.OFF)
    w.start(7)
    w.append(wire([["flush"]]))
    await w.wait_committed()
    await w.close()
    assert rows(db) == [] and w.last_seq == 8 and db.calls == 0


async def test_append_before_start_is_refused(db: FlakyDatabase) -> None:
    w = JournalWriter(db, FsyncMode.ALWAYS)
    with pytest.raises(RuntimeError, match="before recovery"):
        w.append(wire([["flush"]]))


async def test_database_failure_refuses_writes_then_commits_the_pending_ones(
    db: FlakyDatabase,
) -> None:
    w = JournalWriter(db, FsyncMode.ALWAYS, retry_s=0.05)
    w.start(0)
    w.append(wire([["new", "a"]]))
    await w.wait_committed()
    db.broken = True
    w.append(wire([["new", "b"]]))
    with pytest.raises(StorageUnavailable, match=r"storage unavailable: .*database is down"):
        await w.wait_committed()
    with pytest.raises(StorageUnavailable):
        w.check_writable()
    await until_async(lambda: db.calls >= 3, what="two retries")
    assert w.failure is not None  # retries keep failing
    db.broken = False
    await until_async(lambda: w.failure is None, what="a retry that commits")
    w.check_writable()
    assert [s for s, _ in rows(db)] == [1, 2]  # the in-flight record, committed once
    w.append(wire([["new", "c"]]))
    await w.wait_committed()
    assert [s for s, _ in rows(db)] == [1, 2, 3]
    await w.close()


def test_a_retry_is_idempotent_by_seq(db: FlakyDatabase) -> None:
    db.append([(1, b"[]"), (2, b"[]")])
    db.append([(1, b"[]"), (2, b"[]"), (3, b"[]")], retry=True)  # after an unknown outcome
    assert [s for s, _ in rows(db)] == [1, 2, 3] and row_count(db) == 2


def test_a_large_group_is_split_into_rows(db: FlakyDatabase) -> None:
    db.append([(i, b'["x"]') for i in range(1, 12_001)])
    assert row_count(db) == 3 and [s for s, _ in rows(db)] == list(range(1, 12_001))


async def test_a_second_writer_on_the_database_stops_writes(db: FlakyDatabase) -> None:
    db.append([(1, b'[["flush"]]')])  # another process took seq 1
    w = JournalWriter(db, FsyncMode.ALWAYS, retry_s=0.05)
    w.start(0)
    w.append(wire([["new", "a"]]))
    with pytest.raises(StorageUnavailable, match="another process is writing"):
        await w.wait_committed()
    tried = db.calls
    await until_async(lambda: db.calls >= tried + 2, what="two more tries")
    # Its retries conflicted again: writes stay refused.
    with pytest.raises(StorageUnavailable, match="another process is writing"):
        w.check_writable()
    await w.close(timeout_s=0.2)
    assert rows(db) == [(1, b'[["flush"]]')]


def test_records_with_surrogate_escaped_strings_round_trip() -> None:
    """A binary value kept as a str with surrogate escapes is not valid UTF-8 for orjson."""
    record = wire([["add", "s", "1-0", ["f", b"\xff\x00".decode("utf-8", "surrogateescape")]]])
    assert decode_record(encode_record(record)) == record
    assert encode_record([KeyDeleted(key="k")]) == b'[["del","k"]]'


class HeldDatabase(FlakyDatabase):
    """Commits wait until the test lets them through (a slow disk, a held lock)."""

    def __init__(self, engine: object) -> None:
        super().__init__(engine)  # type: ignore[arg-type]
        import threading

        self.gate = threading.Event()
        self.entered = threading.Event()  # a commit is under way, held at the gate

    def append(self, rows: Sequence[tuple[int, bytes]], *, retry: bool = False) -> None:
        self.entered.set()
        self.gate.wait(10)
        super().append(rows, retry=retry)


async def _pending(db: HeldDatabase, aw: asyncio.Future[None] | asyncio.Task[None]) -> bool:
    """Whether ``aw`` still waits once the commit it needs is held inside the database:
    nothing it could wait for has been committed, so a done ``aw`` did not wait."""
    await until_async(db.entered.is_set, what="the commit held at the gate")
    await asyncio.sleep(0)  # a wake-up already scheduled would run in this turn
    return not aw.done()


async def test_a_reply_waits_only_for_the_records_of_the_keys_it_shows(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'x.db'}")
    migrate.upgrade(engine)
    db = HeldDatabase(engine)
    w = JournalWriter(db, FsyncMode.ALWAYS)
    w.start(0)
    w.append(wire([["add", "s", "1-0", ["f", "v"]]]))
    on_s = asyncio.ensure_future(w.wait_visible(["s"]))
    on_all = asyncio.ensure_future(w.wait_visible(None))
    await w.wait_visible(["t"])  # nothing uncommitted on t: at once
    await w.wait_visible([])
    assert await _pending(db, on_s) and await _pending(db, on_all)
    db.gate.set()
    await asyncio.wait_for(asyncio.gather(on_s, on_all), 5)
    assert w.committed_seq == 1
    await w.close()
    db.close()


async def test_the_map_of_uncommitted_keys_stays_bounded(db: FlakyDatabase) -> None:
    """A record per distinct key, committed: the writer does not keep every key ever written."""
    w = JournalWriter(db, FsyncMode.ALWAYS)
    w.start(0)
    for round_ in range(5):
        for i in range(3000):
            w.append(wire([["add", f"k{round_}-{i}", "1-0", ["f", "v"]]]))
        await w.wait_committed()
    assert len(w._key_seq) < 2 * 3000
    await w.wait_visible(["k0-0"])  # long committed: at once
    await w.close()


async def test_a_flush_holds_every_key_until_committed(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'x.db'}")
    migrate.upgrade(engine)
    db = HeldDatabase(engine)
    w = JournalWriter(db, FsyncMode.ALWAYS)
    w.start(0)
    w.append(wire([["flush"]]))
    on_t = asyncio.ensure_future(w.wait_visible(["t"]))
    assert await _pending(db, on_t)
    db.gate.set()
    await asyncio.wait_for(on_t, 5)
    await w.close()
    db.close()


async def test_during_an_outage_only_keys_with_uncommitted_records_are_refused(
    db: FlakyDatabase,
) -> None:
    w = JournalWriter(db, FsyncMode.ALWAYS, retry_s=0.05)
    w.start(0)
    w.append(wire([["add", "t", "1-0", ["f", "v"]]]))
    await w.wait_committed()
    db.broken = True
    w.append(wire([["add", "s", "1-0", ["f", "v"]]]))
    with pytest.raises(StorageUnavailable):
        await w.wait_visible(["s"])
    with pytest.raises(StorageUnavailable):
        await w.wait_visible(None)
    await w.wait_visible(["t"])  # committed state: still readable
    db.broken = False  # the writer's retry commits it; then the read is served
    await until_async(lambda: w.failure is None, 5, "a retry that commits")
    await w.wait_visible(["s"])
    assert w.committed_seq == 2
    await w.close()


@pytest.mark.parametrize("mode", [FsyncMode.EVERYSEC, FsyncMode.OFF])
async def test_other_modes_never_hold_a_reply(db: FlakyDatabase, mode: FsyncMode) -> None:
    w = JournalWriter(db, mode)
    w.start(0)
    db.broken = True
    w.append(wire([["add", "s", "1-0", ["f", "v"]]]))
    await w.wait_visible(["s"])
    await w.wait_visible(None)
    db.broken = False
    await w.close()


async def test_a_record_the_codec_refuses_is_neither_written_nor_acknowledged(
    db: FlakyDatabase,
) -> None:
    """A delivery count of 2**64 once went to the journal as an integer that read back as a
    float, and recovery failed on it for good. Such a record is refused before it is
    numbered: nothing is written, the write answers 503, later writes are refused (memory
    holds a step the journal does not), and so are reads of the key it touched; the
    committed state of other keys stays readable."""
    w = JournalWriter(db, FsyncMode.ALWAYS)
    w.start(0)
    w.append(wire([["add", "other", "1-0", ["f", "v"]]]))
    await w.wait_committed()
    bad = PendingSet(
        key="s",
        group="g",
        id=StreamID(1, 0),
        consumer="c",
        delivered_at_ms=5,
        delivery_count=2**64,
    )
    with pytest.raises(StorageUnavailable, match="cannot store exactly"):
        w.append([bad])
    assert w.last_seq == 1
    await w.flush()
    assert [s for s, _ in rows(db)] == [1]
    with pytest.raises(StorageUnavailable, match="until xstreams restarts"):
        w.check_writable()
    with pytest.raises(StorageUnavailable):
        await w.wait_visible(["s"])
    with pytest.raises(StorageUnavailable):
        await w.wait_visible(None)
    await w.wait_visible(["other"])
    assert w.failure is not None
    await w.close()


async def test_a_hold_keeps_back_what_was_appended_since_it_began(db: FlakyDatabase) -> None:
    """An idempotent request's writes and its kept response commit together: nothing
    appended after its hold began is committed before the hold ends; earlier records are."""
    w = JournalWriter(db, FsyncMode.ALWAYS)
    w.start(0)
    w.append(wire([["del", "before"]]))
    token = w.hold()
    w.append(wire([["del", "write"]]))
    flushed = asyncio.ensure_future(w.flush())
    await until_async(lambda: w.committed_seq == 1, 5, "the record before the hold")
    await asyncio.sleep(0.05)
    assert w.committed_seq == 1 and not flushed.done()
    w.append(wire([["remember", "\x00idempotency", "k", ["", ""], 1]]))
    w.release(token)
    await asyncio.wait_for(flushed, 5)
    assert [s for s, _ in rows(db)] == [1, 2, 3]
    assert w.committed_seq == 3
    await w.close()


async def test_a_closing_writer_commits_through_a_hold(db: FlakyDatabase) -> None:
    w = JournalWriter(db, FsyncMode.ALWAYS)
    w.start(0)
    w.hold()
    w.append(wire([["del", "k"]]))
    await w.close()
    assert [s for s, _ in rows(db)] == [1]
