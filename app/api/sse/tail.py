"""Live tails (``/v1/streams/{stream}/events``, ``/v1/events``): one reader per stream.

Everything goes through the ``Backend`` (app/backends), so a tail works the same in front of
the embedded engine and in front of Redis, where a blocked XREAD returns after another
client's XADD and nothing is decided in the same synchronous step as the write.

A ``StreamTail`` is the one blocking XREAD on its stream in this process (``TAIL_BLOCK_MS`` at a
time, looping): each time it returns, the tail reads what the stream added since its cursor,
encodes each entry once and hands the same bytes to every live subscriber. It counts as it
goes: ``entries_added`` (XINFO STREAM) minus the entries read says whether some were removed
before the tail could read them (a burst trimmed at once), which is a ``gap`` for every
subscriber, and then it hands out only what is still there.

A subscriber first replays what it missed from its own positions, in batches at the speed of
its socket (``Outbox.drained``), so history never piles up in memory. When a read comes back
empty it joins its streams' tails; but with an async backend the read and the join are not one
step, and a tail may have handed out entries meanwhile (added after the read looked). So a
tail numbers the batches it hands out and keeps the latest ones (``RECENT_ENTRIES``, with
their gaps); a subscriber notes each tail's number before it reads, and the join, one
synchronous step, first gives it every batch handed out since then. If some of those are no
longer kept, it reads on by itself and tries again. ``Subscriber.offer`` takes only entries
past the subscriber's position, so nothing is skipped or repeated either way.

A subscriber whose outbox cannot take a live event (a burst, a slow socket) leaves the tails
and replays from its own position again. A tail lives as long as some connection follows its
stream (live or replaying) and stops with the last one (its blocked read goes with it).

Entries removed before a subscriber read them (trimmed, deleted) are reported with a ``gap``
event, then the subscriber moves on from the first entry still there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from app.api.sse.outbox import PARKED, CloseReason, Parked
from app.api.sse.settled import settled
from app.api.sse.subscriber import Subscriber
from app.api.sse.wire import EncodedEntry, error_event
from app.backends.roles import TailRoles
from app.engine.commands.reads import ReadRequest
from app.engine.commands.streams import RangeArgs
from app.engine.errors import CommandError, NoSuchKey
from app.engine.ids import MIN_ID, StreamID, format_id
from app.engine.replies import StreamInfo, StreamRead
from app.engine.stream import Entry

__all__ = [
    "READ_BATCH",
    "RECENT_ENTRIES",
    "TAIL_BLOCK_MS",
    "TAIL_RETRIES",
    "TAIL_RETRY_MS",
    "StreamTail",
    "Subscriber",
    "Tails",
    "follow",
    "trimmed_before",
]

log = logging.getLogger("xstreams.sse")

READ_BATCH = 512  # entries per read, history and live alike
# How long one blocking read of a tail waits before it is issued again: bounded, so a tail in
# front of Redis never holds a pooled connection for good, and long enough to cost nothing.
TAIL_BLOCK_MS = 5000
# A tail's read that fails (Redis unreachable for a moment, its blocking connections all busy)
# is tried again after a pause that doubles from TAIL_RETRY_MS; past TAIL_RETRIES failures in a
# row the tail gives up and ends its subscribers' streams with an ``error`` event.
TAIL_RETRY_MS = 100
TAIL_RETRIES = 5
# What a tail keeps of the entries it handed out last, so a subscriber joining a little behind
# it gets them from memory (its last empty read and its joining are not one step).
RECENT_ENTRIES = READ_BATCH


async def stream_info(backend: TailRoles, key: str) -> StreamInfo | None:
    """XINFO STREAM, or None when there is no such stream."""
    try:
        return await settled(partial(backend.stream_info, key))
    except NoSuchKey:
        return None


def trimmed_before(info: StreamInfo | None, after: StreamID) -> tuple[bool, StreamID | None]:
    """Whether a resume point is older than the stream's first entry, and that entry's ID.

    Used when a replay starts (a connection resuming, a subscriber that fell behind): only a
    stream that ever lost entries (``entries_added`` above its length) can have a gap, and
    then the rule errs on the safe side — a position whose own entry was trimmed reports a
    gap even if nothing lay between it and the first entry. Past that point gaps are found
    exactly (``_replay`` and ``StreamTail`` know which entry comes next, or how many).
    """
    if info is None or info.header.entries_added <= info.header.length:
        return False, None
    if info.first_entry is None:
        return after < info.header.last_generated_id, None
    first = info.first_entry.id
    following = after.incr()
    return following is not None and following < first, first


def _entries(reads: list[StreamRead]) -> list[Entry]:
    # A plain XREAD never gives a MissingEntry (only a group's history does).
    return [e for r in reads for e in r.entries if isinstance(e, Entry)]


async def read_after(backend: TailRoles, key: str, after: StreamID, count: int) -> list[Entry]:
    """XREAD without BLOCK: up to ``count`` entries after ``after``."""
    request = ReadRequest([key], [format_id(after)], count)
    return _entries(await settled(partial(backend.read, request)))


async def range_between(
    backend: TailRoles, key: str, after: StreamID, upto: StreamID
) -> list[Entry]:
    """Every entry after ``after`` up to ``upto`` (XRANGE ``(after upto``, page by page)."""
    out: list[Entry] = []
    while (start := after.incr()) is not None and start <= upto:
        args = RangeArgs(key, start, upto, READ_BATCH)
        page = await settled(partial(backend.range, args))
        out += page
        if len(page) < READ_BATCH:
            break
        after = page[-1].id
    return out


@dataclass(frozen=True, slots=True)
class Batch:
    """What a tail handed out in one go (its ``seq``-th batch): everything the stream held
    after ``after`` up to ``upto`` (the tail's cursor before and after), and whether entries
    of that span were removed before they could be read."""

    seq: int
    after: StreamID
    upto: StreamID
    gap: bool
    entries: list[EncodedEntry]

    @property
    def first(self) -> StreamID | None:
        return self.entries[0].entry.id if self.entries else None


class StreamTail:
    """The one reader of a stream's new entries for all its live subscribers."""

    def __init__(
        self, backend: TailRoles, key: str, on_failure: Callable[[StreamTail], None]
    ) -> None:
        self.backend = backend
        self.key = key
        self.subscribers: dict[Subscriber, None] = {}  # live ones
        self.holders = 0  # connections following the stream, live or replaying
        self.cursor = MIN_ID  # everything up to here has been handed out
        self.seq = 0  # batches handed out so far
        self.added: int | None = None  # the stream's entries_added at the cursor (None: unknown)
        self.recent: deque[Batch] = deque()
        self._recent_entries = 0
        self._on_failure = on_failure
        self.failed = False
        self.started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.task = asyncio.create_task(self._run(), name=f"sse-tail:{key}")

    async def _run(self) -> None:
        try:
            info = await stream_info(self.backend, self.key)
            if info is not None:
                self.cursor, self.added = info.header.last_generated_id, info.header.entries_added
            else:
                self.added = 0
            self.started.set_result(None)
            failures = 0
            while True:
                try:
                    found = await self._next_batch()
                except CommandError as e:
                    failures += 1
                    if failures > TAIL_RETRIES:
                        raise
                    log.warning("live tail of %r: %s; trying again", self.key, e.text)
                    await asyncio.sleep(TAIL_RETRY_MS / 1000 * 2 ** (failures - 1))
                    continue
                failures = 0
                if found is None:
                    continue
                batch, added = found
                self.cursor, self.added, self.seq = batch.upto, added, batch.seq
                self._remember(batch)
                self._deliver(batch)
        except Exception as e:
            # Never leave subscribers waiting on a dead tail: end their streams, so they
            # reconnect (with Last-Event-ID) to a fresh one.
            log.exception("live tail of %r failed", self.key)
            self.failed = True
            if not self.started.done():
                self.started.set_exception(e)
                self.started.exception()  # retrieved: joiners see ``failed``
            self._on_failure(self)
            for sub in list(self.subscribers):
                if isinstance(e, CommandError):
                    sub.outbox.push(error_event(e, sub.tenant))
                sub.outbox.close(CloseReason.ENDED)

    async def _next_batch(self) -> tuple[Batch, int | None] | None:
        """Wait for entries past the cursor; then everything up to the stream's last ID, and
        the ``entries_added`` that goes with it. None when the wait timed out."""
        key, cursor, backend = self.key, self.cursor, self.backend
        request = ReadRequest([key], [format_id(cursor)], READ_BATCH, TAIL_BLOCK_MS)
        got = _entries(await settled(partial(backend.read, request)))
        if not got:
            return None
        info = await stream_info(backend, key)
        last = got[-1].id
        if info is None or info.header.last_generated_id < last:
            # Deleted (and maybe created again) since the read: nothing to count against.
            return Batch(self.seq + 1, cursor, last, False, self._encode(got)), None
        upto, added = info.header.last_generated_id, info.header.entries_added
        entries = got if last == upto else got + await range_between(backend, key, last, upto)
        # A count below the last one: the stream was deleted and created again meanwhile, so
        # this round has nothing to count against; from here on, the new stream's count.
        known = self.added is not None and added >= self.added
        gap = known and added - (self.added or 0) > len(entries)
        if gap:
            # Some were removed unread: hand out only what is still there, after the gap.
            entries = await range_between(backend, key, cursor, upto)
        return Batch(self.seq + 1, cursor, upto, gap, self._encode(entries)), added

    def _encode(self, entries: list[Entry]) -> list[EncodedEntry]:
        key = self.key
        return [EncodedEntry(key, e) for e in entries]

    def _remember(self, batch: Batch) -> None:
        """Keep the latest batches for joiners, at least the last one."""
        recent = self.recent
        recent.append(batch)
        self._recent_entries += len(batch.entries)
        while len(recent) > 1 and self._recent_entries - len(recent[0].entries) >= RECENT_ENTRIES:
            self._recent_entries -= len(recent.popleft().entries)

    def _deliver(self, batch: Batch) -> None:
        """Hand each entry, encoded once, to every subscriber."""
        subscribers = list(self.subscribers)
        if batch.gap:
            first = batch.first
            for sub in subscribers:
                sub.live_gap(self.key, first)
        for encoded in batch.entries:
            for sub in subscribers:
                sub.offer(encoded)

    def join(self, sub: Subscriber, seen: int) -> bool:
        """Make ``sub`` (live) one of this tail's subscribers, after giving it what the tail
        handed out since its ``seen``-th batch (the last before the subscriber's last read);
        False when some of that is no longer kept (it reads on by itself first).
        Synchronous: nothing is handed out meanwhile."""
        if self.seq > seen:
            if not self.recent or self.recent[0].seq > seen + 1:
                return False
            key = self.key
            # Pushed whatever the outbox holds, as a replay batch is (at most RECENT_ENTRIES
            # and one batch): a join that failed on a full outbox would only read again and
            # find nothing, without ever waiting for the socket.
            for batch in self.recent:
                if batch.seq <= seen or batch.upto <= sub.positions[key]:
                    continue
                if batch.gap:
                    sub.gap(key, batch.first)
                for encoded in batch.entries:
                    sub.catch_up(encoded)
        self.subscribers[sub] = None
        return True


class Tails:
    """The running ``StreamTail`` of each followed stream."""

    def __init__(self, backend: TailRoles) -> None:
        self.backend = backend
        self.by_key: dict[str, StreamTail] = {}
        self.fell_behind = 0  # times a live subscriber's outbox was full (for /metrics)

    def hold(self, keys: list[str]) -> list[StreamTail]:
        """The tails of ``keys``, started if need be, kept running until ``release``."""
        held = []
        for key in keys:
            tail = self.by_key.get(key)
            if tail is None:
                tail = self.by_key[key] = StreamTail(self.backend, key, self._drop)
            tail.holders += 1
            held.append(tail)
        return held

    def release(self, held: list[StreamTail]) -> None:
        for tail in held:
            tail.holders -= 1
            if tail.holders <= 0:
                self._drop(tail)
                tail.task.cancel()  # its blocked read goes with it

    def _drop(self, tail: StreamTail) -> None:
        if self.by_key.get(tail.key) is tail:
            del self.by_key[tail.key]

    @staticmethod
    async def started(held: list[StreamTail]) -> bool:
        """Wait until the tails know their cursors; False if one of them failed."""
        for tail in held:
            with contextlib.suppress(Exception):
                await asyncio.shield(tail.started)
        return not any(tail.failed for tail in held)

    def join(self, sub: Subscriber, held: list[StreamTail], seen: list[int]) -> bool:
        """Make ``sub`` live on all its tails or on none (one synchronous step: the tails hand
        out nothing until every join is decided). False when it must read on first (or a tail
        failed: then it is closed)."""
        if any(tail.failed for tail in held):
            sub.outbox.close(CloseReason.ENDED)
            return False
        sub.go_live()
        if all(t.join(sub, n) for t, n in zip(held, seen, strict=True)) and sub.live:
            return True
        sub.live = False
        self.leave(sub, held)
        return False

    def leave(self, sub: Subscriber, held: list[StreamTail]) -> None:
        for tail in held:
            tail.subscribers.pop(sub, None)


async def follow(tails: Tails, sub: Subscriber) -> Parked | None:
    """Replay from the subscriber's positions, then follow the streams live; after falling
    behind, replay again from where it stopped. Until the connection closes.

    Returns ``PARKED`` once live: a live subscriber has no task (thousands of idle ones would
    each hold one, with its frames, for nothing). The tails' offers feed it, and when one
    does not fit (``Subscriber.go_behind``) a task of its own (``Subscriber.task``) replays
    and joins again. Its tails are let go, and that task stopped, when its outbox closes."""
    held = tails.hold(list(sub.positions))
    sub.outbox.when_closed(partial(_stop, tails, sub, held))
    return await _catch_up(tails, sub, held)


async def _catch_up(tails: Tails, sub: Subscriber, held: list[StreamTail]) -> Parked | None:
    """Report the gaps before its positions, replay, join: ``PARKED`` once live."""
    if not await tails.started(held):
        sub.outbox.close(CloseReason.ENDED)
        return None
    for key in sub.positions:
        info = await stream_info(tails.backend, key)
        gap, first = trimmed_before(info, sub.positions[key])
        if gap:
            sub.gap(key, first)
    if not await _replay(tails, sub, held):
        return None
    # Set in the step that joined: nothing was offered meanwhile.
    sub.on_behind = partial(_fell_behind, tails, sub, held)
    return PARKED


def _fell_behind(tails: Tails, sub: Subscriber, held: list[StreamTail]) -> None:
    """A live entry did not fit: leave the tails, and replay from the positions."""
    tails.fell_behind += 1
    tails.leave(sub, held)
    if sub.outbox.reason is None:
        sub.task = asyncio.create_task(_again(tails, sub, held))


async def _again(tails: Tails, sub: Subscriber, held: list[StreamTail]) -> None:
    """Catch up after falling behind; the stream's end, as its source's, if that fails."""
    try:
        if await _catch_up(tails, sub, held) is PARKED:
            sub.task = None
            return
    except CommandError as e:
        sub.outbox.push(error_event(e, sub.tenant))
    except Exception:
        log.exception("event stream source failed")
    sub.outbox.close(CloseReason.ENDED)


def _stop(tails: Tails, sub: Subscriber, held: list[StreamTail], _: object) -> None:
    """The connection closed: off its tails (stopped with their last holder)."""
    sub.live = False
    sub.on_behind = None
    tails.leave(sub, held)
    tails.release(held)
    task, sub.task = sub.task, None
    if task is not None:
        task.cancel()


async def _replay(tails: Tails, sub: Subscriber, held: list[StreamTail]) -> bool:
    """Read from the positions until nothing is left and the subscriber could join its
    tails: True once live (False: closed).

    Each read asks for one entry more than it delivers and remembers it: if that entry is
    gone at the next read (trimmed or deleted meanwhile), the gap is reported. A read that
    found the stream's end leaves nothing to remember: entries appended and removed before
    the next read go unnoticed here (the tail, counting, reports them to its live
    subscribers); only a subscriber still catching up can miss such a gap.
    """
    keys = list(sub.positions)
    outbox = sub.outbox
    backend = tails.backend
    expected: dict[str, StreamID] = {}
    while outbox.reason is None:
        if sub.meter is not None:
            await sub.meter.before_read()  # past the entries budget: wait for the rate
        seen = [tail.seq for tail in held]  # before reading: what the join must make up for
        reads = {
            key: await read_after(backend, key, sub.positions[key], READ_BATCH + 1) for key in keys
        }
        if outbox.reason is not None:
            # Closed while reading (its source is cancelled then, but a cancellation can be
            # lost on the way: see app/backends/redis/routing.py): joining now would keep it live on
            # its tails, and them running, until an entry found the outbox closed.
            return False
        gaps: list[tuple[str, StreamID | None]] = []
        for key in keys:
            entries = reads[key]
            nxt = expected.pop(key, None)
            if nxt is not None and (not entries or entries[0].id != nxt):
                gaps.append((key, entries[0].id if entries else None))
            if len(entries) > READ_BATCH:
                expected[key] = entries.pop().id
        if not any(reads.values()):
            for key, first in gaps:
                sub.gap(key, first)
            if tails.join(sub, held, seen):
                return True
            # The tails handed out more meanwhile than they keep: let them (and the socket)
            # run, then read on.
            await asyncio.sleep(0)
            continue
        for key, first in gaps:
            sub.gap(key, first)
        for key, entries in reads.items():
            for entry in entries:
                sub.deliver(EncodedEntry(key, entry))
        if sub.meter is not None:
            await sub.meter.after_read(sum(map(len, reads.values())))
        await outbox.drained()
    return False
