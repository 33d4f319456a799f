"""``xstreams check``: verify a stopped service's database, and cut its journal at the first
bad record (as redis-check-aof does for an AOF).

The check is recovery itself, into a scratch in-memory store: the record format, the newest
snapshot's checksum and contents, every journal row's checksum, seq contiguity and order, that
every record decodes, and that snapshot and journal replay by the engine's own rules (entry
IDs only growing, ...). So whatever would stop a start is exactly what the check finds, and it
names the first bad record the same way.

A record that does not decode or replay, in a sound row, costs only the keys it touches: the
check names them, and a repair drops that record and every later record that touches one of
those keys (such a record's other keys are then dropped from there on too, since their later
records may build on it). Each dropped record becomes an empty one, so seq numbers stay
contiguous; every other record is kept, FLUSHALL and CONFIG SET records included, and the
rows that change are rewritten in one transaction with fresh checksums (``KeyRepair``).

Otherwise — damage to a row itself (checksum, JSON, seq numbers), a bad record that changes
every key, or one whose keys cannot be read — a repair deletes the damaged row and every row
after it in one transaction; the good records a damaged row holds before its first bad one
are written back as a row of their own, with a fresh checksum (``Loss``). A damaged newest
snapshot cannot be mended either way (the journal it covers is gone): the check says so and
changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from app.engine.codec import record_keys
from app.engine.json_codec import encode_json
from app.engine.keyspace import StreamConfig
from app.engine.store import Store
from app.settings import Settings
from app.storage import migrate
from app.storage.database import Database, Row, RowsSummary, create_db_engine
from app.storage.recovery import RecoveryError, Stop, recover
from app.storage.tables import checksum
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
class KeyRepair:
    """What a repair scoped to the bad record's keys changes."""

    bad_seq: int
    keys: frozenset[str]  # the keys whose records from bad_seq on are dropped
    dropped: list[int]  # the records dropped (emptied), the bad one first
    kept: int  # later records kept (of other keys)
    rows: list[Row]  # the rewritten rows


@dataclass(frozen=True, slots=True)
class Report:
    url: str
    snapshot_id: int | None
    snapshot_covers_seq: int
    rows: int  # journal rows read cleanly
    records: int  # journal records replayed cleanly
    last_good_seq: int
    error: RecoveryError | None  # the first fault; None when clean
    loss: Loss | None  # what a truncating repair deletes; None when clean, not repairable
    # or repaired by key (``key_repair``)
    bad_keys: frozenset[str] | None = None  # the keys the bad record touches, when known
    key_repair: KeyRepair | None = None

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
        keys = _bad_keys(stop)
        scoped = None if keys is None else _key_repair(db, stop, keys)
        loss = None
        if not stop.snapshot_damaged and scoped is None:
            loss = _loss(db, stop)
        return Report(
            db.url,
            stop.snapshot_id,
            covers,
            stop.rows,
            stop.records,
            stop.last_good_seq,
            e,
            loss,
            keys,
            scoped,
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


def repair_keys(db: Database, plan: KeyRepair) -> None:
    """Empty the records of the bad record's keys from it on (one transaction)."""
    db.replace_rows(plan.rows)


def _bad_keys(stop: Stop) -> frozenset[str] | None:
    """The keys of the one bad record (None: the fault is not one record's, or the record
    changes every key, or its keys cannot be read)."""
    row = stop.row
    if not stop.in_record or row is None or stop.snapshot_damaged:
        return None
    try:
        records = decode_record(row.records)  # it decoded as JSON during the check
        return record_keys(records[stop.bad_seq - row.seq])
    except (ValueError, IndexError, TypeError):
        return None


_EMPTY = b"[]"  # an empty record: replay applies nothing, the seq stays taken


def _key_repair(db: Database, stop: Stop, keys: frozenset[str]) -> KeyRepair | None:
    """Drop the bad record and every later one touching its keys (growing the set by the
    other keys of each dropped record); None when nothing later would be kept, where
    truncating says the same more simply. Stops before a later row that cannot be read:
    the check after the repair names it."""
    assert stop.row is not None
    bound = set(keys)
    dropped: list[int] = []
    kept = 0
    rewritten: list[Row] = []
    for row in db.rows_after(stop.row.seq - 1):
        grown = set(bound)  # kept only if the whole row can be read
        try:
            records = decode_record(row.records)
            if checksum(row.records) != row.checksum or len(records) != row.last_seq - row.seq + 1:
                break
            plan = [_fate(r, seq, stop.bad_seq, grown) for seq, r in enumerate(records, row.seq)]
        except (ValueError, TypeError):
            break
        bound = grown
        if any(drop for drop in plan):
            parts = [
                _EMPTY if drop else encode_json(r) for r, drop in zip(records, plan, strict=True)
            ]
            blob = b"[" + b",".join(parts) + b"]"
            rewritten.append(Row(row.seq, row.last_seq, blob, checksum(blob), row.created_at_ms))
        for seq, drop in enumerate(plan, row.seq):
            if seq > stop.bad_seq and not drop:
                kept += 1
            elif drop:
                dropped.append(seq)
    if not kept:
        return None
    return KeyRepair(stop.bad_seq, frozenset(bound), dropped, kept, rewritten)


def _fate(record: Any, seq: int, bad_seq: int, bound: set[str]) -> bool:
    """Whether a repair drops ``record`` (adding its keys to ``bound``): the bad one, and
    every later one touching a key of ``bound``. ValueError for one whose keys cannot be
    read."""
    if seq < bad_seq:
        return False
    if seq == bad_seq:
        return True
    keys = record_keys(record)
    if keys is None or bound.isdisjoint(keys):
        return False
    bound.update(keys)
    return True


def time_text(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")
