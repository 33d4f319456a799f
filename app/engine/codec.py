"""The stored form of effects: the journal's record formats, read and written whole.

An effect is stored as a JSON list: its kind's tag, then its fields in order, IDs as
``"ms-seq"`` strings. This is the journal's record format 1; databases written by every
earlier version hold exactly these lists, so the form must not change:

    ["new", key]                                   StreamCreated
    ["del", key]                                   KeyDeleted
    ["flush"]                                      Flushed
    ["rename", key, new_key]                       KeyRenamed
    ["restore", key, payload as base64]            StreamRestored
    ["config", parameter, value]                   ConfigSet
    ["add", key, id, [f1, v1, ...]]                EntryAdded
    ["adds", key, [id, ...], [[f1, v1, ...], ...]] EntriesAdded (a batch of XADDs)
    ["xdel", key, [id, ...]]                       EntriesDeleted
    ["trim", key, strategy, maxlen, minid, approx, limit]   Trimmed
    ["setid", key, last_id, entries_added, max_deleted_id]  LastIdSet (nulls: unchanged)
    ["gcreate", key, group, last_id, entries_read] GroupCreated
    ["gset", key, group, last_id, entries_read]    GroupUpdated
    ["gdestroy", key, group]                       GroupDestroyed
    ["consumer", key, group, name, seen_time_ms]   ConsumerSeen
    ["cdel", key, group, name]                     ConsumerDeleted
    ["pel", key, group, id, consumer, delivered_at_ms, delivery_count]  PendingSet
    ["ack", key, group, [id, ...]]                 Acked
    ["delivered", key, group, consumer, delivered_at_ms, [id, ...]]  Delivered (one XREADGROUP)

Record format 2 adds what Redis 8.2 and 8.8's commands do; a format 1 record is a format 2
record, so a database moves to format 2 without rewriting a row (migration 0004), and an
xstreams that reads only format 1 refuses it instead of failing on an unknown kind:

    ["trim", key, strategy, maxlen, minid, approx, limit, policy]  Trimmed, DELREF or ACKED
    ["unref", key, [id, ...]]                      RefsDropped (DELREF)
    ["nack", key, group, [id, ...], [count, ...]]  Released (XNACK)

Record format 3 adds what Redis 8.6's idempotent appends do, and the responses kept for
requests that carried an Idempotency-Key (``app.engine.responses``; key is
``RESPONSES_KEY``, the bytes base64) (migration 0005):

    ["idmp", key, producer, iid, id, now_ms]       IdmpRecorded (XADD IDMP / IDMPAUTO)
    ["idmpdup", key, now_ms]                       IdmpDuplicate (an IDMP repeat)
    ["xcfgset", key, duration_s, maxsize]          IdmpConfigured (XCFGSET)
    ["remember", key, name, [fingerprint, response], expires_ms]  ResponseKept

Record format 4 adds delivery policies, retention and webhooks (``app.engine.delivery``; the
policy, the retention and the webhook in their ``as_json`` form, null when removed; a
webhook's secret is stored, as the deliveries need it) and a release's time under a policy
(migration 0006):

    ["policy", key, group, {...} | null]           PolicySet
    ["retention", key, {...} | null]               RetentionSet
    ["nack", key, group, [id, ...], [count, ...], at_ms]  Released under a policy
    ["webhook", key, group, name, {...} | null]   WebhookSet (a group's push consumer)

``KINDS`` holds one entry per kind: its tag, its class, and the two directions. Decoding
checks every field's type and raises ``ReplayError`` for anything else, so a damaged record
stops recovery where it is instead of building a state that differs from the one recorded.

Every integer has a domain, the C type Redis keeps it in (``int64``): IDs, delivery counts,
``entries_added`` and node limits are unsigned 64-bit, times, ``entries_read`` and trim
arguments signed. Encoding checks the same domains decoding does and raises ``Unstorable``
for a value outside them, so whatever the codec writes reads back as exactly what was
applied: JSON carries every integer of those ranges exactly (orjson reads a larger one as a
float, which is how a delivery count of 2**64 once stopped recovery for good).
"""

from __future__ import annotations

from typing import Any

from app.engine.effects import (
    Effect,
    Record,
    ReplayError,
    Unstorable,
)
from app.engine.json_codec import decode_json, encode_json
from app.engine.record_kinds import BY_CLASS, BY_TAG


def effect_to_wire(effect: Effect) -> list[Any]:
    return BY_CLASS[type(effect)].encode(effect)


def effect_from_wire(w: Any) -> Effect:
    """One stored effect as its dataclass; ReplayError for anything unknown or malformed."""
    if not isinstance(w, list) or not w:
        raise ReplayError(f"an effect must be a non-empty list, got {w!r}")
    kind = BY_TAG.get(w[0]) if isinstance(w[0], str) else None
    if kind is None:
        raise ReplayError(f"unknown effect {w[0]!r}")
    if len(w) not in kind.sizes:
        sizes = " or ".join(map(str, kind.sizes))
        raise ReplayError(f"effect {w!r} has {len(w)} items, {kind.tag!r} has {sizes}")
    effect: Effect = kind.decode(w)
    return effect


_ALL_KEYS = frozenset({"flush", "config"})  # Flushed, ConfigSet: they change every key


def record_keys(value: Any) -> frozenset[str] | None:
    """The keys a stored record (its decoded JSON) changes, read from the stored form alone,
    so that a record that does not decode (or replay) still names them: each effect's key,
    and a rename's new name too (as ``effects.stamp_keys`` counts them). None when it changes
    every key (FLUSHALL, CONFIG SET); ValueError when not even that can be read."""
    if not isinstance(value, list):
        raise ValueError("a record is not a list of effects")
    keys: set[str] = set()
    for w in value:
        tag = w[0] if isinstance(w, list) and w else None
        if not isinstance(tag, str) or tag not in BY_TAG:
            raise ValueError(f"not an effect: {w!r}")
        if tag in _ALL_KEYS:
            return None
        names = w[1:3] if tag == "rename" else w[1:2]
        if not names or not all(isinstance(k, str) for k in names):
            raise ValueError(f"an effect without its key: {w!r}")
        keys.update(names)
    return frozenset(keys)


def record_to_wire(record: Record) -> list[list[Any]]:
    return [BY_CLASS[type(e)].encode(e) for e in record]


def record_from_wire(value: Any) -> Record:
    """A stored record (decoded JSON) as effects; ReplayError for anything malformed."""
    if not isinstance(value, list):
        raise ReplayError(f"a journal record must be a list of effects, got {type(value).__name__}")
    return [effect_from_wire(w) for w in value]


def encode_record(record: Record) -> bytes:
    """A record's stored bytes (JSON); ``Unstorable`` for a record that would not decode to
    itself, so that it is refused before anything is written or acknowledged."""
    try:
        return encode_json(record_to_wire(record))
    except Unstorable:
        raise
    except (TypeError, ValueError) as e:  # a value of no stored type: a bug, still refused
        raise Unstorable(f"a record holds a value the journal cannot store: {e}") from e


def decode_record(data: bytes) -> Record:
    """A record from its stored bytes; ReplayError for anything that is not one."""
    try:
        value = decode_json(data)
    except ValueError as e:
        raise ReplayError(f"record is not valid JSON: {e}") from e
    return record_from_wire(value)
