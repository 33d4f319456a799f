"""``xstreams check``: verify a stopped service's database, and cut its journal at the first
bad record (as redis-check-aof does for an AOF).

The check is recovery itself, into a scratch in-memory store: the record format, the newest
snapshot's checksum and contents, every journal row's checksum, seq contiguity and order, that
every record decodes, and that snapshot and journal replay by the engine's own rules (entry
IDs only growing, ...). So whatever would stop a start is exactly what the check finds, and it
names the first bad record the same way.

A repair deletes the damaged row and every row after it in one transaction; the good records
a damaged row holds before its first bad one are written back as a row of their own, with a
fresh checksum. A damaged newest snapshot cannot be mended that way (the journal it covers is
gone): the check says so and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from app.engine.codec import encode_json
from app.engine.keyspace import StreamConfig
from app.engine.store import Store
from app.settings import Settings
from app.storage import migrate
from app.storage.database import Database, RowsSummary, create_db_engine
from app.storage.recovery import RecoveryError, Stop, recover
from app.storage.writer import decode_record, describe


class CheckUnavailable(Exception):
    """The database cannot be checked at all (missing, unreachable, an older schema)."""


@dataclass(frozen=True, slots=True)
class Loss:
    """What truncating the journal to its last good record deletes."""

    first_seq: int  # the first record lost (the one after the last good record)
    last_seq: int
    rows: RowsSummary  # the rows deleted (the damaged one included)
    row_seq: int  # rows from this seq on are deleted
    keep: list[tuple[int, bytes]]  # the damaged row's good records, written back
    created_at_ms: int  # the damaged row's time, kept by the rewritten row


@dataclass(frozen=True, slots=True)
class Report:
    url: str
    snapshot_id: int | None
    snapshot_covers_seq: int
    rows: int  # journal rows read cleanly
    records: int  # journal records replayed cleanly
    last_good_seq: int
    error: RecoveryError | None  # the first fault; None when clean
    loss: Loss | None  # what a repair deletes; None when clean or not repairable

    @property
    def snapshot_damaged(self) -> bool:
        return (
            self.error is not None
            and self.error.stop is not None
            and (self.error.stop.snapshot_damaged)
        )


def open_database(settings: Settings) -> Database:
    """The database to check, as it is: never created, never migrated."""
    url = settings.resolved_database_url()
    u = make_url(url)
    path = u.database if u.get_backend_name() == "sqlite" else None
    if path and path != ":memory:" and not path.startswith("file:") and not Path(path).is_file():
        raise CheckUnavailable(f"no database at {path}")
    db = Database(create_db_engine(url, settings.fsync))
    try:
        revision = migrate.current_revision(db.engine)
    except DBAPIError as e:
        db.close()
        raise CheckUnavailable(f"cannot reach {db.url}: {describe(e)}") from e
    head = migrate.head_revision()
    if revision != head:
        db.close()
        raise CheckUnavailable(
            f"{db.url} has schema revision {revision}, this xstreams checks {head}:"
            " run `xstreams migrate` first"
        )
    return db


def check(db: Database, config: StreamConfig) -> Report:
    """Load everything into a scratch store, exactly as a start would, and say how it went."""
    store = Store(config=config)
    try:
        done = recover(db, store)
    except RecoveryError as e:
        stop = e.stop
        if stop is None:
            return Report(db.url, None, 0, 0, 0, 0, e, None)
        snap = db.newest_snapshot()
        covers = snap.covers_seq if snap is not None else 0
        loss = None if stop.snapshot_damaged else _loss(db, stop)
        return Report(
            db.url,
            stop.snapshot_id,
            covers,
            stop.rows,
            stop.records,
            stop.last_good_seq,
            e,
            loss,
        )
    return Report(
        db.url,
        done.snapshot_id,
        done.snapshot_covers_seq,
        done.rows,
        done.records,
        done.last_seq,
        None,
        None,
    )


def _loss(db: Database, stop: Stop) -> Loss | None:
    row = stop.row
    if row is None:
        return None
    rows = db.rows_from(row.seq)
    if rows is None:  # pragma: no cover - the row was just read
        return None
    keep: list[tuple[int, bytes]] = []
    if stop.keep:
        records = decode_record(row.records)  # it decoded during the check
        keep = [(row.seq + i, encode_json(r)) for i, r in enumerate(records[: stop.keep])]
    return Loss(stop.last_good_seq + 1, rows.last_seq, rows, row.seq, keep, row.created_at_ms)


def repair(db: Database, loss: Loss) -> None:
    """Truncate the journal to the last good record (one transaction)."""
    db.truncate_journal(loss.row_seq, loss.keep, loss.created_at_ms)


def time_text(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")
