"""Replay: apply journal records to a keyspace, rebuilding what the commands built.

Replay refuses, with ``ReplayError``, any effect that does not fit the state it meets: an
entry ID not greater than its stream's last ID (XADD's own rule, ``id_follows``), a stream
created that exists or deleted that does not, a group created twice or destroyed while
absent, a consumer removed or an entry deleted or acknowledged that is not there. A command
records each of those only when it happened, so on a sound journal none can occur; on a
damaged or edited one, applying them anyway would silently build a state that differs from
the one acknowledged (entries out of order, a group reset, counters off).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import groupby
from operator import itemgetter
from typing import Any, assert_never

from app.engine.codec import record_from_wire
from app.engine.consumer_groups import Consumer, ConsumerGroup
from app.engine.effects import (
    Acked,
    ConfigSet,
    ConsumerDeleted,
    ConsumerSeen,
    Delivered,
    Effect,
    EntriesAdded,
    EntriesDeleted,
    EntryAdded,
    Flushed,
    GroupCreated,
    GroupDestroyed,
    GroupUpdated,
    IdmpConfigured,
    IdmpDuplicate,
    IdmpRecorded,
    KeyDeleted,
    KeyRenamed,
    LastIdSet,
    PendingSet,
    PolicySet,
    Record,
    RefsDropped,
    Released,
    ReplayError,
    ResponseKept,
    RetentionSet,
    StreamCreated,
    StreamRestored,
    Trimmed,
    WebhookSet,
)
from app.engine.ids import MIN_ID, StreamID
from app.engine.keyspace import Keyspace
from app.engine.rdb import BadPayload, load_stream
from app.engine.rdbio import PayloadVersionError
from app.engine.record_fields import (
    entries_from_wire,
    entry_from_wire,
    idmp_from_wire,
    kept_from_wire,
    sid_text,
)
from app.engine.refs import drop_refs, trim_stream
from app.engine.responses import RESPONSES_KEY, Stored
from app.engine.snapshot import configure, decode_snapshot
from app.engine.stream import Fields, Stream, id_follows, ids_follow


def apply_record(ks: Keyspace, record: Record) -> None:
    """Apply one record's effects in order; raises ReplayError for one that does not fit."""
    for effect in record:
        _apply(ks, effect)


def _apply(ks: Keyspace, effect: Effect) -> None:
    try:
        apply_effect(ks, effect)
    except ReplayError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        raise ReplayError(f"cannot apply effect {effect!r}: {e!r}") from e


def restore(ks: Keyspace, snapshot: bytes | None, records: Iterable[Record]) -> int:
    """Rebuild ``ks`` (empty) from a snapshot and the records after it; returns how many."""
    if snapshot is not None:
        decode_snapshot(snapshot, ks)
    replay = _Replay(ks)
    n = 0
    for record in records:
        replay.record(record)
        n += 1
    replay.end()
    return n


def restore_stored(ks: Keyspace, snapshot: bytes | None, values: Iterable[Any]) -> int:
    """``restore`` from records in their stored form (decoded JSON, ``app.engine.codec``),
    as recovery reads them: an entry is appended from its stored list without becoming an
    ``EntryAdded`` first. Each record is decoded whole before any of it is applied, so a
    malformed one changes nothing."""
    return restore_stored_rows(ks, snapshot, ([value] for value in values))


def restore_stored_rows(ks: Keyspace, snapshot: bytes | None, rows: Iterable[list[Any]]) -> int:
    """``restore_stored`` of records handed a journal row (a list of them) at a time, as
    recovery reads them: nothing runs per record between the rows' records but replay
    itself. A ``ReplayError`` carries the ``index`` in its row of the record that raised."""
    if snapshot is not None:
        decode_snapshot(snapshot, ks)
    replay = _Replay(ks)
    n = 0
    for values in rows:
        replay.stored(values)
        n += len(values)
    replay.end()
    return n


# Effects that neither read nor change a stream's entries: applied while appends are held.
_BESIDE = (IdmpRecorded, IdmpDuplicate, ResponseKept)
_FIRST = itemgetter(0)


class _Replay:
    """Replays records, appending the entries of consecutive ones to one stream in one
    ``append_many`` (as the bulk path appends a pipeline's XADDs) until an effect that may
    read or change entries comes, or another stream. An idempotent XADD's IDMP state or
    kept response does not break a run (``_BESIDE``). Each entry is checked as its record
    arrives, so a bad one is refused at its own record; the append itself cannot fail on
    checked entries."""

    __slots__ = ("ids", "key", "ks", "last", "rows", "stream")
    MOST = 4096  # entries held before they are appended anyway

    def __init__(self, ks: Keyspace) -> None:
        self.ks = ks
        self.stream: Stream | None = None
        self.key = ""
        self.last = MIN_ID
        self.ids: list[StreamID] = []
        self.rows: list[Fields] = []

    def record(self, record: Record) -> None:
        for effect in record:
            self.effect(effect)

    def effect(self, effect: Effect) -> None:
        if isinstance(effect, EntryAdded):
            self.add(effect.key, effect.id, effect.fields)
        elif isinstance(effect, EntriesAdded):
            for sid, fields in zip(effect.ids, effect.rows, strict=True):
                self.add(effect.key, sid, fields)
        elif isinstance(effect, _BESIDE):
            _apply(self.ks, effect)
        else:
            self.end()
            _apply(self.ks, effect)

    def stored(self, values: list[Any]) -> None:
        """Records in their stored form. The common ones go without dataclasses: a lone
        entry, an idempotent XADD's entry and IDMP record, a kept response. Consecutive
        lone entries are decoded together (``_adds``), a row of nothing else in C passes
        (``_plain_row``). Any other record is decoded as effects, then applied. Either way
        a record is decoded whole before any of it is applied."""
        if len(values) > 1 and self._plain_row(values):
            return
        add = self.add
        i = 0
        held: list[list[Any]] = []  # lone entries met and not yet applied
        at = 0  # the index of held[0]
        try:
            for i, value in enumerate(values):
                if type(value) is list:
                    n = len(value)
                    if n == 1:
                        w = value[0]
                        if type(w) is list and len(w) == 4 and w[0] == "add":
                            if not held:
                                at = i
                            held.append(w)
                            continue
                    if held:
                        self._held(held, at)
                        held = []
                    if n == 1:
                        w = value[0]
                        if (
                            type(w) is list and len(w) == 5
                            and w[0] == "remember" and w[1] == RESPONSES_KEY
                        ):  # fmt: skip
                            name, fingerprint, response, expires_ms = kept_from_wire(w)
                            self.ks.responses.put(name, Stored(fingerprint, response, expires_ms))
                            continue
                    elif n == 2:
                        a, b = value
                        if (
                            type(a) is list and len(a) == 4 and a[0] == "add"
                            and type(b) is list and len(b) == 6 and b[0] == "idmp"
                        ):  # fmt: skip
                            key, sid, fields = entry_from_wire(a)
                            idmp = idmp_from_wire(b, sid)
                            add(key, sid, fields)
                            _record_idmp(self.ks, *idmp)
                            continue
                elif held:
                    self._held(held, at)
                    held = []
                self.record(record_from_wire(value))
            if held:
                self._held(held, at)
        except ReplayError as e:
            if e.index is None:
                e.index = i
            raise

    def _held(self, held: list[list[Any]], at: int) -> None:
        """Apply the lone entries ``held`` (records ``at`` on): together when they decode
        and fit, else one by one, so the one refused is named (``ReplayError.index``)."""
        if len(held) > 1 and self._adds(*zip(*held, strict=True)):
            return
        for k, w in enumerate(held):
            try:
                self.add(*entry_from_wire(w))
            except ReplayError as e:
                e.index = at + k
                raise

    def _plain_row(self, values: list[Any]) -> bool:
        """A row whose every record is one ``add`` effect (a run of XADDs), checked and
        applied in C passes over the row; False, with nothing applied, for any other row
        (or one that does not decode or fit: ``stored`` then finds the record at fault)."""
        try:
            if set(map(len, values)) != {1}:
                return False
            ws = list(map(_FIRST, values))
            if set(map(type, ws)) != {list} or set(map(len, ws)) != {4}:
                return False
            kinds, keys, texts, fieldss = zip(*ws, strict=True)
            if set(kinds) != {"add"}:
                return False
        except (TypeError, KeyError, IndexError):  # a record that is no list, or holds none
            return False
        return self._adds(kinds, keys, texts, fieldss)

    def _adds(
        self,
        kinds: Sequence[Any],
        keys: Sequence[Any],
        texts: Sequence[Any],
        fieldss: Sequence[Any],
    ) -> bool:
        """``add`` of many ``add`` effects (``kinds`` all "add"), decoded together
        (``entries_from_wire``) and checked stream by stream (``ids_follow``) before any is
        held; False, with nothing applied, when one does not decode or fit."""
        decoded = entries_from_wire(keys, texts, fieldss)
        if decoded is None:
            return False
        ids, rows = decoded
        if keys.count(keys[0]) == len(keys):
            runs = [(keys[0], len(keys))]
        else:
            runs = [(key, sum(1 for _ in group)) for key, group in groupby(keys)]
        lasts: dict[str, StreamID] = {}
        if self.stream is not None:
            lasts[self.key] = self.last  # the stream.last_id of what is held
        plan: list[tuple[str, int, int]] = []
        start = 0
        for key, size in runs:
            last = lasts.get(key)
            if last is None:
                stream = self.ks.get(key)
                if stream is None:
                    return False
                last = stream.last_id
            end = start + size
            if not ids_follow(last, ids[start:end]):
                return False
            lasts[key] = ids[end - 1]
            plan.append((key, start, end))
            start = end
        for key, start, end in plan:
            if self.stream is None or key != self.key:
                self.end()
                self.stream = _stream(self.ks, key)
                self.key = key
            self.last = ids[end - 1]
            if start == 0 and end == len(ids) and not self.ids:
                self.ids, self.rows = ids, rows
            else:
                self.ids += ids[start:end]
                self.rows += rows[start:end]
            if len(self.ids) >= self.MOST:
                self._flush()
        return True

    def add(self, key: str, sid: StreamID, fields: Fields) -> None:
        if self.stream is None or key != self.key:
            self.end()
            self.stream = _stream(self.ks, key)
            self.key, self.last = key, self.stream.last_id
        if not id_follows(self.last, sid):
            raise ReplayError(
                f"entry {sid_text(sid)} of {key!r} is not greater than the stream's last ID"
                f" {sid_text(self.last)}: IDs would go backwards"
            )
        self.last = sid
        self.ids.append(sid)
        self.rows.append(fields)
        if len(self.ids) >= self.MOST:
            self._flush()

    def _flush(self) -> None:
        if self.ids and self.stream is not None:
            self.stream.append_many(self.ids, self.rows)
            self.ids, self.rows = [], []

    def end(self) -> None:
        """Append what is held and forget the stream (the next record may delete it)."""
        self._flush()
        self.stream = None


def _follows(key: str, last: StreamID, ids: Iterable[StreamID]) -> StreamID:
    """Refuse entries whose IDs do not each exceed the one before (``id_follows``); the last."""
    for sid in ids:
        if not id_follows(last, sid):
            raise ReplayError(
                f"entry {sid_text(sid)} of {key!r} is not greater than the stream's last ID"
                f" {sid_text(last)}: IDs would go backwards"
            )
        last = sid
    return last


def _stream(ks: Keyspace, key: str) -> Stream:
    s = ks.get(key)
    if s is None:
        raise ReplayError(f"effect on missing stream {key!r}")
    return s


def _group(ks: Keyspace, key: str, name: str) -> ConsumerGroup:
    g = _stream(ks, key).groups.get(name)
    if g is None:
        raise ReplayError(f"effect on missing group {name!r} of {key!r}")
    return g


def _record_idmp(ks: Keyspace, key: str, producer: str, iid: str, sid: StreamID, now: int) -> None:
    """An IDMP XADD's iid, after what expired by the time the command read (``Idmp``)."""
    s = _stream(ks, key)
    if s.idmp is None:
        s.idmp = ks.config.new_idmp()
    s.idmp.expire(now)
    s.idmp.record(producer, iid, sid, now, ks.config.idmp_max_producers)


def apply_effect(ks: Keyspace, effect: Effect) -> None:
    """Apply one effect exactly as the command that recorded it changed the state."""
    match effect:
        case EntryAdded(key=key, id=sid, fields=fields):
            s = _stream(ks, key)
            _follows(key, s.last_id, (sid,))
            s.append(sid, fields)
        case EntriesAdded(key=key, ids=ids, rows=rows):
            s = _stream(ks, key)
            _follows(key, s.last_id, ids)
            s.append_many(ids, rows)
        case PendingSet():
            g = _group(ks, effect.key, effect.group)
            sid = effect.id
            owner = effect.consumer
            if owner is None:  # the entry keeps the owner it has, if any
                p = g.pending(sid)
                owner = p.consumer if p is not None else None
            c = None
            if owner is not None:
                c = g.consumers.get(owner)
                if c is None:
                    raise ReplayError(f"pending entry for missing consumer {owner!r}")
            g.set_pending(sid, c, effect.delivered_at_ms, effect.delivery_count)
        case Delivered(key=key, group=group, consumer=name, delivered_at_ms=at, ids=ids):
            g = _group(ks, key, group)
            c = g.consumers.get(name)
            if c is None:
                raise ReplayError(f"delivery to missing consumer {name!r}")
            g.deliver(list(ids), c, at)
        case Acked(key=key, group=group, ids=ids):
            g = _group(ks, key, group)
            for sid in ids:
                if not g.ack(sid):
                    raise ReplayError(
                        f"ack of {sid_text(sid)} in group {group!r} of {key!r}: not pending"
                    )
        case GroupUpdated(key=key, group=group, last_id=last_id, entries_read=entries_read):
            g = _group(ks, key, group)
            g.last_id, g.entries_read = last_id, entries_read
        case ConsumerSeen(key=key, group=group, consumer=name, seen_time_ms=seen_time_ms):
            g = _group(ks, key, group)
            c = g.consumers.get(name)
            if c is None:
                g.consumers[name] = Consumer(name, seen_time_ms)
            else:
                c.seen_time_ms = seen_time_ms
        case StreamCreated(key=key):
            if key in ks.streams:
                raise ReplayError(f"stream {key!r} created again while it exists")
            ks.create(key)
        case KeyDeleted(key=key):
            if ks.streams.pop(key, None) is None:
                raise ReplayError(f"deletion of missing stream {key!r}")
        case Flushed():
            ks.streams.clear()
            ks.retention.clear()
        case KeyRenamed(key=key, new_key=new_key):
            if key not in ks.streams:
                raise ReplayError(f"rename of missing stream {key!r}")
            ks.rename(key, new_key)
        case StreamRestored(key=key, payload=payload):
            if key in ks.streams:
                raise ReplayError(f"stream {key!r} restored while it exists")
            try:
                stream = load_stream(payload, ks.config.node_max_entries, ks.config.node_max_bytes)
            except (BadPayload, PayloadVersionError) as e:
                raise ReplayError(f"restore of {key!r}: the payload does not load: {e}") from e
            ks.streams[key] = stream
        case ConfigSet(parameter=parameter, value=value):
            configure(ks, parameter, value)
        case ResponseKept(name=name, fingerprint=fingerprint, response=response):
            ks.responses.put(name, Stored(fingerprint, response, effect.expires_ms))
        case EntriesDeleted(key=key, ids=ids):
            s = _stream(ks, key)
            for sid in ids:
                if not s.delete(sid):
                    raise ReplayError(f"deletion of missing entry {sid_text(sid)} of {key!r}")
                if sid > s.max_deleted_id:
                    s.max_deleted_id = sid
        case Trimmed(key=key, trim=trim):
            trim_stream(_stream(ks, key), trim)
        case RefsDropped(key=key, ids=ids):
            drop_refs(_stream(ks, key), ids)
        case Released(key=key, group=group, ids=ids, counts=counts, at_ms=at_ms):
            g = _group(ks, key, group)
            for sid, count in zip(ids, counts, strict=True):
                g.release(sid, count, at_ms)
        case PolicySet(key=key, group=group, policy=policy):
            _group(ks, key, group).policy = policy
        case RetentionSet(key=key, retention=retention):
            if retention is None:
                ks.retention.pop(key, None)
            else:
                ks.retention[key] = retention
        case WebhookSet(key=key, group=group, name=name, webhook=hook):
            g = _group(ks, key, group)
            if hook is not None:
                g.webhooks[name] = hook
            elif g.webhooks.pop(name, None) is None:
                raise ReplayError(f"removal of missing webhook {name!r} of {group!r}")
        case IdmpRecorded(key=key, producer=producer, iid=iid, id=sid, now_ms=now_ms):
            _record_idmp(ks, key, producer, iid, sid, now_ms)
        case IdmpDuplicate(key=key, now_ms=now_ms):
            idmp = _stream(ks, key).idmp
            if idmp is None:
                raise ReplayError(f"an IDMP duplicate on {key!r}, which has no IDMP state")
            idmp.expire(now_ms)
            idmp.duplicate()
        case IdmpConfigured(key=key, duration_s=duration_s, maxsize=maxsize):
            s = _stream(ks, key)
            if s.idmp is None:
                s.idmp = ks.config.new_idmp()
            s.idmp.configure(duration_s, maxsize)
        case LastIdSet():
            s = _stream(ks, effect.key)
            s.last_id = effect.last_id
            if effect.entries_added is not None:
                s.entries_added = effect.entries_added
            if effect.max_deleted_id is not None:
                s.max_deleted_id = effect.max_deleted_id
        case GroupCreated(key=key, group=group, last_id=last_id, entries_read=entries_read):
            s = _stream(ks, key)
            if group in s.groups:
                raise ReplayError(f"group {group!r} of {key!r} created again while it exists")
            s.groups[group] = ConsumerGroup(group, last_id, entries_read)
        case GroupDestroyed(key=key, group=group):
            if _stream(ks, key).groups.pop(group, None) is None:
                raise ReplayError(f"destruction of missing group {group!r} of {key!r}")
        case ConsumerDeleted(key=key, group=group, consumer=name):
            g = _group(ks, key, group)
            if g.remove_consumer(name) is None:
                raise ReplayError(f"deletion of missing consumer {name!r} in group {group!r}")
        case _:  # every kind has its arm: mypy proves it here
            assert_never(effect)
