"""Storage work done outside the service: ``xstreams migrate`` and ``xstreams snapshot``.

An offline snapshot loads the stored state (snapshot + journal) into a fresh store, exactly as
a start would, writes it back as one snapshot and drops the journal rows it covers. It is
meant for a stopped service, but is also safe beside a running one: it covers only records
already committed, and a running service's own snapshots cover later records.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from app.engine.keyspace import StreamConfig
from app.engine.snapshot import encode_snapshot
from app.engine.store import Store
from app.settings import Settings
from app.storage import migrate
from app.storage.database import Database, create_db_engine
from app.storage.recovery import Recovered, recover


def open_database(settings: Settings) -> Database:
    return Database(create_db_engine(settings.resolved_database_url(), settings.fsync))


def migrate_database(settings: Settings) -> tuple[str, str | None]:
    """Upgrade to head; returns (database URL without password, revision)."""
    db = open_database(settings)
    try:
        return db.url, migrate.upgrade(db.engine)
    finally:
        db.close()


@dataclass(frozen=True, slots=True)
class OfflineSnapshot:
    url: str
    recovered: Recovered
    streams: int
    size_bytes: int  # 0 when nothing needed writing
    duration_ms: int


def snapshot_database(settings: Settings) -> OfflineSnapshot:
    t0 = time.perf_counter()
    db = open_database(settings)
    try:
        migrate.upgrade(db.engine)
        store = Store(
            config=StreamConfig(
                settings.stream_node_max_entries,
                settings.stream_node_max_bytes,
                settings.idmp_max_producers,
            )
        )
        recovered = recover(db, store)
        size = 0
        if recovered.records or db.newest_snapshot() is None:
            data = encode_snapshot(store.snapshot_view())
            db.write_snapshot(recovered.last_seq, data)
            size = len(data)
        return OfflineSnapshot(
            db.url,
            recovered,
            len(store.keyspace.streams),
            size,
            int((time.perf_counter() - t0) * 1000),
        )
    finally:
        db.close()
