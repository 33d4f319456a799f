"""``Storage``: durability for one Store, from start (migrate, recover) to clean shutdown.

It is the engine's journal sink (through its ``writer``) and the API's ``Durability``
(``check_writable`` / ``wait_visible``); ``app/main.py`` wires both ends, so neither the
engine nor the API imports this package.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from sqlalchemy.exc import DBAPIError, OperationalError

from app.engine.store import Store
from app.settings import FsyncMode, Settings
from app.storage import migrate
from app.storage.database import Database, create_db_engine
from app.storage.keys import KeyStore
from app.storage.recovery import Recovered, recover
from app.storage.snapshots import Snapshotter
from app.storage.writable import read_only_reason
from app.storage.writer import JournalWriter, describe

log = logging.getLogger("xstreams.storage")

# While the database cannot be reached or written at start, try again this often (not ready
# meanwhile).
CONNECT_RETRY_S = 2.0


class Storage:
    def __init__(self, settings: Settings) -> None:
        self.mode = settings.fsync
        self.snapshot_on_shutdown = settings.snapshot_on_shutdown
        self.db = Database(create_db_engine(settings.resolved_database_url(), settings.fsync))
        self.writer = JournalWriter(
            self.db,
            settings.fsync,
            snapshot_after_bytes=settings.snapshot_after_bytes,
            snapshot_after_records=settings.snapshot_after_records,
        )
        self.keys = KeyStore.sharing(self.db)  # the API keys, in the same database
        self.snapshots: Snapshotter | None = None
        # Told why start is waiting (None once it no longer is): the app's readiness.
        self.on_wait: Callable[[str | None], None] | None = None

    # -- Durability (app.durability) --------------------------------------------------------

    def check_writable(self) -> None:
        self.writer.check_writable()

    async def wait_visible(self, keys: Iterable[str] | None) -> None:
        await self.writer.wait_visible(keys)

    @contextmanager
    def holding(self) -> Iterator[None]:
        token = self.writer.hold()
        try:
            yield
        finally:
            self.writer.release(token)

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self, store: Store) -> Recovered:
        """Migrate the schema, check that the database takes writes, load the store, then
        start journaling. Waits (not ready, the reason told to ``on_wait``) while a database
        server cannot be reached or the database refuses writes — an operator can fix
        either (start the server, promote the standby, make the file or folder writable)
        without restarting xstreams; a damaged database raises ``RecoveryError``."""
        told: str | None = None
        while True:
            try:
                revision = await asyncio.to_thread(migrate.upgrade, self.db.engine)
                await asyncio.to_thread(self.db.probe_write)
                break
            except DBAPIError as e:
                reason = read_only_reason(self.db.engine.url, e)
                if reason is not None:
                    waiting = f"the database {self.db.url} is read-only (not writable): {reason}"
                    # New sessions next time: a session keeps the read-only setting it began
                    # with (default_transaction_read_only), even once the role's is changed.
                    await asyncio.to_thread(self.db.engine.dispose)
                elif isinstance(e, OperationalError) and self.db.engine.dialect.name != "sqlite":
                    waiting = f"the database {self.db.url} is unreachable: {describe(e)}"
                else:
                    raise  # a SQLite file that cannot be opened will not open by waiting
            waiting += f"; nothing is loaded or written, retrying every {CONNECT_RETRY_S:g} s"
            if waiting != told:
                log.error("%s", waiting)
                told = waiting
            if self.on_wait is not None:
                self.on_wait(waiting)
            await asyncio.sleep(CONNECT_RETRY_S)
        if told is not None:
            log.warning("the database %s takes writes now: loading", self.db.url)
            if self.on_wait is not None:
                self.on_wait(None)
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
        self.writer.start(result.last_seq, result.journal_bytes, result.records)
        return result

    async def stop(self) -> None:
        """Commit what is queued, take the shutdown snapshot, close the database."""
        if self.snapshots is not None:
            await self.snapshots.wait_idle()
            wanted = self.snapshot_on_shutdown or self.mode is FsyncMode.OFF
            if wanted and self.writer.records_since_snapshot > 0 and self.writer.failure is None:
                try:
                    await self.snapshots.take()
                except Exception as e:
                    log.error("shutdown snapshot failed: %s", describe(e))
        await self.writer.close()
        self.db.close()
