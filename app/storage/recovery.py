"""Recovery: the newest snapshot, then every later journal record, replayed in order.

Anything that does not fit stops recovery with a ``RecoveryError`` naming what and where —
an unknown record format, a snapshot or row whose checksum does not match its bytes, a
snapshot or record the engine cannot apply (the engine's replay also refuses effects that go
backwards, such as an entry ID not above its stream's last ID), journal rows whose seq numbers
leave a gap, overlap or go backwards — rather than serving a state that differs from what was
acknowledged. The error's ``stop`` says exactly where, so ``xstreams check`` reports and
repairs with this same code. Runs in a worker thread (it blocks); the store is not served
until it returns.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from app.engine.effects import ReplayError
from app.engine.store import Store
from app.storage.database import Database, Row
from app.storage.tables import RECORD_FORMAT, checksum
from app.storage.writer import decode_record

_STOPPED = "recovery stopped so that no wrong state is served"


@dataclass(frozen=True, slots=True)
class Stop:
    """Where recovery stopped: what ``xstreams check`` reports and what a repair may cut."""

    snapshot_id: int | None  # the newest snapshot (the damaged one if snapshot_damaged)
    snapshot_damaged: bool
    row: Row | None  # the journal row at fault; None when the fault is not in the journal
    bad_seq: int  # the first record that cannot be used
    last_good_seq: int  # the last record loaded cleanly (the snapshot's, or 0)
    keep: int  # how many records at the start of ``row`` are good
    rows: int  # journal rows read before the fault
    records: int  # journal records replayed before the fault
    # The fault is in one record (it does not decode or replay) of a sound row: a repair may
    # then drop what that record's keys need and keep the rest.
    in_record: bool = False


class RecoveryError(Exception):
    """The stored state cannot be loaded exactly; the service must not start on it.
    ``stop`` is None for a fault outside the data (an unknown record format)."""

    def __init__(self, message: str, stop: Stop | None = None) -> None:
        super().__init__(message)
        self.stop = stop


@dataclass(frozen=True, slots=True)
class Recovered:
    snapshot_covers_seq: int  # 0 without a snapshot
    records: int  # journal records replayed after it
    last_seq: int  # the last record the state includes; the next one gets last_seq + 1
    journal_bytes: int  # size of the replayed records, for the snapshot trigger
    duration_ms: int
    snapshot_id: int | None = None
    rows: int = 0  # journal rows read


def recover(db: Database, store: Store) -> Recovered:
    t0 = time.perf_counter()
    found = db.record_format()
    if found != RECORD_FORMAT:
        raise RecoveryError(
            f"the database {db.url} holds record format {found!r}, this xstreams reads"
            f" {RECORD_FORMAT!r}: refusing to load it"
        )
    snap = db.newest_snapshot()
    after = snap.covers_seq if snap is not None else 0
    state = _Position(db, after, snap.id if snap is not None else None)
    if snap is not None and checksum(snap.data) != snap.checksum:
        raise RecoveryError(
            f"snapshot id={snap.id} (covering record {after}) in {db.url}: checksum mismatch"
            f" ({_crc_text(snap.checksum, checksum(snap.data))}): its bytes changed after it"
            f" was written; {_STOPPED}",
            state.stop(None, 0, snapshot_damaged=True),
        )
    # Loading creates millions of long-lived objects and no garbage cycles: the cyclic
    # collector would only rescan the growing keyspace again and again (half the time).
    collecting = gc.isenabled()
    gc.disable()
    records = state.rows_of_records()
    try:
        replayed = store.restore_stored_rows(snap.data if snap else None, records)
    except ReplayError as e:
        if state.started:
            state.failed_at(e.index)
            where = f"journal record seq={state.seq}"
            row = state.row
            assert row is not None  # a record was read, so its row was
            stop = state.stop(row, state.seq - row.seq, bad_seq=state.seq, in_record=True)
        else:
            where = f"snapshot id={snap.id if snap else '?'} (covering record {after})"
            stop = state.stop(None, 0, snapshot_damaged=True)
        raise RecoveryError(
            f"cannot replay {where} from {db.url}: {e}. Recovery stopped so that no wrong"
            " state is served; run `xstreams check --repair` or restore a backup",
            stop,
        ) from e
    finally:
        # Ends the row cursor now, not when the traceback holding it is collected: an open
        # PostgreSQL cursor keeps its transaction (and its table locks) alive until then.
        records.close()
        if collecting:
            gc.enable()
    # The loaded keyspace lives as long as the process: keep later collections off it.
    gc.freeze()
    return Recovered(
        after,
        replayed,
        state.seq,
        state.bytes,
        int((time.perf_counter() - t0) * 1000),
        state.snapshot_id,
        state.rows,
    )


def _crc_text(stored: int, computed: int) -> str:
    return f"stored {stored:#010x}, computed {computed:#010x}"


def _where(row: Row) -> str:
    if row.seq == row.last_seq:
        return f"journal record seq={row.seq}"
    return f"journal records seq={row.seq}..{row.last_seq}"


class _Position:
    """Where replay is, so an error can name the record that caused it."""

    def __init__(self, db: Database, after: int, snapshot_id: int | None) -> None:
        self.db = db
        self.snapshot_id = snapshot_id
        self.seq = after  # the last record loaded
        self.first = after  # the first record of those last handed to replay
        self.started = False  # a journal record was handed to replay
        self.row: Row | None = None
        self.rows = 0
        self.replayed = 0
        self.bytes = 0

    def stop(
        self,
        row: Row | None,
        keep: int,
        *,
        bad_seq: int | None = None,
        snapshot_damaged: bool = False,
        in_record: bool = False,
    ) -> Stop:
        good = self.seq - 1 if bad_seq is not None else self.seq
        return Stop(
            self.snapshot_id,
            snapshot_damaged,
            row,
            bad_seq if bad_seq is not None else self.seq + 1,
            0 if snapshot_damaged else good,
            keep,
            self.rows,
            max(self.replayed - (1 if bad_seq is not None else 0), 0),
            in_record,
        )

    def _bad_row(self, row: Row, what: str) -> RecoveryError:
        return RecoveryError(
            f"{_where(row)} in {self.db.url}: {what}; {_STOPPED}", self.stop(row, 0)
        )

    def failed_at(self, index: int | None) -> None:
        """Replay refused record ``index`` of the records last handed (None: the last)."""
        if index is not None:
            left = self.seq - (self.first + index)  # handed after the one refused
            self.seq -= left
            self.replayed -= left

    def rows_of_records(self) -> Generator[list[Any]]:
        """The records after the snapshot in their stored form (decoded JSON), a row's at
        a time, checked row by row; replay decodes them (``Store.restore_stored_rows``)."""
        url = self.db.url
        for row in self.db.rows_after(self.seq):
            if row.last_seq < row.seq:
                raise self._bad_row(row, "its last seq is before its first")
            if row.seq > self.seq + 1:
                raise RecoveryError(
                    f"the journal in {url} has a gap: record {self.seq + 1} is missing"
                    f" (the next one is {row.seq}); refusing to load a partial history",
                    self.stop(row, 0),
                )
            # Only the first row may start at or before what is loaded: one the snapshot
            # covers in part. Any later one repeats records (seq numbers going backwards).
            if self.rows and row.seq <= self.seq:
                raise self._bad_row(
                    row,
                    f"its seq numbers overlap or go backwards (record {self.seq} was already"
                    f" loaded from an earlier row)",
                )
            crc = checksum(row.records)
            if crc != row.checksum:
                raise self._bad_row(
                    row,
                    f"checksum mismatch ({_crc_text(row.checksum, crc)}): its bytes changed"
                    " after they were written",
                )
            try:
                records = decode_record(row.records)
            except ValueError as e:
                raise self._bad_row(row, f"not valid JSON ({e})") from e
            if not isinstance(records, list) or len(records) != row.last_seq - row.seq + 1:
                raise self._bad_row(
                    row, f"the row does not hold {row.last_seq - row.seq + 1} records"
                )
            self.row = row
            self.bytes += len(row.records)
            if row.seq <= self.seq:  # already in the snapshot, in part (or whole)
                records = records[self.seq - row.seq + 1 :]
            if records:
                self.started = True
                self.first = self.seq + 1
                self.seq = row.last_seq
                self.replayed += len(records)
                yield records
            self.rows += 1
