"""The stored form of effects: one codec entry per kind, and the format databases hold.

Databases written by every earlier version hold exactly the lists below (record format 1);
each must decode to its effect and encode back to the same bytes, or existing journals would
stop loading (or load as something else).
"""

from __future__ import annotations

import typing
from typing import Any

import orjson
import pytest

from app.engine import effects
from app.engine.codec import decode_record, effect_from_wire, encode_record
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
from app.engine.ids import StreamID
from app.engine.record_kinds import KINDS
from app.engine.refs import RefPolicy
from app.engine.stream import TrimSpec, TrimStrategy

SECRET = "whsec_MDEyMzQ1Njc4OWFiY2RlZg=="  # 16 bytes

STORED: list[tuple[list[Any], Effect]] = [
    (["new", "s"], StreamCreated(key="s")),
    (["del", "s"], KeyDeleted(key="s")),
    (["flush"], Flushed()),
    (["rename", "s", "t"], KeyRenamed(key="s", new_key="t")),
    (["restore", "s", "AP/AAQ=="], StreamRestored(key="s", payload=b"\x00\xff\xc0\x01")),
    (
        ["config", "stream-node-max-bytes", 4096],
        ConfigSet(parameter="stream-node-max-bytes", value=4096),
    ),
    (
        ["add", "s", "5-1", ["f", "v", "g", "w"]],
        EntryAdded(key="s", id=StreamID(5, 1), fields=("f", "v", "g", "w")),
    ),
    (
        ["adds", "s", ["5-1", "5-2"], [["f", "v"], ["g", "w", "h", "x"]]],
        EntriesAdded(
            key="s", ids=(StreamID(5, 1), StreamID(5, 2)), rows=(("f", "v"), ("g", "w", "h", "x"))
        ),
    ),
    (["xdel", "s", ["1-0", "2-3"]], EntriesDeleted(key="s", ids=(StreamID(1, 0), StreamID(2, 3)))),
    (
        ["trim", "s", "MAXLEN", 10, "0-0", True, 0],
        Trimmed(key="s", trim=TrimSpec(TrimStrategy.MAXLEN, 10, StreamID(0, 0), True, 0)),
    ),
    (
        ["trim", "s", "MINID", 0, "7-0", False, 3],
        Trimmed(key="s", trim=TrimSpec(TrimStrategy.MINID, 0, StreamID(7, 0), False, 3)),
    ),
    (
        ["setid", "s", "9-0", None, None],
        LastIdSet(key="s", last_id=StreamID(9, 0), entries_added=None, max_deleted_id=None),
    ),
    (
        ["setid", "s", "9-0", 12, "4-0"],
        LastIdSet(key="s", last_id=StreamID(9, 0), entries_added=12, max_deleted_id=StreamID(4, 0)),
    ),
    (
        ["gcreate", "s", "g", "0-0", None],
        GroupCreated(key="s", group="g", last_id=StreamID(0, 0), entries_read=None),
    ),
    (
        ["gset", "s", "g", "3-0", 2],
        GroupUpdated(key="s", group="g", last_id=StreamID(3, 0), entries_read=2),
    ),
    (["gdestroy", "s", "g"], GroupDestroyed(key="s", group="g")),
    (
        ["consumer", "s", "g", "c", 1700000000000],
        ConsumerSeen(key="s", group="g", consumer="c", seen_time_ms=1700000000000),
    ),
    (["cdel", "s", "g", "c"], ConsumerDeleted(key="s", group="g", consumer="c")),
    (
        ["pel", "s", "g", "3-0", "c", 17, 2],
        PendingSet(
            key="s",
            group="g",
            id=StreamID(3, 0),
            consumer="c",
            delivered_at_ms=17,
            delivery_count=2,
        ),
    ),
    (
        ["pel", "s", "g", "3-0", None, 17, 1],
        PendingSet(
            key="s",
            group="g",
            id=StreamID(3, 0),
            consumer=None,
            delivered_at_ms=17,
            delivery_count=1,
        ),
    ),
    (["ack", "s", "g", ["3-0"]], Acked(key="s", group="g", ids=(StreamID(3, 0),))),
    (
        ["delivered", "s", "g", "c", 17, ["3-0", "3-1"]],
        Delivered(
            key="s",
            group="g",
            consumer="c",
            delivered_at_ms=17,
            ids=(StreamID(3, 0), StreamID(3, 1)),
        ),
    ),
    # Record format 2: the Redis 8.2 / 8.8 commands.
    (
        ["trim", "s", "MAXLEN", 5, "0-0", False, 0, "ACKED"],
        Trimmed(
            key="s",
            trim=TrimSpec(TrimStrategy.MAXLEN, 5, StreamID(0, 0), False, 0, RefPolicy.ACKED),
        ),
    ),
    (
        ["trim", "s", "MINID", 0, "7-0", True, 100, "DELREF"],
        Trimmed(
            key="s",
            trim=TrimSpec(TrimStrategy.MINID, 0, StreamID(7, 0), True, 100, RefPolicy.DELREF),
        ),
    ),
    (["unref", "s", ["1-0", "2-3"]], RefsDropped(key="s", ids=(StreamID(1, 0), StreamID(2, 3)))),
    (
        ["nack", "s", "g", ["3-0", "4-1"], [0, 9223372036854775807]],
        Released(key="s", group="g", ids=(StreamID(3, 0), StreamID(4, 1)), counts=(0, 2**63 - 1)),
    ),
    (
        ["remember", "\x00idempotency", "key:k1\nabc", ["AAE=", "yQ=="], 1700000000000],
        ResponseKept(
            key="\x00idempotency",
            name="key:k1\nabc",
            fingerprint=b"\x00\x01",
            response=b"\xc9",
            expires_ms=1700000000000,
        ),
    ),
    # Record format 3:
    (
        ["idmp", "s", "p", "i1", "5-1", 1700000000000],
        IdmpRecorded(key="s", producer="p", iid="i1", id=StreamID(5, 1), now_ms=1700000000000),
    ),
    (["idmpdup", "s", 7], IdmpDuplicate(key="s", now_ms=7)),
    (["xcfgset", "s", 86400, 10000], IdmpConfigured(key="s", duration_s=86400, maxsize=10000)),
    # Record format 4:
    (
        [
            "policy",
            "s",
            "g",
            {
                "visibility_timeout_ms": 30000,
                "max_deliveries": 5,
                "dead_letter_stream": "s:dead",
                "backoff_ms": [1000, 5000],
            },
        ],
        PolicySet(
            key="s",
            group="g",
            policy=DeliveryPolicy(30000, 5, "s:dead", (1000, 5000)),
        ),
    ),
    (["policy", "s", "g", None], PolicySet(key="s", group="g", policy=None)),
    (
        ["retention", "s", {"max_age_ms": 60000, "max_bytes": 4096}],
        RetentionSet(key="s", retention=Retention(max_age_ms=60000, max_bytes=4096)),
    ),
    (["retention", "s", None], RetentionSet(key="s", retention=None)),
    (
        [
            "webhook",
            "s",
            "g",
            "orders",
            {
                "url": "https://hooks.example.com/orders",
                "secret": SECRET,
                "timeout_ms": 2000,
                "concurrency": 4,
                "batch": 10,
                "paused": True,
                "paused_reason": "410 Gone",
            },
        ],
        WebhookSet(
            key="s",
            group="g",
            name="orders",
            webhook=Webhook(
                "s",
                "g",
                "orders",
                "https://hooks.example.com/orders",
                SECRET,
                2000,
                4,
                10,
                True,
                "410 Gone",
            ),
        ),
    ),
    (
        [
            "webhook",
            "s",
            "g",
            "h",
            {
                "url": "http://x",
                "secret": SECRET,
                "timeout_ms": 5000,
                "concurrency": 8,
                "batch": 1,
                "paused": False,
            },
        ],
        WebhookSet(
            key="s", group="g", name="h", webhook=Webhook("s", "g", "h", "http://x", SECRET)
        ),
    ),
    (["webhook", "s", "g", "h", None], WebhookSet(key="s", group="g", name="h", webhook=None)),
    (
        ["nack", "s", "g", ["3-0"], [1], 1700000000000],
        Released(key="s", group="g", ids=(StreamID(3, 0),), counts=(1,), at_ms=1700000000000),
    ),
]


@pytest.mark.parametrize(("wire", "effect"), STORED, ids=lambda v: str(v)[:40])
def test_the_stored_form_is_unchanged(wire: list[Any], effect: Effect) -> None:
    data = orjson.dumps([wire])
    assert decode_record(data) == [effect]
    assert encode_record([effect]) == data


def test_bytes_that_are_not_utf8_are_stored_as_escapes() -> None:
    data = b'[["add","s","5-1",["f","\\udcff\\udc80A"]]]'
    effect = EntryAdded(key="s", id=StreamID(5, 1), fields=("f", "\udcff\udc80A"))
    assert decode_record(data) == [effect]
    assert encode_record([effect]) == data


def test_every_kind_has_one_codec_entry_and_a_stored_example() -> None:
    kinds = set(typing.get_args(effects.Effect))
    assert {k.cls for k in KINDS} == kinds
    assert len({k.tag for k in KINDS}) == len(KINDS) == len(kinds)
    assert {type(e) for _, e in STORED} == kinds


@pytest.mark.parametrize(
    "wire",
    [
        ["nonsense", "s"],
        [],
        "add",
        [1, "s"],
        ["new"],
        ["new", "s", "extra"],
        ["new", 1],
        ["add", "s", "1-1", "fv"],
        ["add", "s", "1-1", ["f", 2]],
        ["add", "s", "x-1", ["f", "v"]],
        ["add", "s", 11, ["f", "v"]],
        ["adds", "s", [], []],
        ["adds", "s", ["1-0", "2-0"], [["f", "v"]]],
        ["adds", "s", ["1-0"], "fv"],
        ["adds", "s", ["1-0"], [["f", 2]]],
        ["adds", "s", "1-0", [["f", "v"]]],
        ["trim", "s", "SIZE", 1, "0-0", False, 0],
        ["trim", "s", "MAXLEN", 1, "0-0", 0, 0],
        ["trim", "s", "MAXLEN", 1.5, "0-0", False, 0],
        ["gset", "s", "g", "1-0", "2"],
        ["pel", "s", "g", "1-0", "c", True, 1],
        ["ack", "s", "g", "1-0"],
        ["restore", "s", 12],
        ["restore", "s", "not base64!"],
        ["restore", "s", "AP/AAQ"],
        ["webhook", "s", "g", "h", {"url": "ftp://x", "secret": SECRET}],
        ["webhook", "s", "g", "h", {"url": "http://x", "secret": "whsec_c2hvcnQ="}],
        ["webhook", "s", "g", "h", {"url": "http://x"}],
        ["webhook", "s", "g", "h", "http://x"],
        ["webhook", "s", "g", 1, None],
        ["webhook", "s", "g", "h"],
    ],
)
def test_a_malformed_effect_is_refused(wire: Any) -> None:
    with pytest.raises(ReplayError):
        effect_from_wire(wire)
