"""Consumer-group delivery over SSE (``.../groups/{group}/consumers/{consumer}/events``).

Each connection is one XREADGROUP loop through the ``Backend``, so it runs the same in front
of the embedded engine and in front of Redis: first the consumer's history (its pending
entries, as ``XREADGROUP ... STREAMS key 0`` gives them, or after ``Last-Event-ID``), then new
entries (``>``), blocking between them (``GROUP_BLOCK_MS`` at a time, looping, so a blocked
read never holds a Redis connection for good). The backend serves blocked group readers in
arrival order, so subscribers of one group share the entries, each entry going to exactly one
of them. The first read creates the consumer, as XREADGROUP does.

Flow control: the loop takes no more entries from the group than its socket has written
(``Outbox.drained``), so a slow subscriber leaves entries to the others; with ``max_unacked``
it takes none while the consumer holds that many pending entries (XPENDING's summary), and
looks again every ``ACK_POLL_MS`` until acks (over any surface, or straight to Redis) bring it
below. Entries delivered and then lost with the connection stay pending: the next connection
of that consumer gets them first, as history. With ``noack`` they are not recorded as pending
(at most once).

With ``claim_ms`` (the route's ``claim_idle_ms``) each read of new entries is an
``XREADGROUP ... CLAIM min-idle-time`` (Redis 8.4): pending entries of the group idle that
long, those released by XNACK first, are taken over and sent before new ones, each event
saying its idle time and delivery count. An entry this consumer was sent and did not
acknowledge within that time comes again, as to any other consumer: a visibility timeout.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import partial

from app.api.rest.schemas.entries import FieldsForm
from app.api.sse.outbox import Outbox
from app.api.sse.settled import RETRY_S, settled
from app.api.sse.wire import EncodedEntry, claimed_event, deleted_event
from app.backends.errors import StorageUnavailable
from app.backends.roles import GroupReadRoles
from app.engine.commands.reads import ReadRequest
from app.engine.ids import StreamID, format_id
from app.engine.replies import ClaimedEntry, StreamRead
from app.engine.stream import Entry

__all__ = ["ACK_POLL_MS", "GROUP_BATCH", "GROUP_BLOCK_MS", "GroupDelivery", "deliver"]

GROUP_BATCH = 100  # entries per read: small, so one subscriber does not take a whole burst
GROUP_BLOCK_MS = 5000  # one blocking XREADGROUP's wait; then it is issued again
# While held back by max_unacked, the consumer's pending count is looked at this often: no
# backend signals an XACK to readers (Redis's blocked readers only look at new entries).
ACK_POLL_MS = 100


@dataclass(frozen=True, slots=True)
class GroupDelivery:
    key: str
    group: str
    consumer: str
    after: StreamID  # history starts after this ID (0-0: all of it)
    noack: bool = False
    max_unacked: int = 0  # 0: no limit
    form: FieldsForm = FieldsForm.object
    claim_ms: int | None = None  # CLAIM min-idle-time on reads of new entries; None: no claim


async def held(backend: GroupReadRoles, d: GroupDelivery) -> int:
    """How many entries the consumer holds unacknowledged (NOGROUP if the group is gone)."""
    summary = await backend.pending_summary(d.key, d.group)
    return next((n for name, n in summary.consumers if name == d.consumer), 0)


def _push(outbox: Outbox, d: GroupDelivery, reads: list[StreamRead]) -> StreamID | None:
    """Queue the entries read; returns the last ID, None if there were none."""
    last = None
    for read in reads:
        for entry in read.entries:
            if isinstance(entry, Entry):
                outbox.push(EncodedEntry(d.key, entry).single(d.form))
            elif isinstance(entry, ClaimedEntry):
                outbox.push(claimed_event(entry, d.form))
            else:
                outbox.push(deleted_event(entry.id))
            last = entry.id
    return last


async def deliver(backend: GroupReadRoles, d: GroupDelivery, outbox: Outbox) -> None:
    """History first, then new entries, until the connection closes.

    While the database is away (``StorageUnavailable``) the loop waits. A history read is
    asked again. A read of new entries may have made them pending for this consumer before
    its answer failed: the loop goes back to the consumer's history after the last entry it
    sent, which holds them (they may come twice, never not at all)."""
    after: StreamID | None = d.after
    last = None  # the last entry sent
    while outbox.reason is None:
        while after is not None and outbox.reason is None:
            history = ReadRequest(
                [d.key], [format_id(after)], GROUP_BATCH, None, d.group, d.consumer
            )
            reads = await settled(partial(backend.read, history))
            after = _push(outbox, d, reads)
            last = after or last
            await outbox.drained()
        count = GROUP_BATCH
        if d.max_unacked:
            room = d.max_unacked - await settled(partial(held, backend, d))
            if room <= 0:
                await asyncio.sleep(ACK_POLL_MS / 1000)
                continue
            count = min(count, room)
        new = ReadRequest(
            [d.key], [">"], count, GROUP_BLOCK_MS, d.group, d.consumer, d.noack, d.claim_ms
        )
        try:
            reads = await backend.read(new)
        except StorageUnavailable:
            await asyncio.sleep(RETRY_S)
            after = last or d.after
            continue
        last = _push(outbox, d, reads) or last
        await outbox.drained()
