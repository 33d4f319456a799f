"""Consumer-group delivery over SSE (``.../groups/{group}/consumers/{consumer}/events``).

Each connection is one XREADGROUP loop, through the engine's own operations: first the
consumer's history (its pending entries, as ``XREADGROUP ... STREAMS key 0`` gives them, or
after ``Last-Event-ID``), then new entries (``>``), blocking between them. Blocked group
readers are served in arrival order inside the XADD, so subscribers of one group share the
entries, each entry going to exactly one of them.

Flow control: the loop takes no more entries from the group than its socket has written
(``Outbox.drained``), so a slow subscriber leaves entries to the others; with ``max_unacked``
it takes none while the consumer holds that many pending entries, and waits for acks (XACK
signals the stream's key) to go on. Entries delivered and then lost with the connection stay
pending: the next connection of that consumer gets them first, as history. With ``noack`` they
are not recorded as pending (at most once).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.api.rest.schemas.entries import FieldsForm
from app.api.sse.commit import committed
from app.api.sse.outbox import Outbox
from app.api.sse.wire import EncodedEntry, deleted_event
from app.durability import Durability
from app.engine.blocking import Block
from app.engine.commands.groups import find_group
from app.engine.commands.reads import NEW, ReadArgs, xread
from app.engine.groups import ConsumerGroup
from app.engine.ids import StreamID
from app.engine.keyspace import Keyspace
from app.engine.replies import StreamRead
from app.engine.store import Store
from app.engine.stream import Entry
from app.engine.waiting import wait

__all__ = ["ACK_RECHECK_MS", "GROUP_BATCH", "GroupDelivery", "deliver"]

GROUP_BATCH = 100  # entries per read: small, so one subscriber does not take a whole burst
# While held back by max_unacked, the pending count is re-checked at least this often, for
# what does not signal the key (XCLAIM, XGROUP DELCONSUMER moving entries away).
ACK_RECHECK_MS = 1000


@dataclass(frozen=True, slots=True)
class GroupDelivery:
    key: str
    group: str
    consumer: str
    after: StreamID  # history starts after this ID (0-0: all of it)
    noack: bool = False
    max_unacked: int = 0  # 0: no limit
    form: FieldsForm = FieldsForm.object


def group_of(ks: Keyspace, key: str, group: str) -> ConsumerGroup:
    """The group, or Redis's NOGROUP error (404 before the stream starts, an ``error`` event
    after it, e.g. when the group is destroyed meanwhile)."""
    return find_group(ks, key, group)[1]


def held(ks: Keyspace, d: GroupDelivery) -> int:
    """How many entries the consumer holds unacknowledged."""
    consumer = group_of(ks, d.key, d.group).consumers.get(d.consumer)
    return 0 if consumer is None else len(consumer.pel)


def _read(ks: Keyspace, args: ReadArgs) -> list[StreamRead] | Block | None:
    """XREADGROUP with the group checked first (the typed read assumes it exists)."""
    group_of(ks, args.keys[0], args.group or "")
    return xread(ks, args)


def _push(outbox: Outbox, d: GroupDelivery, reads: list[StreamRead] | None) -> StreamID | None:
    """Queue the entries read; returns the last ID, None if there were none."""
    last = None
    for read in reads or ():
        for entry in read.entries:
            if isinstance(entry, Entry):
                outbox.push(EncodedEntry(d.key, entry).single(d.form))
            else:
                outbox.push(deleted_event(entry.id))
            last = entry.id
    return last


async def deliver(store: Store, durability: Durability, d: GroupDelivery, outbox: Outbox) -> None:
    """History first, then new entries, until the connection closes."""
    after: StreamID | None = d.after
    while after is not None and outbox.reason is None:
        history = ReadArgs([d.key], [after], GROUP_BATCH, None, d.group, d.consumer)
        reply = store.run(_read, history)
        assert not isinstance(reply, Block)  # history never blocks
        if reply:
            await committed(durability, [d.key])  # reading history counts deliveries: a write
        after = _push(outbox, d, reply)
        await outbox.drained()
    while outbox.reason is None:
        count = GROUP_BATCH
        if d.max_unacked:
            room = d.max_unacked - held(store.keyspace, d)
            if room <= 0:
                await _wait_for_acks(store, d)
                continue
            count = min(count, room)
        new = ReadArgs([d.key], [NEW], count, 0, d.group, d.consumer, d.noack)
        reply = store.run(_read, new)
        if isinstance(reply, Block):
            reply = await wait(store, reply)
        if reply:
            await committed(durability, [d.key])  # the entries are now pending for this consumer
        _push(outbox, d, reply)
        await outbox.drained()


async def _wait_for_acks(store: Store, d: GroupDelivery) -> None:
    """Park on the stream's key until the consumer holds fewer than ``max_unacked``."""
    ks = store.keyspace

    def retry(key: str) -> bool | None:
        stream = ks.get(key)
        if stream is None or d.group not in stream.groups:
            return True  # the next read reports why
        return True if held(ks, d) < d.max_unacked else None

    await wait(store, Block([d.key], ACK_RECHECK_MS, retry))
