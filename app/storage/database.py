"""The database: engine set-up per dialect and every statement xstreams runs (SQLAlchemy Core).

All methods block; callers run them in a worker thread, never on the event loop. Every write
is one transaction, so a batch of records, or a snapshot together with the deletion of the
journal rows it covers, is all-or-nothing.

SQLite runs in WAL mode with ``synchronous=FULL`` under ``--fsync always`` (a commit is on
disk when it returns) and ``NORMAL`` otherwise. PostgreSQL keeps its own
``synchronous_commit`` (on by default), which is what ``always`` relies on.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, create_engine, delete, event, func, insert, select
from sqlalchemy.engine import make_url

from app.settings import FsyncMode
from app.storage.tables import (
    GROUP_MAX_RECORDS,
    RECORD_FORMAT,
    checksum,
    journal,
    meta,
    snapshots,
)

# How long SQLite waits for another connection's write lock before failing.
SQLITE_BUSY_TIMEOUT_S = 30.0
# SQLite: a larger snapshot goes into its row through incremental blob I/O, in slices of this
# size, each copied without the GIL. Bound as one parameter, the bytes were copied while the
# GIL was held (a 47 MB snapshot held the event loop ~60 ms).
SQLITE_BLOB_SLICE = 1 << 20
_CHUNK_ROWS = 1_000


class JournalConflict(Exception):
    """Journal rows this process numbered were written by someone else."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    id: int
    covers_seq: int
    data: bytes
    checksum: int  # as stored; recovery compares it with checksum(data)


@dataclass(frozen=True, slots=True)
class Row:
    """One journal row as stored: the records ``seq..last_seq`` and their checksum."""

    seq: int
    last_seq: int
    records: bytes
    checksum: int
    created_at_ms: int


@dataclass(frozen=True, slots=True)
class RowsSummary:
    """The journal rows from one seq on: what a truncation there would delete."""

    rows: int
    last_seq: int
    first_created_at_ms: int
    last_created_at_ms: int


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def create_db_engine(url: str, fsync: FsyncMode = FsyncMode.ALWAYS) -> Engine:
    """An Engine for ``url`` with xstreams' connection settings."""
    u = make_url(url)
    if u.get_backend_name() == "sqlite":
        connect_args: dict[str, Any] = {}
        if "timeout" not in u.query:
            connect_args["timeout"] = SQLITE_BUSY_TIMEOUT_S
        engine = create_engine(u, connect_args=connect_args)
        synchronous = "FULL" if fsync is FsyncMode.ALWAYS else "NORMAL"

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA synchronous={synchronous}")
            cur.close()

        return engine
    return create_engine(u, pool_pre_ping=True, pool_size=4, max_overflow=4)


class Database:
    """The statements of the journal, the snapshots and recovery, on one Engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        dialect = engine.dialect.name
        if dialect not in ("postgresql", "sqlite"):
            raise ValueError(f"unsupported database {dialect!r}: use SQLite or PostgreSQL")
        self._pg = dialect == "postgresql"

    @property
    def url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    # -- writing ------------------------------------------------------------------------

    def append(self, records: Sequence[tuple[int, bytes]], *, retry: bool = False) -> None:
        """Store contiguous encoded records ``(seq, record)`` as journal rows, in one
        transaction. On a retry after a commit whose outcome was unknown, the records that
        did land are skipped. Otherwise every record must be new: one already stored means
        another process writes this database, and nothing may be acknowledged then."""
        now = _now_ms()
        with self.engine.begin() as conn:
            tail = conn.execute(
                select(journal.c.last_seq).order_by(journal.c.seq.desc()).limit(1)
            ).scalar()
            if tail is not None and tail >= records[0][0]:
                if not retry:
                    raise JournalConflict(
                        f"journal records {records[0][0]}..{tail} already exist: another"
                        " process is writing this database (one xstreams per database)"
                    )
                records = [r for r in records if r[0] > tail]
                if not records:
                    return
            conn.execute(insert(journal), _rows(records, now))

    def write_snapshot(self, covers_seq: int, data: bytes) -> int:
        """Store a snapshot and drop what it makes redundant (older snapshots, covered
        journal rows), atomically; returns its id."""
        crc = checksum(data)  # here, in the caller's worker thread, not on the event loop
        sliced = not self._pg and len(data) > SQLITE_BLOB_SLICE
        with self.engine.begin() as conn:
            new_id = conn.execute(
                insert(snapshots)
                .values(
                    covers_seq=covers_seq,
                    data=func.zeroblob(len(data)) if sliced else data,
                    created_at_ms=_now_ms(),
                    checksum=crc,
                )
                .returning(snapshots.c.id)
            ).scalar_one()
            if sliced:
                view = memoryview(data)
                raw: Any = conn.connection.driver_connection  # sqlite3.Connection
                with raw.blobopen(snapshots.name, "data", new_id) as blob:
                    for at in range(0, len(view), SQLITE_BLOB_SLICE):
                        blob.write(view[at : at + SQLITE_BLOB_SLICE])
            # Never a newer one: an offline `xstreams snapshot` may race a running service's.
            conn.execute(
                delete(snapshots).where(
                    snapshots.c.covers_seq <= covers_seq, snapshots.c.id != new_id
                )
            )
            conn.execute(delete(journal).where(journal.c.last_seq <= covers_seq))
        return int(new_id)

    # -- reading ------------------------------------------------------------------------

    def record_format(self) -> str | None:
        with self.engine.connect() as conn:
            value = conn.execute(
                select(meta.c.value).where(meta.c.key == "record_format")
            ).scalar_one_or_none()
        return None if value is None else str(value)

    def newest_snapshot(self) -> Snapshot | None:
        sql = (
            f"SELECT id, covers_seq, data, checksum FROM {snapshots.name}"
            " ORDER BY covers_seq DESC, id DESC LIMIT 1"
        )
        raw = self.engine.raw_connection()
        try:
            if self._pg:
                # Binary results: a snapshot is tens of megabytes, hex text twice that.
                cur: Any = raw.driver_connection.cursor(binary=True)  # type: ignore[union-attr]
            else:
                cur = raw.cursor()
            cur.execute(sql)
            row = cur.fetchone()
            cur.close()
        finally:
            raw.rollback()
            raw.close()
        if row is None:
            return None
        return Snapshot(int(row[0]), int(row[1]), bytes(row[2]), int(row[3]))

    def rows_after(self, seq: int) -> Iterator[Row]:
        """Journal rows holding records after ``seq``, in order of ``seq``, streamed in
        chunks (a server-side cursor on PostgreSQL) straight from the driver."""
        raw = self.engine.raw_connection()
        if self._pg:
            cur: Any = raw.driver_connection.cursor(name="xstreams_recovery")  # type: ignore[union-attr]
            mark = "%s"
        else:
            cur = raw.cursor()
            mark = "?"
        try:
            cur.execute(
                f"SELECT seq, last_seq, records, checksum, created_at_ms FROM {journal.name}"
                f" WHERE last_seq > {mark} ORDER BY seq",
                (seq,),
            )
            while rows := cur.fetchmany(_CHUNK_ROWS):
                for first, last, blob, crc, created in rows:
                    yield Row(int(first), int(last), bytes(blob), int(crc), int(created))
        finally:
            cur.close()
            raw.rollback()
            raw.close()

    # -- checks and repair (offline, and the start-up write probe) ------------------------

    def probe_write(self) -> None:
        """Write to the journal's table and roll back: raises the database's own error when
        it refuses writes (a read-only file or transaction, a missing privilege), before
        anything is applied in memory. Seq 0 is never a record's number."""
        with self.engine.connect() as conn:
            tx = conn.begin()
            try:
                conn.execute(
                    insert(journal).values(
                        seq=0, last_seq=0, records=b"[]", created_at_ms=0, checksum=checksum(b"[]")
                    )
                )
            finally:
                tx.rollback()

    def rows_from(self, seq: int) -> RowsSummary | None:
        """What the rows with ``seq`` >= the given one hold (None: no such row)."""
        with self.engine.connect() as conn:
            n, last, first_ms, last_ms = conn.execute(
                select(
                    func.count(),
                    func.max(journal.c.last_seq),
                    func.min(journal.c.created_at_ms),
                    func.max(journal.c.created_at_ms),
                ).where(journal.c.seq >= seq)
            ).one()
        if not n:
            return None
        return RowsSummary(int(n), int(last), int(first_ms), int(last_ms))

    def truncate_journal(
        self, from_seq: int, keep: Sequence[tuple[int, bytes]] = (), created_at_ms: int = 0
    ) -> None:
        """Delete the journal row starting at ``from_seq`` and every later row, then store
        ``keep`` (the good records of that row, re-encoded) as a row of its own with a fresh
        checksum and the old row's time: one transaction, so a failure deletes nothing."""
        with self.engine.begin() as conn:
            conn.execute(delete(journal).where(journal.c.seq >= from_seq))
            if keep:
                conn.execute(insert(journal), _rows(keep, created_at_ms))

    def replace_rows(self, rows: Sequence[Row]) -> None:
        """Replace journal rows by rows of the same seq span (their records rewritten, with
        a fresh checksum and the old row's time): one transaction, so a failure changes
        nothing."""
        with self.engine.begin() as conn:
            for row in rows:
                conn.execute(delete(journal).where(journal.c.seq == row.seq))
            if rows:
                conn.execute(
                    insert(journal),
                    [
                        {"seq": r.seq, "last_seq": r.last_seq, "records": r.records,
                         "created_at_ms": r.created_at_ms, "checksum": checksum(r.records)}
                        for r in rows
                    ],
                )  # fmt: skip

    def close(self) -> None:
        self.engine.dispose()


def _rows(records: Sequence[tuple[int, bytes]], created_at_ms: int) -> list[dict[str, Any]]:
    """Contiguous encoded records as journal rows of at most GROUP_MAX_RECORDS each, with
    their checksums (computed by the caller's worker thread, never on the event loop)."""
    rows = []
    for i in range(0, len(records), GROUP_MAX_RECORDS):
        part = records[i : i + GROUP_MAX_RECORDS]
        blob = b"[" + b",".join(r for _, r in part) + b"]"
        rows.append(
            {"seq": part[0][0], "last_seq": part[-1][0], "records": blob,
             "created_at_ms": created_at_ms, "checksum": checksum(blob)}
        )  # fmt: skip
    return rows


__all__ = [
    "RECORD_FORMAT",
    "Database",
    "JournalConflict",
    "Row",
    "RowsSummary",
    "Snapshot",
    "create_db_engine",
]
