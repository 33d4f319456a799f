"""The journal's effects: what a write command did, one frozen dataclass per kind.

A write command records what it *did* — the ID XADD generated, the entries XREADGROUP
delivered to whom and when, the owner, time and count XCLAIM set — so that replaying the
records in order (``replay``) rebuilds the same state without reading the clock or deciding
anything again. The commands of one atomic step form one record (``Record``); storage
(app/storage) keeps the records and the engine knows nothing of where they go.

Adding a kind of effect takes three things: its dataclass here (and in ``Effect``), its entry
in ``codec.KINDS`` (the stored form), and its arm in ``replay.apply_effect``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from app.engine.consumer_groups import Consumer, ConsumerGroup, PendingEntry
from app.engine.delivery import DeliveryPolicy, Retention, Webhook
from app.engine.ids import StreamID
from app.engine.stream import Fields, TrimSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamCreated:
    """An empty stream was created (XADD on a new key, XGROUP CREATE ... MKSTREAM)."""

    key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyDeleted:
    """A key was deleted (DEL)."""

    key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Flushed:
    """Every key was deleted (FLUSHDB, FLUSHALL)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyRenamed:
    """A stream moved to a new name, groups and all, replacing what that name held (RENAME,
    RENAMENX)."""

    key: str
    new_key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamRestored:
    """A stream was restored from a DUMP payload (RESTORE) under a key that holds nothing
    (an old key it replaced was deleted first, ``KeyDeleted``). The payload is kept as the
    client sent it, footer checked: decoding it (``rdb.load_stream``) is deterministic and
    rebuilds the same nodes, counters and groups."""

    key: str
    payload: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigSet:
    """A node limit changed (CONFIG SET ``stream-node-max-entries`` / ``-bytes``): every
    stream's next append and every stream created later use it."""

    parameter: str
    value: int


@dataclass(frozen=True, slots=True, kw_only=True)
class EntryAdded:
    """An entry was appended with the ID the command generated (XADD)."""

    key: str
    id: StreamID
    fields: Fields


@dataclass(frozen=True, slots=True, kw_only=True)
class EntriesAdded:
    """A batch of entries was appended, with the IDs the commands generated, in order
    (consecutive XADDs to one key in a pipeline or MULTI, a REST batch: ``commands.bulk``)."""

    key: str
    ids: tuple[StreamID, ...]
    rows: tuple[Fields, ...]  # each entry's fields, as ``EntryAdded.fields``


@dataclass(frozen=True, slots=True, kw_only=True)
class EntriesDeleted:
    """Entries were deleted (XDEL); each was present, and ``max_deleted_id`` follows them."""

    key: str
    ids: tuple[StreamID, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Trimmed:
    """A stream was trimmed (XTRIM, XADD's MAXLEN / MINID). What trimming removes is a pure
    function of the stream's state, so the clause is enough to remove the same entries."""

    key: str
    trim: TrimSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class LastIdSet:
    """XSETID: the last ID, and the counters it was given (None: left unchanged)."""

    key: str
    last_id: StreamID
    entries_added: int | None
    max_deleted_id: StreamID | None


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupCreated:
    """A consumer group was created (XGROUP CREATE)."""

    key: str
    group: str
    last_id: StreamID
    entries_read: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupUpdated:
    """A group's last-delivered ID and entries-read were set (XREADGROUP, XGROUP SETID,
    XCLAIM ... LASTID)."""

    key: str
    group: str
    last_id: StreamID
    entries_read: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupDestroyed:
    """A consumer group was destroyed (XGROUP DESTROY)."""

    key: str
    group: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerSeen:
    """A consumer was created, or its seen-time refreshed."""

    key: str
    group: str
    consumer: str
    seen_time_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerDeleted:
    """A consumer was deleted with its pending entries (XGROUP DELCONSUMER)."""

    key: str
    group: str
    consumer: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingSet:
    """A pending entry was created or changed: its owner (None: none yet), delivery time and
    delivery count (XREADGROUP, XCLAIM, XAUTOCLAIM)."""

    key: str
    group: str
    id: StreamID
    consumer: str | None
    delivered_at_ms: int
    delivery_count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivered:
    """New entries delivered to one consumer by XREADGROUP ``>`` (without NOACK): each is now
    pending for it since ``delivered_at_ms`` with delivery count 1, as a ``PendingSet`` per
    entry would say, in one effect for the whole read."""

    key: str
    group: str
    consumer: str
    delivered_at_ms: int
    ids: tuple[StreamID, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Acked:
    """Pending entries left the group's PEL (XACK; XCLAIM / XAUTOCLAIM of deleted entries)."""

    key: str
    group: str
    ids: tuple[StreamID, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RefsDropped:
    """Every group's references to these IDs were dropped (DELREF of XDELEX / XACKDEL):
    each group holding one pending forgets it, its owner too (``refs.drop_refs``)."""

    key: str
    ids: tuple[StreamID, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Released:
    """Pending entries were released back to the group (XNACK): each now has no owner,
    delivery time 0 and the delivery count given, and joins the end of the released FIFO in
    this order; one that was not pending was created so (FORCE)."""

    key: str
    group: str
    ids: tuple[StreamID, ...]
    counts: tuple[int, ...]
    at_ms: int = 0  # their delivery time: 0 as Redis, the release time under a policy


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseKept:
    """The response of a request that carried an Idempotency-Key was stored under ``name``
    until ``expires_ms`` (``app.engine.responses``). ``key`` is ``RESPONSES_KEY``: the
    stream-like name the journal's visibility rule waits on."""

    key: str
    name: str
    fingerprint: bytes
    response: bytes
    expires_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class IdmpRecorded:
    """An XADD IDMP / IDMPAUTO appended an entry (its ``EntryAdded`` comes first): the
    producer's iid now names ``id``. ``now_ms`` is the clock the command read, so replay
    forgets the same expired iids before recording this one."""

    key: str
    producer: str
    iid: str
    id: StreamID
    now_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class IdmpDuplicate:
    """An XADD IDMP / IDMPAUTO met an iid already recorded: nothing was appended, only the
    stream's ``iids-duplicates`` counted it (and expired iids were forgotten at ``now_ms``)."""

    key: str
    now_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class IdmpConfigured:
    """XCFGSET: the stream's IDMP window and size (a change forgets every iid)."""

    key: str
    duration_s: int
    maxsize: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicySet:
    """A group's delivery policy was set, or removed (None)."""

    key: str
    group: str
    policy: DeliveryPolicy | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RetentionSet:
    """The retention kept for the stream name ``key`` was set, or removed (None)."""

    key: str
    retention: Retention | None


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookSet:
    """A group's webhook ``name`` was set (created or replaced), or removed (None)."""

    key: str
    group: str
    name: str
    webhook: Webhook | None


Effect = (
    StreamCreated
    | KeyDeleted
    | Flushed
    | KeyRenamed
    | StreamRestored
    | ConfigSet
    | EntryAdded
    | EntriesAdded
    | EntriesDeleted
    | Trimmed
    | LastIdSet
    | GroupCreated
    | GroupUpdated
    | GroupDestroyed
    | ConsumerSeen
    | ConsumerDeleted
    | PendingSet
    | Delivered
    | Acked
    | RefsDropped
    | Released
    | ResponseKept
    | IdmpRecorded
    | IdmpDuplicate
    | IdmpConfigured
    | PolicySet
    | RetentionSet
    | WebhookSet
)
Record = list[Effect]  # the effects of one atomic step, in the order they happened


class JournalSink(Protocol):
    """Receives each write command's effects, synchronously and in order."""

    def append(self, record: Record) -> None: ...


class ReplayError(Exception):
    """A journal record or snapshot the engine cannot apply: recovery must stop. ``index``:
    which record of the row being replayed it is, when records come a row at a time
    (``replay.restore_stored_rows``)."""

    def __init__(self, *args: object) -> None:
        # Set here, not as a class attribute: a compiled (mypyc) exception class has no
        # class-level default for it (bench/notes/i38-mypyc.md).
        super().__init__(*args)
        self.index: int | None = None


class Unstorable(ValueError):
    """A value the journal or a snapshot cannot store exactly (an integer past its 64-bit
    type, a string JSON would read back as another): it is refused before it is written,
    since it would not decode to what was applied."""


# -- recording ------------------------------------------------------------------------------


def group_updated(key: str, g: ConsumerGroup) -> GroupUpdated:
    return GroupUpdated(key=key, group=g.name, last_id=g.last_id, entries_read=g.entries_read)


def consumer_seen(key: str, g: ConsumerGroup, c: Consumer) -> ConsumerSeen:
    return ConsumerSeen(key=key, group=g.name, consumer=c.name, seen_time_ms=c.seen_time_ms)


def pending_set(key: str, g: ConsumerGroup, sid: StreamID, p: PendingEntry) -> PendingSet:
    return PendingSet(
        key=key,
        group=g.name,
        id=sid,
        consumer=p.consumer,
        delivered_at_ms=p.delivered_at_ms,
        delivery_count=p.delivery_count,
    )


def stamp_keys(record: Record, stamps: dict[str, int], seq: int) -> bool:
    """Set ``stamps[key] = seq`` for every key the record changed; False when it changed every
    key (``Flushed``; ``ConfigSet``, which changes how every stream grows). Storage uses it to
    hold back exactly the replies that could show the record before it is durable. It
    allocates nothing: it runs for every write, and per-record objects cost the cyclic GC more
    than the work itself."""
    for effect in record:
        if isinstance(effect, Flushed | ConfigSet):
            return False
        stamps[effect.key] = seq
        if isinstance(effect, KeyRenamed):
            stamps[effect.new_key] = seq
    return True
