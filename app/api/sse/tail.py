"""Live tails (``/v1/streams/{stream}/events``, ``/v1/events``): one reader per stream.

A subscriber first replays what it missed from its own cursor, in batches at the speed of its
socket (``Outbox.drained``), so history never piles up in memory. Once a read comes back empty
it joins its streams' ``StreamTail`` in the same synchronous step, so no entry can slip
between the two. A ``StreamTail`` is the one blocked XREAD on its stream: after each XADD it
reads the new entries once, encodes each once, and hands the same bytes to every subscriber;
a subscriber takes only entries past its own position, so joining while the tail is behind
repeats nothing. The tail stops (and its waiter goes) with its last subscriber. A subscriber
whose outbox cannot take a live event (a burst, a slow socket) leaves the tails and replays
from its own position again: memory stays bounded and nothing is skipped.

Entries removed before a subscriber read them (trimmed, deleted) are reported with a ``gap``
event, then the subscriber moves on from the first entry still there.
"""

from __future__ import annotations

import asyncio
import logging

from app.api.binary import quote_name
from app.api.rest.schemas.entries import FieldsForm
from app.api.sse.commit import committed
from app.api.sse.outbox import CloseReason, Outbox
from app.api.sse.wire import EncodedEntry, gap_event
from app.durability import Durability
from app.engine.blocking import Block
from app.engine.commands.reads import ReadArgs, xread
from app.engine.ids import MIN_ID, StreamID, format_id
from app.engine.keyspace import Keyspace
from app.engine.store import Store
from app.engine.stream import Entry
from app.engine.waiting import wait

__all__ = ["READ_BATCH", "StreamTail", "Subscriber", "Tails", "follow", "trimmed_before"]

log = logging.getLogger("xstreams.sse")

READ_BATCH = 512  # entries per read, history and live alike


def trimmed_before(ks: Keyspace, key: str, after: StreamID) -> tuple[bool, StreamID | None]:
    """Whether a resume point is older than the stream's first entry, and that entry's ID.

    Used when a replay starts (a connection resuming, a subscriber that fell behind): only a
    stream that ever lost entries (``entries_added`` above its length) can have a gap, and
    then the rule errs on the safe side — a position whose own entry was trimmed reports a
    gap even if nothing lay between it and the first entry. Past that point gaps are found
    exactly (``_replay`` and ``StreamTail`` know which entry comes next, or how many).
    """
    stream = ks.get(key)
    if stream is None or stream.entries_added <= stream.length:
        return False, None
    if not stream.length:
        return after < stream.last_id, None
    first = stream.first_id
    following = after.incr()
    return following is not None and following < first, first


def read_now(store: Store, args: ReadArgs) -> dict[str, list[Entry]]:
    """XREAD without BLOCK: each stream's entries after its position."""
    reply = store.run(xread, args)
    assert not isinstance(reply, Block)  # no BLOCK option, no Block
    # A plain XREAD never gives a MissingEntry (only a group's history does).
    return {r.key: [e for e in r.entries if isinstance(e, Entry)] for r in reply or ()}


class Subscriber:
    """One connection following one or more streams, each at its own position.

    ``live`` while attached to its streams' tails; it falls behind (back to reading from its
    own positions) when a live event does not fit in its outbox.
    """

    __slots__ = ("_behind", "_names", "form", "live", "multi", "outbox", "positions")

    def __init__(
        self, outbox: Outbox, positions: dict[str, StreamID], form: FieldsForm, multi: bool
    ) -> None:
        self.outbox = outbox
        self.positions = positions
        self.form = form
        self.multi = multi
        self.live = False
        self._behind: asyncio.Future[None] | None = None
        self._names = {key: quote_name(key).encode() for key in positions}

    def _event(self, encoded: EncodedEntry) -> bytes:
        if self.multi:
            return b"id: %s\n%s" % (self._event_id(), encoded.multi(self.form))
        return encoded.single(self.form)

    def _event_id(self) -> bytes:
        names = self._names
        return b"&".join(
            b"%s=%s" % (names[key], format_id(sid).encode()) for key, sid in self.positions.items()
        )

    def deliver(self, encoded: EncodedEntry) -> None:
        """An entry read from this subscriber's own position (replay: paced by the reader)."""
        self.positions[encoded.stream] = encoded.entry.id
        self.outbox.push(self._event(encoded))

    def offer(self, encoded: EncodedEntry) -> None:
        """A live entry from a tail: taken if new to this subscriber and if it fits.

        The fan-out's inner loop (subscribers x entries): kept to a few attribute reads."""
        if not self.live:
            return
        key = encoded.stream
        sid = encoded.entry.id
        previous = self.positions[key]
        if sid <= previous:
            return  # already sent while catching up
        self.positions[key] = sid
        chunk = self._event(encoded) if self.multi else encoded.single(self.form)
        if not self.outbox.offer(chunk):
            self.positions[key] = previous
            self.go_behind()

    def go_behind(self) -> None:
        """Stop taking live entries; ``follow`` goes back to reading from the positions."""
        self.live = False
        behind = self._behind
        if behind is not None and not behind.done():
            behind.set_result(None)

    def go_live(self) -> asyncio.Future[None]:
        """Take live entries from now on; the future resolves when this falls behind."""
        self.live = True
        self._behind = asyncio.get_running_loop().create_future()
        return self._behind

    def gap(self, key: str, first: StreamID | None) -> None:
        """Entries after this subscriber's position, before ``first``, went unread."""
        after = self.positions[key]
        if first is None or after < first:
            self.outbox.push(gap_event(after, first, key if self.multi else None))

    def live_gap(self, key: str, first: StreamID | None) -> None:
        if self.live:
            self.gap(key, first)


class StreamTail:
    """The one reader of a stream's new entries for all its live subscribers.

    It counts: every entry the stream added since the last sweep was either read by this
    sweep or removed unread (a burst trimmed before the tail ran), which is a ``gap``.
    """

    def __init__(self, store: Store, durability: Durability, key: str) -> None:
        self.store = store
        self.durability = durability
        self.key = key
        self.subscribers: dict[Subscriber, None] = {}
        stream = store.keyspace.get(key)
        self.cursor = stream.last_id if stream is not None else MIN_ID
        self.added = stream.entries_added if stream is not None else 0
        self.task = asyncio.create_task(self._run(), name=f"sse-tail:{key}")

    async def _run(self) -> None:
        store, key = self.store, self.key
        try:
            while True:
                entries, gap = self._sweep()
                if entries or gap:
                    await committed(self.durability, [key])
                    self._deliver(entries, gap)
                # Only a wake-up (COUNT 1: the waiter reads no more than that): the next
                # sweep reads and counts.
                reply = store.run(xread, ReadArgs([key], [self.cursor], count=1, block_ms=0))
                if isinstance(reply, Block):
                    await wait(store, reply)
        except Exception:
            # Never leave subscribers waiting on a dead tail: end their streams, so they
            # reconnect (with Last-Event-ID) to a fresh one.
            log.exception("live tail of %r failed", key)
            for sub in list(self.subscribers):
                sub.outbox.close(CloseReason.ENDED)

    def _sweep(self) -> tuple[list[Entry], bool]:
        """Read everything past the cursor (no await: nothing changes meanwhile); and whether
        entries were removed before they could be read."""
        ks = self.store.keyspace
        entries: list[Entry] = []
        while True:
            got = read_now(self.store, ReadArgs([self.key], [self.cursor], count=READ_BATCH))
            entries.extend(got.get(self.key, ()))
            if entries:
                self.cursor = entries[-1].id
            if len(got.get(self.key, ())) < READ_BATCH:
                break
        stream = ks.get(self.key)
        added = stream.entries_added if stream is not None else 0
        gap = added - self.added > len(entries)
        self.added = added
        return entries, gap

    def _deliver(self, entries: list[Entry], gap: bool) -> None:
        """Hand each entry, encoded once, to every subscriber."""
        subscribers = list(self.subscribers)
        if gap:
            first = entries[0].id if entries else None
            for sub in subscribers:
                sub.live_gap(self.key, first)
        for entry in entries:
            encoded = EncodedEntry(self.key, entry)
            for sub in subscribers:
                sub.offer(encoded)


class Tails:
    """The running ``StreamTail`` of each followed stream."""

    def __init__(self, store: Store, durability: Durability) -> None:
        self.store = store
        self.durability = durability
        self.by_key: dict[str, StreamTail] = {}
        self.fell_behind = 0  # times a live subscriber's outbox was full (for /metrics)

    def attach(self, key: str, sub: Subscriber) -> None:
        tail = self.by_key.get(key)
        if tail is None:
            tail = self.by_key[key] = StreamTail(self.store, self.durability, key)
        tail.subscribers[sub] = None

    def detach(self, key: str, sub: Subscriber) -> None:
        tail = self.by_key.get(key)
        if tail is None:
            return
        tail.subscribers.pop(sub, None)
        if not tail.subscribers:
            del self.by_key[key]
            tail.task.cancel()  # its blocked read goes with it (``wait`` unregisters)


async def follow(tails: Tails, sub: Subscriber) -> None:
    """Replay from the subscriber's positions, then follow the streams live; after falling
    behind, replay again from where it stopped. Until the connection closes."""
    keys = list(sub.positions)
    try:
        while sub.outbox.reason is None:
            ks = tails.store.keyspace
            for key in keys:
                gap, first = trimmed_before(ks, key, sub.positions[key])
                if gap:
                    sub.gap(key, first)
            behind = await _replay(tails, sub)
            if behind is None:
                return
            await behind
            tails.fell_behind += 1
            for key in keys:
                tails.detach(key, sub)
    finally:
        if sub.live:
            sub.live = False
            for key in keys:
                tails.detach(key, sub)


async def _replay(tails: Tails, sub: Subscriber) -> asyncio.Future[None] | None:
    """Read from the positions until nothing is left, then attach to the tails in that same
    step; returns the future that says the subscriber fell behind (None: closed).

    Each read asks for one entry more than it delivers and remembers it: if that entry is
    gone at the next read (trimmed or deleted meanwhile), the gap is reported.
    """
    keys = list(sub.positions)
    outbox = sub.outbox
    store = tails.store
    expected: dict[str, StreamID] = {}
    while outbox.reason is None:
        args = ReadArgs(keys, [sub.positions[k] for k in keys], count=READ_BATCH + 1)
        reads = read_now(store, args)
        gaps: list[tuple[str, StreamID | None]] = []
        for key in keys:
            entries = reads.get(key, [])
            nxt = expected.pop(key, None)
            if nxt is not None and (not entries or entries[0].id != nxt):
                gaps.append((key, entries[0].id if entries else None))
            if len(entries) > READ_BATCH:
                expected[key] = entries.pop().id
        if not any(reads.values()):
            # Nothing after any position, in this same step: from now on, follow live.
            for key, first in gaps:
                sub.gap(key, first)
            behind = sub.go_live()
            for key in keys:
                tails.attach(key, sub)
            return behind
        await committed(tails.durability, keys)
        for key, first in gaps:
            sub.gap(key, first)
        for key, entries in reads.items():
            for entry in entries:
                sub.deliver(EncodedEntry(key, entry))
        await outbox.drained()
    return None
