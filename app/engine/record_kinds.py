"""Every kind of effect the journal stores: its tag, its class, and its stored form both ways.

``app.engine.codec`` documents the record formats and reads and writes whole records; this
table is what it consults, one entry per kind. A new kind of effect is one entry here, one
line in that docstring, and a migration that raises the record format.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

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
    RefsDropped,
    Released,
    ResponseKept,
    RetentionSet,
    StreamCreated,
    StreamRestored,
    Trimmed,
    WebhookSet,
)
from app.engine.record_fields import (
    b64_text,
    entries_added_from_wire,
    entry_from_wire,
    i64,
    idmp_from_wire,
    kept_from_wire,
    new_entry_added,
    new_idmp_recorded,
    new_response_kept,
    opt_i64,
    opt_sid,
    opt_str_from_wire,
    opt_u64,
    payload_from_wire,
    policy_from_wire,
    put_i64,
    put_opt_i64,
    put_opt_u64,
    put_u64,
    released_from_wire,
    released_to_wire,
    retention_from_wire,
    sid_from_text,
    sid_text,
    sid_texts,
    sids_from_text,
    str_from_wire,
    trim_from_wire,
    trim_to_wire,
    u64,
    webhook_from_wire,
)

E = TypeVar("E", bound=Effect)


@dataclass(frozen=True, slots=True)
class Kind(Generic[E]):
    """One kind of effect: its tag, its class, and its stored form both ways (``decode``
    gets the whole list, tag first, of the length ``size``)."""

    tag: str
    cls: type[E]
    sizes: tuple[int, ...]
    encode: Callable[[E], list[Any]]
    decode: Callable[[list[Any]], E]


def _kind(
    tag: str,
    cls: type[E],
    size: int | tuple[int, ...],
    encode: Callable[[E], list[Any]],
    decode: Callable[[list[Any]], E],
) -> Kind[E]:
    return Kind(tag, cls, (size,) if isinstance(size, int) else size, encode, decode)


KINDS: tuple[Kind[Any], ...] = (
    _kind(
        "new",
        StreamCreated,
        2,
        lambda e: ["new", e.key],
        lambda w: StreamCreated(key=str_from_wire(w[1])),
    ),
    _kind(
        "del",
        KeyDeleted,
        2,
        lambda e: ["del", e.key],
        lambda w: KeyDeleted(key=str_from_wire(w[1])),
    ),
    _kind("flush", Flushed, 1, lambda e: ["flush"], lambda w: Flushed()),
    _kind(
        "rename",
        KeyRenamed,
        3,
        lambda e: ["rename", e.key, e.new_key],
        lambda w: KeyRenamed(key=str_from_wire(w[1]), new_key=str_from_wire(w[2])),
    ),
    _kind(
        "restore",
        StreamRestored,
        3,
        lambda e: ["restore", e.key, binascii.b2a_base64(e.payload, newline=False).decode()],
        lambda w: StreamRestored(key=str_from_wire(w[1]), payload=payload_from_wire(w[2])),
    ),
    _kind(
        "config",
        ConfigSet,
        3,
        lambda e: ["config", e.parameter, put_u64(e.value, "a node limit")],
        lambda w: ConfigSet(parameter=str_from_wire(w[1]), value=u64(w[2])),
    ),
    _kind(
        "add",
        EntryAdded,
        4,
        lambda e: ["add", e.key, sid_text(e.id), list(e.fields)],
        lambda w: new_entry_added(*entry_from_wire(w)),
    ),
    _kind(
        "adds",
        EntriesAdded,
        4,
        lambda e: ["adds", e.key, sid_texts(e.ids), list(e.rows)],
        lambda w: entries_added_from_wire(w),
    ),
    _kind(
        "xdel",
        EntriesDeleted,
        3,
        lambda e: ["xdel", e.key, sid_texts(e.ids)],
        lambda w: EntriesDeleted(key=str_from_wire(w[1]), ids=sids_from_text(w[2])),
    ),
    _kind(
        "trim",
        Trimmed,
        (7, 8),
        trim_to_wire,
        lambda w: Trimmed(key=str_from_wire(w[1]), trim=trim_from_wire(w)),
    ),
    _kind(
        "setid",
        LastIdSet,
        5,
        lambda e: [
            "setid",
            e.key,
            sid_text(e.last_id),
            put_opt_u64(e.entries_added, "entries_added"),
            None if e.max_deleted_id is None else sid_text(e.max_deleted_id),
        ],
        lambda w: LastIdSet(
            key=str_from_wire(w[1]),
            last_id=sid_from_text(w[2]),
            entries_added=opt_u64(w[3]),
            max_deleted_id=opt_sid(w[4]),
        ),
    ),
    _kind(
        "gcreate",
        GroupCreated,
        5,
        lambda e: [
            "gcreate",
            e.key,
            e.group,
            sid_text(e.last_id),
            put_opt_i64(e.entries_read, "entries_read"),
        ],
        lambda w: GroupCreated(
            key=str_from_wire(w[1]),
            group=str_from_wire(w[2]),
            last_id=sid_from_text(w[3]),
            entries_read=opt_i64(w[4]),
        ),
    ),
    _kind(
        "gset",
        GroupUpdated,
        5,
        lambda e: [
            "gset",
            e.key,
            e.group,
            sid_text(e.last_id),
            put_opt_i64(e.entries_read, "entries_read"),
        ],
        lambda w: GroupUpdated(
            key=str_from_wire(w[1]),
            group=str_from_wire(w[2]),
            last_id=sid_from_text(w[3]),
            entries_read=opt_i64(w[4]),
        ),
    ),
    _kind(
        "gdestroy",
        GroupDestroyed,
        3,
        lambda e: ["gdestroy", e.key, e.group],
        lambda w: GroupDestroyed(key=str_from_wire(w[1]), group=str_from_wire(w[2])),
    ),
    _kind(
        "consumer",
        ConsumerSeen,
        5,
        lambda e: [
            "consumer",
            e.key,
            e.group,
            e.consumer,
            put_i64(e.seen_time_ms, "a seen time"),
        ],
        lambda w: ConsumerSeen(
            key=str_from_wire(w[1]),
            group=str_from_wire(w[2]),
            consumer=str_from_wire(w[3]),
            seen_time_ms=i64(w[4]),
        ),
    ),
    _kind(
        "cdel",
        ConsumerDeleted,
        4,
        lambda e: ["cdel", e.key, e.group, e.consumer],
        lambda w: ConsumerDeleted(
            key=str_from_wire(w[1]), group=str_from_wire(w[2]), consumer=str_from_wire(w[3])
        ),
    ),
    _kind(
        "pel",
        PendingSet,
        7,
        lambda e: [
            "pel",
            e.key,
            e.group,
            sid_text(e.id),
            e.consumer,
            put_i64(e.delivered_at_ms, "a delivery time"),
            put_u64(e.delivery_count, "a delivery count"),
        ],
        lambda w: PendingSet(
            key=str_from_wire(w[1]),
            group=str_from_wire(w[2]),
            id=sid_from_text(w[3]),
            consumer=opt_str_from_wire(w[4]),
            delivered_at_ms=i64(w[5]),
            delivery_count=u64(w[6]),
        ),
    ),
    _kind(
        "delivered",
        Delivered,
        6,
        lambda e: [
            "delivered",
            e.key,
            e.group,
            e.consumer,
            put_i64(e.delivered_at_ms, "a delivery time"),
            sid_texts(e.ids),
        ],
        lambda w: Delivered(
            key=str_from_wire(w[1]),
            group=str_from_wire(w[2]),
            consumer=str_from_wire(w[3]),
            delivered_at_ms=i64(w[4]),
            ids=sids_from_text(w[5]),
        ),
    ),
    _kind(
        "ack",
        Acked,
        4,
        lambda e: ["ack", e.key, e.group, sid_texts(e.ids)],
        lambda w: Acked(
            key=str_from_wire(w[1]), group=str_from_wire(w[2]), ids=sids_from_text(w[3])
        ),
    ),
    # Record format 2 (Redis 8.2 and 8.8 stream commands):
    _kind(
        "unref",
        RefsDropped,
        3,
        lambda e: ["unref", e.key, sid_texts(e.ids)],
        lambda w: RefsDropped(key=str_from_wire(w[1]), ids=sids_from_text(w[2])),
    ),
    _kind("nack", Released, (5, 6), released_to_wire, released_from_wire),
    # Record format 3 (idempotent requests):
    _kind(
        "remember",
        ResponseKept,
        5,
        lambda e: [
            "remember",
            e.key,
            e.name,
            [b64_text(e.fingerprint), b64_text(e.response)],
            put_i64(e.expires_ms, "an expiry time"),
        ],
        lambda w: new_response_kept(str_from_wire(w[1]), *kept_from_wire(w)),
    ),
    # Record format 3 (Redis 8.6's idempotent appends):
    _kind(
        "idmp",
        IdmpRecorded,
        6,
        lambda e: [
            "idmp",
            e.key,
            e.producer,
            e.iid,
            sid_text(e.id),
            put_i64(e.now_ms, "a time"),
        ],
        lambda w: new_idmp_recorded(*idmp_from_wire(w)),
    ),
    _kind(
        "idmpdup",
        IdmpDuplicate,
        3,
        lambda e: ["idmpdup", e.key, put_i64(e.now_ms, "a time")],
        lambda w: IdmpDuplicate(key=str_from_wire(w[1]), now_ms=i64(w[2])),
    ),
    _kind(
        "xcfgset",
        IdmpConfigured,
        4,
        lambda e: [
            "xcfgset",
            e.key,
            put_u64(e.duration_s, "an IDMP duration"),
            put_u64(e.maxsize, "an IDMP size"),
        ],
        lambda w: IdmpConfigured(key=str_from_wire(w[1]), duration_s=u64(w[2]), maxsize=u64(w[3])),
    ),
    # Record format 4 (delivery policies and retention):
    _kind(
        "policy",
        PolicySet,
        4,
        lambda e: ["policy", e.key, e.group, None if e.policy is None else e.policy.as_json()],
        lambda w: PolicySet(
            key=str_from_wire(w[1]), group=str_from_wire(w[2]), policy=policy_from_wire(w[3])
        ),
    ),
    _kind(
        "retention",
        RetentionSet,
        3,
        lambda e: ["retention", e.key, None if e.retention is None else e.retention.as_json()],
        lambda w: RetentionSet(key=str_from_wire(w[1]), retention=retention_from_wire(w[2])),
    ),
    _kind(
        "webhook",
        WebhookSet,
        5,
        lambda e: [
            "webhook",
            e.key,
            e.group,
            e.name,
            None if e.webhook is None else e.webhook.as_json(),
        ],
        webhook_from_wire,
    ),
)

BY_TAG: dict[str, Kind[Any]] = {k.tag: k for k in KINDS}
BY_CLASS: dict[type, Kind[Any]] = {k.cls: k for k in KINDS}
