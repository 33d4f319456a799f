"""The stored form of an effect's parts: IDs, integers, fields, trims, policies.

``app.engine.codec`` builds each kind of record from these. Each part is checked the same way
in both directions: encoding raises ``Unstorable`` for a value outside its domain, decoding
raises ``ReplayError`` for anything but the form written, so a damaged record stops recovery
where it is.
"""

from __future__ import annotations

import binascii
from array import array
from collections.abc import Sequence
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

from app.engine.delivery import DeliveryPolicy, Retention, Webhook
from app.engine.effects import (
    EntriesAdded,
    EntryAdded,
    IdmpRecorded,
    Released,
    ReplayError,
    ResponseKept,
    Trimmed,
    Unstorable,
    WebhookSet,
)
from app.engine.errors import CommandError
from app.engine.ids import StreamID
from app.engine.int64 import UINT64_MAX, is_i64, is_u64
from app.engine.refs import RefPolicy
from app.engine.stream import Fields, TrimSpec, TrimStrategy


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


def opt_sid(text: Any) -> StreamID | None:
    return None if text is None else sid_from_text(text)


def sids_from_text(texts: Any) -> tuple[StreamID, ...]:
    if not isinstance(texts, list):
        raise ReplayError(f"expected a list of IDs, got {texts!r}")
    return tuple(sid_from_text(t) for t in texts)


def str_from_wire(value: Any) -> str:
    if not isinstance(value, str):
        raise ReplayError(f"expected a string, got {value!r}")
    return value


def opt_str_from_wire(value: Any) -> str | None:
    return None if value is None else str_from_wire(value)


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


def opt_u64(value: Any) -> int | None:
    return None if value is None else u64(value)


def opt_i64(value: Any) -> int | None:
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


def put_opt_u64(value: int | None, what: str) -> int | None:
    return None if value is None else put_u64(value, what)


def put_opt_i64(value: int | None, what: str) -> int | None:
    return None if value is None else put_i64(value, what)


def fields_from_wire(values: Any) -> Fields:
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
    return key, sid_from_text(w[2]), fields_from_wire(w[3])


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


def b64_text(data: bytes) -> str:
    return binascii.b2a_base64(data, newline=False).decode()


def pair_from_wire(value: Any) -> list[Any]:
    if not isinstance(value, list) or len(value) != 2:
        raise ReplayError(f"expected a pair, got {value!r}")
    return value


def payload_from_wire(value: Any) -> bytes:
    if not isinstance(value, str):
        raise ReplayError(f"expected a base64 payload, got {value!r}")
    try:
        return binascii.a2b_base64(value, strict_mode=True)
    except (binascii.Error, ValueError) as e:
        raise ReplayError(f"malformed base64 payload: {e}") from e


def trim_from_wire(w: list[Any]) -> TrimSpec:
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


def trim_to_wire(e: Trimmed) -> list[Any]:
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


def released_from_wire(w: list[Any]) -> Released:
    ids = sids_from_text(w[3])
    if not isinstance(w[4], list) or len(w[4]) != len(ids):
        raise ReplayError(f"a release needs one delivery count per ID: {w!r}")
    counts = tuple(u64(c) for c in w[4])
    at = i64(w[5]) if len(w) > 5 else 0
    return Released(
        key=str_from_wire(w[1]), group=str_from_wire(w[2]), ids=ids, counts=counts, at_ms=at
    )


def released_to_wire(e: Released) -> list[Any]:
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


def policy_from_wire(value: Any) -> DeliveryPolicy | None:
    if value is None:
        return None
    try:
        return DeliveryPolicy.from_json(value)
    except CommandError as e:
        raise ReplayError(f"malformed delivery policy {value!r}: {e}") from e


def retention_from_wire(value: Any) -> Retention | None:
    if value is None:
        return None
    try:
        return Retention.from_json(value)
    except CommandError as e:
        raise ReplayError(f"malformed retention {value!r}: {e}") from e


def webhook_from_wire(w: list[Any]) -> WebhookSet:
    key, group, name, value = str_from_wire(w[1]), str_from_wire(w[2]), str_from_wire(w[3]), w[4]
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
    pair = pair_from_wire(w[3])
    return str_from_wire(w[2]), payload_from_wire(pair[0]), payload_from_wire(pair[1]), i64(w[4])


def new_entry_added(key: str, sid: StreamID, fields: Fields) -> EntryAdded:
    return EntryAdded(key=key, id=sid, fields=fields)


def new_response_kept(
    key: str, name: str, fingerprint: bytes, response: bytes, expires_ms: int
) -> ResponseKept:
    return ResponseKept(
        key=key, name=name, fingerprint=fingerprint, response=response, expires_ms=expires_ms
    )


def new_idmp_recorded(
    key: str, producer: str, iid: str, sid: StreamID, now_ms: int
) -> IdmpRecorded:
    return IdmpRecorded(key=key, producer=producer, iid=iid, id=sid, now_ms=now_ms)


def entries_added_from_wire(w: list[Any]) -> EntriesAdded:
    ids = sids_from_text(w[2])
    if not isinstance(w[3], list) or len(w[3]) != len(ids) or not ids:
        raise ReplayError(f"a batch needs one entry per ID, at least one: {w!r}")
    return EntriesAdded(
        key=str_from_wire(w[1]), ids=ids, rows=tuple(fields_from_wire(r) for r in w[3])
    )
