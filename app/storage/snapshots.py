"""Snapshots: the whole keyspace written in the background, then the journal it covers dropped.

The state is fixed on the event loop in one step, together with the seq of the last record
appended, so the snapshot is exactly "the state after record ``covers_seq``". Where ``fork``
works, that step is a fork: a child encodes the state it was given (``app.storage.forked``)
while the loop keeps serving, and a worker thread waits for it. Elsewhere, or when the fork
fails, the view is taken on the loop (``Store.snapshot_view``) and encoded in a worker
thread, which shares the GIL with the loop. Before the snapshot is stored, the journal is
committed up to ``covers_seq``: the snapshot never gets ahead of the journal, so an older
snapshot plus journal would tell the same story. Storing the snapshot and deleting the
journal rows it covers is one transaction.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from app.engine.snapshot import encode_snapshot
from app.engine.store import Store
from app.storage.database import Database
from app.storage.forked import fork_encoder
from app.storage.writer import JournalWriter, describe

log = logging.getLogger("xstreams.storage")

# After a failed background snapshot, wait this long before the trigger tries again.
RETRY_AFTER_S = 10.0


@dataclass(frozen=True, slots=True)
class SnapshotTaken:
    covers_seq: int
    size_bytes: int
    encode_ms: int
    write_ms: int
    # How long the loop spent in ``fork()`` (redis-server's latest_fork_usec); 0: in process.
    fork_us: int = 0


class Snapshotter:
    """Takes snapshots on demand, on journal size or record count (``maybe_start``) and on
    shutdown."""

    def __init__(
        self, db: Database, store: Store, writer: JournalWriter, *, fork: bool = True
    ) -> None:
        self.db = db
        self.store = store
        self.writer = writer
        self.fork = fork  # encode in a forked child when the platform allows it
        self.taken = 0
        self.forked = 0  # of ``taken``, those a child encoded
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[SnapshotTaken | None] | None = None
        self._failed_at = -RETRY_AFTER_S

    def maybe_start(self) -> None:
        """Start a background snapshot unless one is running or one failed just now."""
        if self._task is not None and not self._task.done():
            return
        if time.monotonic() - self._failed_at < RETRY_AFTER_S:
            return
        self._task = asyncio.create_task(self._background(), name="xstreams-snapshot")

    async def _background(self) -> SnapshotTaken | None:
        try:
            return await self.take()
        except Exception as e:
            self._failed_at = time.monotonic()
            log.error("background snapshot failed, retrying later: %s", describe(e))
            return None

    async def take(self) -> SnapshotTaken:
        """Take one snapshot now; raises if it cannot be stored."""
        async with self._lock:
            if self.writer.refused is not None:
                # Memory holds a step the journal refused: a snapshot would make it durable.
                raise self.writer.refused
            t0 = time.perf_counter()
            # No await from here to the fork or the view: they hold the state after ``covers``.
            covers = self.writer.last_seq
            counted = self.writer.bytes_since_snapshot
            counted_records = self.writer.records_since_snapshot
            child = fork_encoder(self.store) if self.fork else None
            fork_us = int((time.perf_counter() - t0) * 1e6) if child is not None else 0
            if child is not None:
                collecting = asyncio.ensure_future(asyncio.to_thread(child.collect))
                collecting.add_done_callback(_retrieve)
                try:
                    data = await asyncio.shield(collecting)
                except asyncio.CancelledError:
                    if not collecting.done():
                        child.kill()  # the thread still reaps it; nothing is stored
                    raise
            else:
                view = self.store.snapshot_view()
                data = await asyncio.to_thread(encode_snapshot, view)
            t1 = time.perf_counter()
            await self.writer.flush()
            await asyncio.to_thread(self.db.write_snapshot, covers, data)
            t2 = time.perf_counter()
            self.writer.bytes_since_snapshot -= counted
            self.writer.records_since_snapshot -= counted_records
            self.taken += 1
            self.forked += child is not None
            log.info(
                "snapshot covering record %d: %d bytes, encoded in %s",
                covers,
                len(data),
                f"a forked child (fork {fork_us} us)" if child is not None else "process",
            )
            return SnapshotTaken(
                covers, len(data), int((t1 - t0) * 1000), int((t2 - t1) * 1000), fork_us
            )

    async def wait_idle(self) -> None:
        """Let a running background snapshot finish (clean shutdown)."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)


def _retrieve(fut: asyncio.Future[bytes]) -> None:
    """Mark an abandoned child's outcome seen (asyncio would log it as never retrieved)."""
    if not fut.cancelled():
        fut.exception()
