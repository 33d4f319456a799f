"""``Storage``: durability for one Store, from start (migrate, recover) to clean shutdown.

It is the engine's journal sink (through its ``writer``) and the API's ``Durability``
(``check_writable`` / ``wait_visible``); ``app/main.py`` wires both ends, so neither the
engine nor the API imports this package.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from sqlalchemy.exc import OperationalError

from app.engine.store import Store
from app.settings import FsyncMode, Settings
from app.storage import migrate
from app.storage.database import Database, create_db_engine
from app.storage.recovery import Recovered, recover
from app.storage.snapshots import Snapshotter
from app.storage.writer import JournalWriter, describe

log = logging.getLogger("xstreams.storage")

# While the database cannot be reached at start, try again this often (not ready meanwhile).
CONNECT_RETRY_S = 2.0


class Storage:
    def __init__(self, settings: Settings) -> None:
        self.mode = settings.fsync
        self.snapshot_on_shutdown = settings.snapshot_on_shutdown
        self.db = Database(create_db_engine(settings.resolved_database_url(), settings.fsync))
        self.writer = JournalWriter(
            self.db, settings.fsync, snapshot_after_bytes=settings.snapshot_after_bytes
        )
        self.snapshots: Snapshotter | None = None

    # -- Durability (app.durability) --------------------------------------------------------

    def check_writable(self) -> None:
        self.writer.check_writable()

    async def wait_visible(self, keys: Iterable[str] | None) -> None:
        await self.writer.wait_visible(keys)

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self, store: Store) -> Recovered:
        """Migrate the schema, load the store, then start journaling. Waits (not ready)
        while a database server cannot be reached; a damaged database raises
        ``RecoveryError``."""
        while True:
            try:
                revision = await asyncio.to_thread(migrate.upgrade, self.db.engine)
                break
            except OperationalError as e:
                if self.db.engine.dialect.name == "sqlite":
                    raise  # a file that cannot be opened will not open by waiting
                log.error("database %s unreachable, retrying: %s", self.db.url, describe(e))
                await asyncio.sleep(CONNECT_RETRY_S)
        result = await asyncio.to_thread(recover, self.db, store)
        log.info(
            "recovered from %s (schema %s, %s): snapshot covering %d + %d records in %d ms",
            self.db.url,
            revision,
            self.mode.value,
            result.snapshot_covers_seq,
            result.records,
            result.duration_ms,
        )
        self.snapshots = Snapshotter(self.db, store, self.writer)
        self.writer.on_threshold = self.snapshots.maybe_start
        self.writer.start(result.last_seq, result.journal_bytes)
        return result

    async def stop(self) -> None:
        """Commit what is queued, take the shutdown snapshot, close the database."""
        if self.snapshots is not None:
            await self.snapshots.wait_idle()
            wanted = self.snapshot_on_shutdown or self.mode is FsyncMode.OFF
            if wanted and self.writer.bytes_since_snapshot > 0 and self.writer.failure is None:
                try:
                    await self.snapshots.take()
                except Exception as e:
                    log.error("shutdown snapshot failed: %s", describe(e))
        await self.writer.close()
        self.db.close()
