"""Recovery: the newest snapshot, then every later journal record, replayed in order.

Anything that does not fit stops recovery with a ``RecoveryError`` naming what and where —
an unknown record format, a snapshot or record the engine cannot apply, a gap in the journal's
seq numbers — rather than serving a state that differs from what was acknowledged.
Runs in a worker thread (it blocks); the store is not served until it returns.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from app.engine.journal import ReplayError
from app.engine.store import Store
from app.storage.database import Database
from app.storage.tables import RECORD_FORMAT
from app.storage.writer import decode_record


class RecoveryError(Exception):
    """The stored state cannot be loaded exactly; the service must not start on it."""


@dataclass(frozen=True, slots=True)
class Recovered:
    snapshot_covers_seq: int  # 0 without a snapshot
    records: int  # journal records replayed after it
    last_seq: int  # the last record the state includes; the next one gets last_seq + 1
    journal_bytes: int  # size of the replayed records, for the snapshot trigger
    duration_ms: int


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
    state = _Position(after)
    # Loading creates millions of long-lived objects and no garbage cycles: the cyclic
    # collector would only rescan the growing keyspace again and again (half the time).
    collecting = gc.isenabled()
    gc.disable()
    try:
        replayed = store.restore(snap.data if snap else None, state.records(db))
    except ReplayError as e:
        where = (
            f"journal record seq={state.seq}"
            if state.started
            else f"snapshot id={snap.id if snap else '?'} (covering record {after})"
        )
        raise RecoveryError(
            f"cannot replay {where} from {db.url}: {e}. Recovery stopped so that no wrong"
            " state is served; restore a backup or remove the damaged rows"
        ) from e
    finally:
        if collecting:
            gc.enable()
    # The loaded keyspace lives as long as the process: keep later collections off it.
    gc.freeze()
    return Recovered(
        after, replayed, state.seq, state.bytes, int((time.perf_counter() - t0) * 1000)
    )


class _Position:
    """Where replay is, so an error can name the record that caused it."""

    def __init__(self, after: int) -> None:
        self.seq = after
        self.started = False
        self.bytes = 0

    def records(self, db: Database) -> Iterator[list[Any]]:
        for first, last, blob in db.rows_after(self.seq):
            where = (
                f"journal record seq={first}"
                if first == last
                else (f"journal records seq={first}..{last}")
            )
            if first > self.seq + 1:
                raise RecoveryError(
                    f"the journal in {db.url} has a gap: record {self.seq + 1} is missing"
                    f" (the next one is {first}); refusing to load a partial history"
                )
            try:
                records = decode_record(blob)
            except ValueError as e:
                raise RecoveryError(
                    f"{where} in {db.url}: not valid JSON ({e});"
                    " recovery stopped so that no wrong state is served"
                ) from e
            if not isinstance(records, list) or len(records) != last - first + 1:
                raise RecoveryError(
                    f"{where} in {db.url}: the row does not hold {last - first + 1} records;"
                    " recovery stopped so that no wrong state is served"
                )
            self.bytes += len(blob)
            for seq, record in enumerate(records, first):
                if seq <= self.seq:
                    continue  # already in the snapshot (a row it covers in part)
                self.started = True
                self.seq = seq
                yield record
