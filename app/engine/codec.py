"""The stored form of effects, and the one JSON codec of every surface.

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

import binascii
import json
import math
import re
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from operator import itemgetter
from typing import Any, Generic, TypeVar

import orjson

from app.engine.delivery import DeliveryPolicy, Retention, Webhook
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
    Unstorable,
    WebhookSet,
)
from app.engine.errors import CommandError
from app.engine.ids import StreamID
from app.engine.int64 import INT64_MIN, UINT64_MAX, is_i64, is_u64
from app.engine.refs import RefPolicy
from app.engine.stream import Fields, TrimSpec, TrimStrategy

E = TypeVar("E", bound=Effect)


# -- JSON with bytes that are not UTF-8 ------------------------------------------------------


def encode_json(value: Any) -> bytes:
    """orjson, or for strings holding bytes that are not UTF-8 (kept as lone surrogates
    U+DC80..U+DCFF, PEP 383) the standard library's JSON with each such byte written as the
    escape ``\\udcNN``: the one JSON form of every surface, lossless and still strict UTF-8.
    ``decode_json`` reads both.

    orjson refuses lone surrogates, so the slower path runs only for such data. Raises
    ``Unstorable`` for what would not read back the same: an integer outside the 64-bit
    ranges (orjson refuses it; ``decode_json`` would read it as a float), or a high surrogate
    followed by a low one (JSON reads their escapes back as one character).
    """
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        _check_slow_path(value)
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        # A lone surrogate can only stand inside a JSON string here: its escape means the same.
        return _SURROGATE.sub(_escape, text).encode()


_SURROGATE = re.compile("[\ud800-\udfff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _check_slow_path(value: Any) -> None:
    """What orjson refused besides lone surrogates, which the standard library would write
    in a form that does not read back the same."""
    if isinstance(value, str):
        if _PAIR.search(value):
            raise Unstorable("a string holds a surrogate pair, which JSON reads as one character")
    elif isinstance(value, int) and not isinstance(value, bool):
        if not INT64_MIN <= value <= UINT64_MAX:
            raise Unstorable(f"the integer {value} is outside the 64-bit ranges")
    elif isinstance(value, list | tuple):
        for item in value:
            _check_slow_path(item)
    elif isinstance(value, dict):
        for k, item in value.items():
            _check_slow_path(k)
            _check_slow_path(item)


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match[0]):04x}"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"number out of range: {text}")
    return number


def decode_json(data: bytes) -> Any:
    """orjson, or the standard library's JSON for text orjson refuses only for its ``\\udcNN``
    escapes (it takes nothing else orjson refuses: no NaN, no infinite number). Raises
    ValueError for anything that is no such JSON (damaged data, text that is not UTF-8)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data, parse_constant=_no_constant, parse_float=_finite)


# -- field forms ----------------------------------------------------------------------------


def sid_text(sid: StreamID) -> str:
    """The stored form of an ID: its text (as ``format_id`` writes it), both parts unsigned
    64-bit."""
    ms, seq = sid
    if 0 <= ms <= UINT64_MAX and 0 <= seq <= UINT64_MAX:
        return f"{ms}-{seq}"
    raise Unstorable(f"the ID {ms}-{seq} is outside the 64-bit range")


def sid_texts(ids: Sequence[StreamID]) -> list[str]:
    """The stored forms of many IDs (a batch of XADDs, an XACK): their range checked in one
    C pass (an array of unsigned 64-bit integers takes no other), not one call per ID."""
    try:
        array("Q", chain.from_iterable(ids))
    except (OverflowError, TypeError) as e:
        raise Unstorable(f"an ID is outside the 64-bit range: {e}") from e
    return list(map("%d-%d".__mod__, ids))


def sid_from_text(text: Any) -> StreamID:
    """An ID from its stored form; ReplayError for anything else. On the path of every
    replayed entry: the pair is built as the tuple it is (``_sid``), not through the named
    tuple's keyword-taking constructor."""
    if type(text) is not str:
        raise ReplayError(f"expected an ID string, got {text!r}")
    ms_text, _, seq_text = text.partition("-")
    try:
        ms, seq = int(ms_text), int(seq_text)
    except ValueError as e:
        raise ReplayError(f"malformed ID {text!r}") from e
    if 0 <= ms <= UINT64_MAX and 0 <= seq <= UINT64_MAX:
        return _sid(StreamID, (ms, seq))
    raise ReplayError(f"ID {text!r} is outside the 64-bit range")


_sid = tuple.__new__


def _opt_sid(text: Any) -> StreamID | None:
    return None if text is None else sid_from_text(text)


def _sids(texts: Any) -> tuple[StreamID, ...]:
    if not isinstance(texts, list):
        raise ReplayError(f"expected a list of IDs, got {texts!r}")
    return tuple(sid_from_text(t) for t in texts)


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise ReplayError(f"expected a string, got {value!r}")
    return value


def _opt_str(value: Any) -> str | None:
    return None if value is None else _str(value)


# -- integers: one domain per field, checked the same way in both directions ----------------


def u64(value: Any) -> int:
    """A stored unsigned 64-bit integer; ReplayError for anything else."""
    if not is_u64(value):
        raise ReplayError(f"expected an integer from 0 to 2**64-1, got {value!r}")
    return int(value)


def i64(value: Any) -> int:
    """A stored signed 64-bit integer; ReplayError for anything else."""
    if not is_i64(value):
        raise ReplayError(f"expected an integer from -2**63 to 2**63-1, got {value!r}")
    return int(value)


def _opt_u64(value: Any) -> int | None:
    return None if value is None else u64(value)


def _opt_i64(value: Any) -> int | None:
    return None if value is None else i64(value)


def put_u64(value: int, what: str) -> int:
    """``value`` to store as an unsigned 64-bit integer; Unstorable if it is not one."""
    if not is_u64(value):
        raise Unstorable(f"{what} {value!r} is outside 0..2**64-1")
    return value


def put_i64(value: int, what: str) -> int:
    """``value`` to store as a signed 64-bit integer; Unstorable if it is not one."""
    if not is_i64(value):
        raise Unstorable(f"{what} {value!r} is outside -2**63..2**63-1")
    return value


def _put_opt_u64(value: int | None, what: str) -> int | None:
    return None if value is None else put_u64(value, what)


def _put_opt_i64(value: int | None, what: str) -> int | None:
    return None if value is None else put_i64(value, what)


def _fields(values: Any) -> Fields:
    if type(values) is not list or not all(map(isinstance, values, repeat(str))):
        raise ReplayError(f"expected a list of field names and values, got {values!r}")
    return tuple(values)


def entry_from_wire(w: list[Any]) -> tuple[str, StreamID, Fields]:
    """An ``add`` effect's key, ID and fields, checked as its kind decodes them, without
    the dataclass: replay appends most journal records straight from these
    (``replay.restore_stored``). ``w`` is the whole stored list, of 4 items."""
    key = w[1]
    if type(key) is not str:
        raise ReplayError(f"expected a string, got {key!r}")
    return key, sid_from_text(w[2]), _fields(w[3])


_PART_MS, _PART_SEQ = itemgetter(0), itemgetter(2)


def entries_from_wire(
    keys: Sequence[Any], texts: Sequence[Any], values: Sequence[Any]
) -> tuple[list[StreamID], list[Fields]] | None:
    """``entry_from_wire`` of many ``add`` effects at once (their keys, ID texts and field
    lists, as a journal row holds them), in C passes rather than calls per entry: the IDs
    and fields, or None when any of them is not what ``entry_from_wire`` takes without
    complaint (then decoding them one by one finds which, and says why). Accepts no more
    than ``entry_from_wire``: the same parse (``partition``, ``int``), range and types,
    exactly ``str`` and ``list``."""
    try:
        if (
            set(map(type, keys)) != {str}
            or set(map(type, texts)) != {str}
            or set(map(type, values)) != {list}
            or not set(map(type, chain.from_iterable(values))) <= {str}
        ):
            return None
        parts = list(map(str.partition, texts, repeat("-")))
        ms = list(map(int, map(_PART_MS, parts)))
        seq = list(map(int, map(_PART_SEQ, parts)))
        array("Q", ms)  # 0 <= part <= UINT64_MAX, checked in C (OverflowError)
        array("Q", seq)
    except (ValueError, OverflowError):
        return None
    return list(map(_sid, repeat(StreamID), zip(ms, seq, strict=True))), list(map(tuple, values))


def _b64(data: bytes) -> str:
    return binascii.b2a_base64(data, newline=False).decode()


def _pair(value: Any) -> list[Any]:
    if not isinstance(value, list) or len(value) != 2:
        raise ReplayError(f"expected a pair, got {value!r}")
    return value


def _payload(value: Any) -> bytes:
    if not isinstance(value, str):
        raise ReplayError(f"expected a base64 payload, got {value!r}")
    try:
        return binascii.a2b_base64(value, strict_mode=True)
    except (binascii.Error, ValueError) as e:
        raise ReplayError(f"malformed base64 payload: {e}") from e


def _trim(w: list[Any]) -> TrimSpec:
    try:
        strategy = TrimStrategy(w[2])
    except ValueError as e:
        raise ReplayError(f"unknown trim strategy {w[2]!r}") from e
    if not isinstance(w[5], bool):
        raise ReplayError(f"expected true or false, got {w[5]!r}")
    policy = RefPolicy.KEEPREF
    if len(w) > 7:
        try:
            policy = RefPolicy(w[7])
        except ValueError as e:
            raise ReplayError(f"unknown reference policy {w[7]!r}") from e
    return TrimSpec(strategy, i64(w[3]), sid_from_text(w[4]), w[5], i64(w[6]), policy)


def _trim_wire(e: Trimmed) -> list[Any]:
    """A trim's stored form: format 1's seven items, and the policy after them when it is
    not KEEPREF (format 2), so a KEEPREF trim is stored as every earlier version stored it."""
    t = e.trim
    w: list[Any] = [
        "trim",
        e.key,
        t.strategy.value,
        put_i64(t.maxlen, "MAXLEN"),
        sid_text(t.minid),
        t.approx,
        put_i64(t.limit, "LIMIT"),
    ]
    if t.policy is not RefPolicy.KEEPREF:
        w.append(t.policy.value)
    return w


def _released(w: list[Any]) -> Released:
    ids = _sids(w[3])
    if not isinstance(w[4], list) or len(w[4]) != len(ids):
        raise ReplayError(f"a release needs one delivery count per ID: {w!r}")
    counts = tuple(u64(c) for c in w[4])
    at = i64(w[5]) if len(w) > 5 else 0
    return Released(key=_str(w[1]), group=_str(w[2]), ids=ids, counts=counts, at_ms=at)


def _released_wire(e: Released) -> list[Any]:
    """A release's stored form: format 2's five items, and its time after them when it is
    not 0 (a release under a policy, format 4)."""
    w: list[Any] = [
        "nack",
        e.key,
        e.group,
        sid_texts(e.ids),
        [put_u64(c, "a delivery count") for c in e.counts],
    ]
    if e.at_ms:
        w.append(put_i64(e.at_ms, "a release time"))
    return w


def _policy(value: Any) -> DeliveryPolicy | None:
    if value is None:
        return None
    try:
        return DeliveryPolicy.from_json(value)
    except CommandError as e:
        raise ReplayError(f"malformed delivery policy {value!r}: {e}") from e


def _retention(value: Any) -> Retention | None:
    if value is None:
        return None
    try:
        return Retention.from_json(value)
    except CommandError as e:
        raise ReplayError(f"malformed retention {value!r}: {e}") from e


def _webhook(w: list[Any]) -> WebhookSet:
    key, group, name, value = _str(w[1]), _str(w[2]), _str(w[3]), w[4]
    hook = None
    if value is not None:
        try:
            hook = Webhook.from_json(key, group, name, value)
        except CommandError as e:
            raise ReplayError(f"malformed webhook {name!r} of {group!r}: {e}") from e
    return WebhookSet(key=key, group=group, name=name, webhook=hook)


def idmp_from_wire(
    w: list[Any], sid: StreamID | None = None
) -> tuple[str, str, str, StreamID, int]:
    """An ``idmp`` effect's key, producer, iid, ID and time, checked as its kind decodes
    them (``entry_from_wire``'s twin). ``sid``: the ID of the entry the same record
    appended, taken when the stored text is that entry's (it always is)."""
    key, producer, iid, text = w[1], w[2], w[3], w[4]
    if type(key) is not str or type(producer) is not str or type(iid) is not str:
        raise ReplayError(f"expected strings, got {w[1:4]!r}")
    if sid is None or type(text) is not str or text != f"{sid.ms}-{sid.seq}":
        sid = sid_from_text(text)
    return key, producer, iid, sid, i64(w[5])


def kept_from_wire(w: list[Any]) -> tuple[str, bytes, bytes, int]:
    """A ``remember`` effect's name, fingerprint, response and expiry, checked as its kind
    decodes them."""
    pair = _pair(w[3])
    return _str(w[2]), _payload(pair[0]), _payload(pair[1]), i64(w[4])


def _entry_added(key: str, sid: StreamID, fields: Fields) -> EntryAdded:
    return EntryAdded(key=key, id=sid, fields=fields)


def _response_kept(
    key: str, name: str, fingerprint: bytes, response: bytes, expires_ms: int
) -> ResponseKept:
    return ResponseKept(
        key=key, name=name, fingerprint=fingerprint, response=response, expires_ms=expires_ms
    )


def _idmp_recorded(key: str, producer: str, iid: str, sid: StreamID, now_ms: int) -> IdmpRecorded:
    return IdmpRecorded(key=key, producer=producer, iid=iid, id=sid, now_ms=now_ms)


def _entries_added(w: list[Any]) -> EntriesAdded:
    ids = _sids(w[2])
    if not isinstance(w[3], list) or len(w[3]) != len(ids) or not ids:
        raise ReplayError(f"a batch needs one entry per ID, at least one: {w!r}")
    return EntriesAdded(key=_str(w[1]), ids=ids, rows=tuple(_fields(r) for r in w[3]))


# -- the kinds ------------------------------------------------------------------------------


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
        "new", StreamCreated, 2, lambda e: ["new", e.key], lambda w: StreamCreated(key=_str(w[1]))
    ),
    _kind("del", KeyDeleted, 2, lambda e: ["del", e.key], lambda w: KeyDeleted(key=_str(w[1]))),
    _kind("flush", Flushed, 1, lambda e: ["flush"], lambda w: Flushed()),
    _kind(
        "rename",
        KeyRenamed,
        3,
        lambda e: ["rename", e.key, e.new_key],
        lambda w: KeyRenamed(key=_str(w[1]), new_key=_str(w[2])),
    ),
    _kind(
        "restore",
        StreamRestored,
        3,
        lambda e: ["restore", e.key, binascii.b2a_base64(e.payload, newline=False).decode()],
        lambda w: StreamRestored(key=_str(w[1]), payload=_payload(w[2])),
    ),
    _kind(
        "config",
        ConfigSet,
        3,
        lambda e: ["config", e.parameter, put_u64(e.value, "a node limit")],
        lambda w: ConfigSet(parameter=_str(w[1]), value=u64(w[2])),
    ),
    _kind(
        "add",
        EntryAdded,
        4,
        lambda e: ["add", e.key, sid_text(e.id), list(e.fields)],
        lambda w: _entry_added(*entry_from_wire(w)),
    ),
    _kind(
        "adds",
        EntriesAdded,
        4,
        lambda e: ["adds", e.key, sid_texts(e.ids), list(e.rows)],
        lambda w: _entries_added(w),
    ),
    _kind(
        "xdel",
        EntriesDeleted,
        3,
        lambda e: ["xdel", e.key, sid_texts(e.ids)],
        lambda w: EntriesDeleted(key=_str(w[1]), ids=_sids(w[2])),
    ),
    _kind("trim", Trimmed, (7, 8), _trim_wire, lambda w: Trimmed(key=_str(w[1]), trim=_trim(w))),
    _kind(
        "setid",
        LastIdSet,
        5,
        lambda e: [
            "setid",
            e.key,
            sid_text(e.last_id),
            _put_opt_u64(e.entries_added, "entries_added"),
            None if e.max_deleted_id is None else sid_text(e.max_deleted_id),
        ],
        lambda w: LastIdSet(
            key=_str(w[1]),
            last_id=sid_from_text(w[2]),
            entries_added=_opt_u64(w[3]),
            max_deleted_id=_opt_sid(w[4]),
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
            _put_opt_i64(e.entries_read, "entries_read"),
        ],
        lambda w: GroupCreated(
            key=_str(w[1]),
            group=_str(w[2]),
            last_id=sid_from_text(w[3]),
            entries_read=_opt_i64(w[4]),
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
            _put_opt_i64(e.entries_read, "entries_read"),
        ],
        lambda w: GroupUpdated(
            key=_str(w[1]),
            group=_str(w[2]),
            last_id=sid_from_text(w[3]),
            entries_read=_opt_i64(w[4]),
        ),
    ),
    _kind(
        "gdestroy",
        GroupDestroyed,
        3,
        lambda e: ["gdestroy", e.key, e.group],
        lambda w: GroupDestroyed(key=_str(w[1]), group=_str(w[2])),
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
            key=_str(w[1]), group=_str(w[2]), consumer=_str(w[3]), seen_time_ms=i64(w[4])
        ),
    ),
    _kind(
        "cdel",
        ConsumerDeleted,
        4,
        lambda e: ["cdel", e.key, e.group, e.consumer],
        lambda w: ConsumerDeleted(key=_str(w[1]), group=_str(w[2]), consumer=_str(w[3])),
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
            key=_str(w[1]),
            group=_str(w[2]),
            id=sid_from_text(w[3]),
            consumer=_opt_str(w[4]),
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
            key=_str(w[1]),
            group=_str(w[2]),
            consumer=_str(w[3]),
            delivered_at_ms=i64(w[4]),
            ids=_sids(w[5]),
        ),
    ),
    _kind(
        "ack",
        Acked,
        4,
        lambda e: ["ack", e.key, e.group, sid_texts(e.ids)],
        lambda w: Acked(key=_str(w[1]), group=_str(w[2]), ids=_sids(w[3])),
    ),
    # Record format 2 (Redis 8.2 and 8.8 stream commands):
    _kind(
        "unref",
        RefsDropped,
        3,
        lambda e: ["unref", e.key, sid_texts(e.ids)],
        lambda w: RefsDropped(key=_str(w[1]), ids=_sids(w[2])),
    ),
    _kind("nack", Released, (5, 6), _released_wire, _released),
    # Record format 3 (idempotent requests):
    _kind(
        "remember",
        ResponseKept,
        5,
        lambda e: [
            "remember",
            e.key,
            e.name,
            [_b64(e.fingerprint), _b64(e.response)],
            put_i64(e.expires_ms, "an expiry time"),
        ],
        lambda w: _response_kept(_str(w[1]), *kept_from_wire(w)),
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
        lambda w: _idmp_recorded(*idmp_from_wire(w)),
    ),
    _kind(
        "idmpdup",
        IdmpDuplicate,
        3,
        lambda e: ["idmpdup", e.key, put_i64(e.now_ms, "a time")],
        lambda w: IdmpDuplicate(key=_str(w[1]), now_ms=i64(w[2])),
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
        lambda w: IdmpConfigured(key=_str(w[1]), duration_s=u64(w[2]), maxsize=u64(w[3])),
    ),
    # Record format 4 (delivery policies and retention):
    _kind(
        "policy",
        PolicySet,
        4,
        lambda e: ["policy", e.key, e.group, None if e.policy is None else e.policy.as_json()],
        lambda w: PolicySet(key=_str(w[1]), group=_str(w[2]), policy=_policy(w[3])),
    ),
    _kind(
        "retention",
        RetentionSet,
        3,
        lambda e: ["retention", e.key, None if e.retention is None else e.retention.as_json()],
        lambda w: RetentionSet(key=_str(w[1]), retention=_retention(w[2])),
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
        _webhook,
    ),
)

_BY_TAG: dict[str, Kind[Any]] = {k.tag: k for k in KINDS}
_BY_CLASS: dict[type, Kind[Any]] = {k.cls: k for k in KINDS}


# -- records --------------------------------------------------------------------------------


def effect_to_wire(effect: Effect) -> list[Any]:
    return _BY_CLASS[type(effect)].encode(effect)


def effect_from_wire(w: Any) -> Effect:
    """One stored effect as its dataclass; ReplayError for anything unknown or malformed."""
    if not isinstance(w, list) or not w:
        raise ReplayError(f"an effect must be a non-empty list, got {w!r}")
    kind = _BY_TAG.get(w[0]) if isinstance(w[0], str) else None
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
        if not isinstance(tag, str) or tag not in _BY_TAG:
            raise ValueError(f"not an effect: {w!r}")
        if tag in _ALL_KEYS:
            return None
        names = w[1:3] if tag == "rename" else w[1:2]
        if not names or not all(isinstance(k, str) for k in names):
            raise ValueError(f"an effect without its key: {w!r}")
        keys.update(names)
    return frozenset(keys)


def record_to_wire(record: Record) -> list[list[Any]]:
    return [_BY_CLASS[type(e)].encode(e) for e in record]


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
