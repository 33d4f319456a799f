"""One live-tail connection's place in its streams: positions, and events built from them.

A ``Subscriber`` is fed two ways: ``deliver`` for entries it read itself from its positions
(replay, paced by its socket), ``offer`` for live entries a ``StreamTail`` hands to all its
subscribers. ``offer`` takes only entries past the subscriber's position, so an entry it
already has (read while catching up, or handed out twice while joining) is never sent again,
and it refuses what does not fit the outbox: the subscriber then goes behind and replays from
its positions, which keeps memory bounded and skips nothing.

A subscriber whose credential is held to an entries rate carries its ``Meter``
(app/api/meter.py): the entries the tails hand it are counted and spent by a task of their
own (a spend cannot wait inside the fan-out); once that leaves the budget spent, the
subscriber goes behind, and its replay waits for the rate before it reads on. So a live tail
past its budget pauses, and sends every entry afterwards.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from app.access.prefix import NO_PREFIX, TenantPrefix
from app.api.binary import quote_name
from app.api.meter import Meter
from app.api.rest.schemas.entries import FieldsForm
from app.api.sse.outbox import Outbox
from app.api.sse.wire import EncodedEntry, gap_event
from app.engine.ids import StreamID, format_id

__all__ = ["Subscriber"]


class Subscriber:
    """One connection following one or more streams, each at its own position.

    ``live`` while attached to its streams' tails; it falls behind (back to reading from its
    own positions) when a live event does not fit in its outbox.
    """

    __slots__ = (
        "_names",
        "_spending",
        "_unspent",
        "form",
        "live",
        "meter",
        "multi",
        "on_behind",
        "outbox",
        "positions",
        "task",
        "tenant",
    )

    def __init__(
        self,
        outbox: Outbox,
        positions: dict[str, StreamID],
        form: FieldsForm,
        multi: bool,
        meter: Meter | None = None,
        tenant: TenantPrefix = NO_PREFIX,
    ) -> None:
        self.outbox = outbox
        self.positions = positions
        self.form = form
        self.multi = multi
        self.live = False
        # While live it has no task: falling behind calls this (``tail.follow``), which
        # starts the task that replays from its positions.
        self.on_behind: Callable[[], None] | None = None
        self.task: asyncio.Task[None] | None = None  # that task, while it runs
        # The names a multi-stream connection shows (event IDs, ``stream`` in the data): the
        # credential's, its prefix off (app/access/prefix.py).
        self.tenant = tenant
        self._names = {key: quote_name(tenant.outward(key)).encode() for key in positions}
        self.meter = meter  # None: its entries are not counted
        self._unspent = 0  # entries the tails handed it, not spent yet
        self._spending: asyncio.Task[None] | None = None

    def _event(self, encoded: EncodedEntry) -> bytes:
        if self.multi:
            return b"id: %s\n%s" % (self._event_id(), encoded.multi(self.form, self.tenant))
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

    def catch_up(self, encoded: EncodedEntry) -> None:
        """An entry a tail handed out before this subscriber joined it: taken if new to it,
        whatever the outbox holds (a bounded batch, as a replay read's)."""
        if encoded.entry.id > self.positions[encoded.stream]:
            self.deliver(encoded)
            if self.meter is not None:
                self._owe()

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
        elif self.meter is not None:
            self._owe()

    def _owe(self) -> None:
        """Count one entry handed out live, and have it spent."""
        self._unspent += 1
        if self._spending is None:
            self._spending = asyncio.get_running_loop().create_task(self._spend())

    async def _spend(self) -> None:
        """Spend what was handed out; past the budget, go behind (the replay waits)."""
        meter = self.meter
        try:
            while self._unspent and meter is not None:
                n, self._unspent = self._unspent, 0
                left = await meter.after_read(n)
                if left is not None and left.remaining == 0 and self.live:
                    self.go_behind()
        finally:
            self._spending = None

    def go_behind(self) -> None:
        """Stop taking live entries and go back to reading from the positions."""
        self.live = False
        on_behind, self.on_behind = self.on_behind, None
        if on_behind is not None:
            on_behind()

    def go_live(self) -> None:
        """Take live entries from now on (until ``go_behind``)."""
        self.live = True

    def gap(self, key: str, first: StreamID | None) -> None:
        """Entries after this subscriber's position, before ``first``, went unread."""
        after = self.positions[key]
        if first is None or after < first:
            shown = self.tenant.outward(key) if self.multi else None
            self.outbox.push(gap_event(after, first, shown))

    def live_gap(self, key: str, first: StreamID | None) -> None:
        if self.live:
            self.gap(key, first)
