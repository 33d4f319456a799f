"""The journal writer: the engine's journal sink, with group commit and database-fault handling.

``append`` runs on the event loop inside a write command: it numbers the record (``seq``),
encodes it and queues it, nothing more. A background task takes *everything* queued so far and
commits it in one transaction on a dedicated thread; records appended while that commit runs
form the next group. So with many concurrent writers each commit carries many records, and
``--fsync always`` costs one commit per group, not one per request (group commit).

Faults. When a commit fails, the writer (1) keeps the failed records, in order, and retries
them every ``retry_s`` until the database takes them — inserts are idempotent by ``seq``, so a
commit whose outcome was unknown is never duplicated; (2) fails every reply waiting for them
with ``StorageUnavailable``; (3) makes ``check_writable`` refuse every further write before it
runs, so no new effect is applied in memory while the database is away. Those in-flight
records stay applied in memory and are committed once the database is back: a 503 for a write
in flight at that moment means "not acknowledged", not "not applied"
(docs/concepts/durability.md says so); every later write is refused before it touches anything.

A record the codec refuses (``Unstorable``: a value that would not read back as what was
applied, which the engine's own arithmetic never produces) is never numbered or written.
Its step is applied in memory already, and nothing can take that back, so the writer stops
for good: the write that made it answers 503, every later write is refused before it runs,
and in ``always`` mode a read of a key it touched is refused too, until a restart reloads
the durable state, in which that step never happened. Nothing of it is acknowledged, and
recovery never meets it.

Holds. A request whose response is kept (Idempotency-Key) holds the writer from its start to
the record of that response (``hold`` / ``release``): no record appended since the hold began
is committed before it is released, so the request's writes and its kept response land in
one commit. A request holds it for its own run only (never a blocking read), so other
writers wait microseconds, and a closing writer commits through any hold.

Visibility. In ``always`` mode no reply may show state a crash could take back, reads
included. The writer remembers, per key, the last record that changed it (``record_keys``),
until that record is committed; ``wait_visible(keys)`` holds a reply until the records behind
the keys it observed are committed. A reply about other keys waits for nothing, and while the
database is away only replies about keys with uncommitted records are refused (503): the rest
of the keyspace is committed state and stays readable.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import itertools
import logging
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

from app.durability import StorageUnavailable
from app.engine.codec import encode_record
from app.engine.effects import Record, Unstorable, stamp_keys
from app.engine.json_codec import decode_json
from app.settings import FsyncMode
from app.storage.database import Database, JournalConflict

log = logging.getLogger("xstreams.storage")

EVERYSEC_S = 1.0
# The per-key map of uncommitted records is pruned once it holds this many keys (or twice as
# many as the last pruning kept).
PRUNE_MIN_KEYS = 1024
GATHER_TICKS = 3
# The seq stamped on keys a refused record touched: above any record, so it never commits.
_NEVER = 1 << 63


def describe(exc: BaseException) -> str:
    """A one-line reason for an operator, without SQLAlchemy's statement dump."""
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    return f"{type(orig).__name__}: {text}"[:300]


# A row's bytes: the JSON list of its records, each in the stored form of ``app.engine.codec``.
decode_record = decode_json


class JournalWriter:
    """Numbers, queues and group-commits journal records (``app.engine.effects.JournalSink``)."""

    def __init__(
        self,
        db: Database,
        mode: FsyncMode,
        *,
        snapshot_after_bytes: int = 64 * 1024 * 1024,
        snapshot_after_records: int = 500_000,
        retry_s: float = 0.5,
    ) -> None:
        self.db = db
        self.mode = mode
        self.snapshot_after_bytes = snapshot_after_bytes
        self.snapshot_after_records = snapshot_after_records
        self.retry_s = retry_s
        self.last_seq = 0  # highest seq appended
        self.committed_seq = 0  # highest seq known to be in the database
        self.bytes_since_snapshot = 0
        # Records count apart from bytes: replay costs per record, and small records (kept
        # responses, IDMP) would stay far below the byte trigger while restart grows.
        self.records_since_snapshot = 0
        self.commits = 0  # transactions committed, for metrics and the benchmark
        self.on_threshold: Callable[[], None] | None = None
        # Told each group commit's duration (s) and record count (the service's metrics).
        self.on_commit: Callable[[float, int], None] | None = None
        self._pending: list[tuple[int, bytes]] = []
        # ``always`` only: the newest record per key (those at or below committed_seq are
        # pruned when the map grows, ``_prune``), and the newest record that changed every
        # key (FLUSHALL).
        self._key_seq: dict[str, int] = {}
        self._prune_at = PRUNE_MIN_KEYS
        self._all_seq = 0
        # Replies waiting for a record, by its seq (a heap: per-key waits come in any order).
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._waiter_ids = itertools.count()
        # Open holds: token -> the first seq each holds back (``hold``).
        self._holds: dict[int, int] = {}
        self._hold_ids = itertools.count()
        self._failure: StorageUnavailable | None = None
        # Set for good by a record the codec refused (see the module docstring).
        self._refused: StorageUnavailable | None = None
        self._conflict = False
        self._started = False
        self._closing = False
        self._wake = asyncio.Event()
        self._flush_now = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="xstreams-journal")

    # -- the engine's side (synchronous, on the loop) ----------------------------------------

    def append(self, record: Record) -> None:
        if not self._started:
            raise RuntimeError("a write reached the journal before recovery finished")
        try:
            data = encode_record(record)
        except Unstorable as e:
            raise self._refuse(record, e) from e
        self.last_seq += 1
        self.bytes_since_snapshot += len(data)
        self.records_since_snapshot += 1
        if self.mode is not FsyncMode.OFF:
            self._pending.append((self.last_seq, data))
            self._wake.set()
        if self.mode is FsyncMode.ALWAYS and not stamp_keys(record, self._key_seq, self.last_seq):
            self._all_seq = self.last_seq
        if self.on_threshold is not None and (
            self.bytes_since_snapshot >= self.snapshot_after_bytes
            or self.records_since_snapshot >= self.snapshot_after_records
        ):
            self.on_threshold()

    def hold(self) -> int:
        """Hold back, until ``release``, every record appended from now on (module docstring)."""
        token = next(self._hold_ids)
        self._holds[token] = self.last_seq + 1
        return token

    def release(self, token: int) -> None:
        if self._holds.pop(token, None) is not None:
            self._wake.set()

    def _committable(self) -> list[tuple[int, bytes]]:
        """The queued records no hold keeps back (all of them once closing)."""
        pending = self._pending
        if not self._holds or self._closing:
            return list(pending)
        limit = min(self._holds.values())
        n = 0
        while n < len(pending) and pending[n][0] < limit:
            n += 1
        return pending[:n]

    # -- the API's side ----------------------------------------------------------------------

    @property
    def refused(self) -> StorageUnavailable | None:
        """Set for good once a record was refused by the codec (never journaled)."""
        return self._refused

    @property
    def failure(self) -> StorageUnavailable | None:
        return self._refused or self._failure

    def check_writable(self) -> None:
        failure = self.failure
        if failure is not None:
            raise failure

    async def wait_committed(self) -> None:
        """In ``always`` mode, wait until every record appended so far is committed."""
        if self.mode is FsyncMode.ALWAYS:
            await self.wait_seq(self.last_seq)

    async def wait_visible(self, keys: Iterable[str] | None) -> None:
        """In ``always`` mode, wait until every record that changed one of ``keys`` (None:
        any key) is committed; raises ``StorageUnavailable`` if the database is away and such
        a record is not committed yet."""
        if self.mode is not FsyncMode.ALWAYS:
            return
        if keys is None:
            need = self.last_seq if self._refused is None else _NEVER
        else:
            need = self._all_seq
            key_seq = self._key_seq
            for key in keys:
                seq = key_seq.get(key, 0)
                if seq > need:
                    need = seq
        await self.wait_seq(need)

    async def wait_seq(self, seq: int) -> None:
        """Wait until the record ``seq`` (and all before it) is committed."""
        if self.committed_seq >= seq or self.mode is FsyncMode.OFF:
            return
        if seq > self.last_seq and self._refused is not None:
            raise self._refused  # a key changed by the refused record: it never commits
        if self._failure is not None:
            raise self._failure
        fut = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (seq, next(self._waiter_ids), fut))
        await fut

    async def flush(self) -> None:
        """Commit everything appended so far now (skipping the everysec wait)."""
        self._flush_now.set()
        self._wake.set()
        await self.wait_seq(self.last_seq)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, last_seq: int, journal_bytes: int = 0, journal_records: int = 0) -> None:
        """Begin after recovery: the next record is ``last_seq + 1``; the journal replayed
        (bytes, records) counts toward the next snapshot."""
        self.last_seq = self.committed_seq = last_seq
        self.bytes_since_snapshot = journal_bytes
        self.records_since_snapshot = journal_records
        self._started = True
        self._task = asyncio.create_task(self._run(), name="xstreams-journal")

    async def close(self, timeout_s: float = 10.0) -> None:
        """Commit what is queued (within ``timeout_s``), then stop."""
        self._closing = True
        self._flush_now.set()
        self._wake.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), timeout_s)
            except TimeoutError:
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
        if self._pending:
            log.error(
                "journal closed with %d records not committed (%s)",
                len(self._pending),
                self._failure.reason if self._failure else "timeout",
            )
        self._thread.shutdown(wait=True)
        log.info("journal closed: %d records in %d commits", self.last_seq, self.commits)

    # -- the commit loop ---------------------------------------------------------------------

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        last_commit = -EVERYSEC_S
        while True:
            if not self._pending or not self._committable():
                if self._closing and not self._pending:
                    return
                await self._wake.wait()
            self._wake.clear()
            if self.mode is FsyncMode.EVERYSEC and not self._closing:
                delay = last_commit + EVERYSEC_S - loop.time()
                if delay > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._flush_now.wait(), delay)
            self._flush_now.clear()
            # Let the requests already running on the loop reach their write first, so
            # they join this group instead of each starting a commit of its own.
            for _ in range(GATHER_TICKS):
                await asyncio.sleep(0)
            batch = self._committable()
            if not batch:
                continue
            last_commit = loop.time()
            # After a failure whose outcome is unknown, rows of this batch may have landed;
            # after a conflict they are someone else's, and the conflict must stand.
            retry = self._failure is not None and not self._conflict
            started = time.perf_counter()
            try:
                await loop.run_in_executor(
                    self._thread, functools.partial(self.db.append, batch, retry=retry)
                )
            except Exception as e:  # any failure means: not known to be durable
                self._fail(e)
                if self._closing:
                    return
                await asyncio.sleep(self.retry_s)
                continue
            del self._pending[: len(batch)]
            self.committed_seq = batch[-1][0]
            self.commits += 1
            if self.on_commit is not None:
                self.on_commit(time.perf_counter() - started, len(batch))
            if self._failure is not None:
                log.warning("database is back: %d records committed; writes accepted", len(batch))
                self._failure = None
            self._resolve()

    def _refuse(self, record: Record, exc: Unstorable) -> StorageUnavailable:
        """Stop writes for good after a record the codec refused; hold back the keys it
        touched (every key, for a flush) from replies in ``always`` mode."""
        if self._refused is None:
            log.error(
                "a write produced a record the journal cannot store exactly (%s): it is not"
                " journaled or acknowledged; refusing writes until a restart reloads the"
                " durable state",
                exc,
            )
            self._refused = StorageUnavailable(
                f"a write produced a value the journal cannot store exactly ({exc}); it was not"
                " acknowledged, and writes stay refused until xstreams restarts"
            )
        if not stamp_keys(record, self._key_seq, _NEVER):
            self._all_seq = _NEVER
        return self._refused

    def _fail(self, exc: BaseException) -> None:
        self._conflict = isinstance(exc, JournalConflict)
        reason = describe(exc)
        if self._failure is None:
            log.error("journal commit failed, refusing writes until it succeeds: %s", reason)
        self._failure = StorageUnavailable(f"the database did not commit the journal ({reason})")
        waiters, self._waiters = self._waiters, []
        for _, _, fut in waiters:
            if not fut.done():
                fut.set_exception(self._failure)

    def _prune(self) -> None:
        """Forget committed stamps once the map has grown: a stamp at or below committed_seq
        holds nothing back, so this only bounds memory, at a cost spread over many commits."""
        key_seq = self._key_seq
        if len(key_seq) >= self._prune_at:
            committed = self.committed_seq
            self._key_seq = {k: s for k, s in key_seq.items() if s > committed}
            self._prune_at = max(PRUNE_MIN_KEYS, 2 * len(self._key_seq))

    def _resolve(self) -> None:
        self._prune()
        waiters = self._waiters
        while waiters and waiters[0][0] <= self.committed_seq:
            fut = heapq.heappop(waiters)[2]
            if not fut.done():
                fut.set_result(None)
