"""DUMP and RESTORE in the engine: payloads decoded into the same nodes, Redis's refusals in
Redis's words, nothing changed by a refused payload, and RESTORE journaled for replay."""

from __future__ import annotations

import random
import struct
from typing import Any

import pytest

from app.engine.blocking import Block
from app.engine.clock import ManualClock
from app.engine.codec import decode_record, encode_record
from app.engine.effects import KeyDeleted, Record, StreamRestored
from app.engine.errors import CommandError
from app.engine.json_codec import decode_json
from app.engine.limits import Limits
from app.engine.rdb import node_listpack
from app.engine.rdbio import BadPayload, crc64, lzf_decompress, seal
from app.engine.snapshot import encode_snapshot, snapshot_view
from app.engine.store import Store
from tests.engine.helpers import T0, error, run
from tests.engine.payloads import LEGACY_RDB9

BINARY = b"\xff\x00\xc3\xa9\x80".decode("utf-8", "surrogateescape")
CHECKSUM = "ERR DUMP payload version or checksum are wrong"
BAD_DATA = "ERR Bad data format"


class Sink:
    def __init__(self) -> None:
        self.records: list[Record] = []

    def append(self, record: Record) -> None:
        self.records.append(record)


def text(payload: bytes) -> str:
    """A payload as the engine receives an argument: bytes kept as lone surrogates."""
    return payload.decode("utf-8", "surrogateescape")


def raw(payload: str) -> bytes:
    return payload.encode("utf-8", "surrogateescape")


def build(store: Store) -> None:
    """A stream with several nodes, tombstones, mixed fields, integers, long and binary
    values, and groups with pending entries, consumers and an unknown entries_read."""
    run(store, "CONFIG", "SET", "stream-node-max-entries", "7")
    for i in range(1, 40):
        fields = ("f", f"v{i}", "n", str(i * 1000 - 20000))
        if i % 9 == 0:
            fields = ("other", BINARY, "f", "x" * (5000 if i == 18 else 70))
        run(store, "XADD", "s", f"{i}-{i % 3}", *fields)
    for i in (1, 2, 5, 15, 16, 30):
        run(store, "XDEL", "s", f"{i}-{i % 3}")
    run(store, "XGROUP", "CREATE", "s", "g1", "0")
    run(store, "XGROUP", "CREATE", "s", "123", "$")
    run(store, "XGROUP", "CREATE", "s", BINARY, "0")
    run(store, "XREADGROUP", "GROUP", "g1", "alice", "COUNT", "5", "STREAMS", "s", ">")
    store.clock.advance(5)  # type: ignore[attr-defined]
    run(store, "XREADGROUP", "GROUP", "g1", BINARY, "COUNT", "4", "STREAMS", "s", ">")
    run(store, "XREADGROUP", "GROUP", BINARY, "7", "COUNT", "2", "STREAMS", "s", ">")
    run(store, "XGROUP", "CREATECONSUMER", "s", "g1", "idle")
    run(store, "XCLAIM", "s", "g1", "idle", "0", "3-0", "RETRYCOUNT", "9")


def stream_doc(store: Store, key: str) -> Any:
    """The snapshot form of one stream (nodes byte for byte), without its key; groups and
    consumers in name order (a dict's order is not state: every reply sorts them), the PEL
    in ID order (the order in which delivery times were set, which CLAIM follows among
    equal times, is not in a DUMP payload: redis-server 8.6 restores it by ID too)."""
    view = snapshot_view(store.keyspace)
    [sv] = [s for s in view.streams if s.key == key]
    view.streams[:] = [sv]
    doc = decode_json(encode_snapshot(view))
    [stream] = doc["streams"]
    stream["key"] = ""
    stream["groups"].sort()
    for group in stream["groups"]:
        group[3].sort()
        group[4].sort(key=lambda row: (row[0], row[1]))
    return doc


def test_crc64_is_redis_s() -> None:
    assert crc64(b"123456789") == 0xE9C6D914C4B8D9CA
    assert crc64(b"") == 0


@pytest.mark.parametrize(
    ("data", "size"),
    [(b"\x05abc", 6), (b"\x00a\xe0\x00\x00", 3), (b"\x00a\x20\x05", 4), (b"\x00a", 2), (b"", 1)],
)
def test_damaged_lzf_is_refused(data: bytes, size: int) -> None:
    with pytest.raises(BadPayload):
        lzf_decompress(data, size)


def test_lzf_back_references_expand() -> None:
    # "a", then a reference of length 2 + 2 at offset 1: the run overlaps its own output.
    assert lzf_decompress(b"\x00a\x40\x00", 5) == b"aaaaa"


def test_dump_restore_rebuilds_the_same_nodes_and_groups(store: Store) -> None:
    build(store)
    payload = run(store, "DUMP", "s")
    assert run(store, "RESTORE", "t", "0", payload) == "OK"
    assert stream_doc(store, "t") == stream_doc(store, "s")
    for argv in (
        ["XINFO", "STREAM", "{}", "FULL"],
        ["XINFO", "GROUPS", "{}"],
        ["XINFO", "CONSUMERS", "{}", "g1"],
        ["XPENDING", "{}", "g1", "-", "+", "100"],
        ["XRANGE", "{}", "-", "+"],
    ):
        assert repr(run(store, *(a.format("t") for a in argv))) == repr(
            run(store, *(a.format("s") for a in argv))
        )
    # Both go on growing alike: the last node keeps its modelled size.
    for key in ("s", "t"):
        run(store, "XADD", key, "100-0", "f", "y" * 300)
        run(store, "XTRIM", key, "MAXLEN", "~", "20")
    assert stream_doc(store, "t") == stream_doc(store, "s")


def test_listpacks_written_have_the_modelled_size(store: Store) -> None:
    build(store)
    nodes = store.keyspace.streams["s"].nodes
    assert len(nodes) > 3
    assert [len(node_listpack(n)) for n in nodes] == [n.lp_bytes for n in nodes]


def test_the_legacy_rdb9_payload_loads_as_redis_7_loads_it(store: Store) -> None:
    assert run(store, "RESTORE", "x", "0", text(LEGACY_RDB9)) == "OK"
    info = run(store, "XINFO", "STREAM", "x", "FULL")
    assert (info.header.length, str(info.header.last_generated_id), info.header.entries_added) == (
        2,
        "6-0",
        2,
    )
    assert str(info.header.max_deleted_entry_id) == "0-0"
    g1, g2 = info.groups
    assert (g1.name, g1.entries_read, g1.lag, g1.pel_count) == ("g1", 1, 1, 4)
    assert (g2.name, g2.entries_read, g2.lag, g2.pel_count) == ("g2", 0, 2, 0)
    assert [str(e.id) for e in info.entries] == ["5-0", "6-0"]
    assert [e.fields for e in info.entries] == [("data", "e"), ("data", "f")]
    [c11] = g1.consumers
    assert (c11.name, c11.seen_time_ms, c11.pel_count) == ("c11", 1624630359870, 4)


def test_restore_options_and_refusals_in_redis_order(store: Store) -> None:
    run(store, "XADD", "s", "1-1", "f", "v")
    payload = run(store, "DUMP", "s")
    assert error(store, "RESTORE", "s", "0", payload) == "BUSYKEY Target key name already exists."
    assert error(store, "RESTORE", "s", "-1", "junk", "REPLACE") == (
        "ERR Invalid TTL value, must be >= 0"
    )
    assert error(store, "RESTORE", "t", "x", payload) == (
        "ERR value is not an integer or out of range"
    )
    assert error(store, "RESTORE", "t", "0", payload, "NOPE") == "ERR syntax error"
    assert error(store, "RESTORE", "t", "0", payload, "IDLETIME", "-1") == (
        "ERR Invalid IDLETIME value, must be >= 0"
    )
    assert error(store, "RESTORE", "t", "0", payload, "FREQ", "256") == (
        "ERR Invalid FREQ value, must be >= 0 and <= 255"
    )
    assert error(store, "RESTORE", "t", "0", payload, "FREQ", "1", "IDLETIME", "1") == (
        "ERR syntax error"
    )
    assert error(store, "RESTORE", "t", "0", payload, "IDLETIME") == "ERR syntax error"
    assert error(store, "RESTORE", "s", "0", "junk") == "BUSYKEY Target key name already exists."
    assert run(store, "RESTORE", "t", "0", payload, "IDLETIME", "5", "REPLACE") == "OK"
    assert run(store, "RESTORE", "u", "0", payload, "freq", "255", "absttl") == "OK"
    assert run(store, "DUMP", "nothing") is None


def test_a_ttl_is_refused_unless_already_past(store: Store) -> None:
    run(store, "XADD", "s", "1-1", "f", "v")
    payload = run(store, "DUMP", "s")
    assert error(store, "RESTORE", "t", "100", payload).startswith("ERR xstreams keeps no key")
    later = str(T0 + 1)
    assert error(store, "RESTORE", "t", later, payload, "ABSTTL").startswith("ERR xstreams")
    assert run(store, "EXISTS", "t") == 0
    # Already expired: nothing restored, and REPLACE still removes the old key (as Redis).
    assert run(store, "RESTORE", "t", str(T0), payload, "ABSTTL") == "OK"
    assert run(store, "EXISTS", "t") == 0
    assert run(store, "RESTORE", "s", "1", payload, "ABSTTL", "REPLACE") == "OK"
    assert run(store, "EXISTS", "s") == 0


def _damaged(payload: bytes) -> list[tuple[bytes, str]]:
    body = payload[:-10]
    flipped = bytearray(payload)
    flipped[len(payload) // 2] ^= 0x40
    newer = body + struct.pack("<H", 11)
    newer += struct.pack("<Q", crc64(newer))
    return [
        (bytes(flipped), CHECKSUM),
        (payload[:-1], CHECKSUM),
        (payload[:9], CHECKSUM),
        (newer, CHECKSUM),
        (payload[:-10] + b"\x00" + payload[-9:], CHECKSUM),
        (seal(body[: len(body) // 2]), BAD_DATA),  # sound footer, body cut short
        (seal(b"\x13" + b"\xff" * 20), BAD_DATA),
        (seal(b"\x08"), BAD_DATA),
        (seal(b"\x15" + body[1:]), BAD_DATA),  # type 21 is Redis 7.2's
    ]


def test_a_damaged_payload_is_refused_and_changes_nothing(store: Store) -> None:
    build(store)
    payload = raw(run(store, "DUMP", "s"))
    sink = Sink()
    store.journal = sink
    before = stream_doc(store, "s")
    for damaged, expected in _damaged(payload):
        assert error(store, "RESTORE", "s", "0", text(damaged), "REPLACE") == expected
        assert error(store, "RESTORE", "new", "0", text(damaged)) == expected
    assert sink.records == []
    assert stream_doc(store, "s") == before
    assert run(store, "EXISTS", "new") == 0


def test_a_payload_of_another_type_is_refused_clearly(store: Store) -> None:
    string_payload = seal(b"\x00\x03abc")
    message = error(store, "RESTORE", "k", "0", text(string_payload))
    assert message.startswith(BAD_DATA) and "string" in message


def _reseal(payload: bytes, old: bytes, new: bytes) -> bytes:
    body = payload[:-10]
    assert body.count(old) == 1
    return seal(body.replace(old, new))


def test_an_inconsistent_stream_is_refused(store: Store) -> None:
    run(store, "XADD", "s", "1-1", "f", "v")
    run(store, "XADD", "s", "2-1", "f", "w")
    run(store, "XGROUP", "CREATE", "s", "grp", "0")
    run(store, "XREADGROUP", "GROUP", "grp", "cons", "STREAMS", "s", ">")
    payload = raw(run(store, "DUMP", "s"))
    # The consumer's PEL names an ID its group's PEL lacks.
    pel_id = struct.pack(">QQ", 2, 1)
    cut = payload[:-10].rindex(pel_id)
    wrong = seal(payload[:cut] + struct.pack(">QQ", 9, 9) + payload[cut + 16 : -10])
    assert error(store, "RESTORE", "t", "0", text(wrong)) == BAD_DATA
    # The stream's length disagrees with its node.
    body = payload[:-10]
    [node] = store.keyspace.streams["s"].nodes
    lp = node_listpack(node)
    assert len(lp) < 64
    length_at = 1 + 1 + 17 + 1 + len(lp)  # type, node count, master ID, the listpack
    assert body[length_at : length_at + 3] == b"\x02\x02\x01"  # length 2, last ID 2-1
    wrong = seal(body[:length_at] + b"\x03" + body[length_at + 1 :])
    assert error(store, "RESTORE", "t", "0", text(wrong)) == BAD_DATA
    assert run(store, "EXISTS", "t") == 0


def test_restore_is_journaled_and_replays(clock: ManualClock) -> None:
    sink = Sink()
    store = Store(clock=clock, journal=sink)
    build(store)
    payload = run(store, "DUMP", "s")
    run(store, "RESTORE", "t", "0", payload)
    run(store, "RESTORE", "x", "0", text(LEGACY_RDB9))
    run(store, "RESTORE", "s", "0", text(LEGACY_RDB9), "REPLACE")
    assert sink.records[-1] == [
        KeyDeleted(key="s"),
        StreamRestored(key="s", payload=LEGACY_RDB9),
    ]
    run(store, "XADD", "x", "7-0", "data", "g")
    run(store, "XREADGROUP", "GROUP", "g2", "c", "COUNT", "1", "STREAMS", "x", ">")
    replayed = Store(clock=ManualClock(0))
    replayed.restore(None, (decode_record(encode_record(r)) for r in sink.records))
    assert encode_snapshot(replayed.snapshot_view()) == encode_snapshot(store.snapshot_view())


def test_a_restored_stream_serves_a_blocked_reader(store: Store) -> None:
    """RESTORE signals its key, as Redis's ``dbAdd`` does: a reader waiting on it is served."""
    got: list[Any] = []
    block = store.execute(["XREAD", "BLOCK", "0", "STREAMS", "x", "0-0"])
    assert isinstance(block, Block)
    store.keyspace.blocked.add(block, got.append)
    run(store, "RESTORE", "x", "0", text(LEGACY_RDB9))
    assert got, "the waiter was not served"


def test_resealed_damage_never_breaks_the_engine(store: Store) -> None:
    """Bytes flipped, cut or added inside a body whose footer is then made right again: the
    payload restores as some consistent stream or is refused as Bad data format, nothing
    else (no exception escapes, no half-built key)."""
    build(store)
    body = raw(run(store, "DUMP", "s"))[:-10]
    rnd = random.Random(15)
    for i in range(400):
        damaged = bytearray(body if i % 2 else LEGACY_RDB9[:-10])
        for _ in range(rnd.randint(1, 3)):
            at = rnd.randrange(len(damaged))
            match rnd.randrange(3):
                case 0:
                    damaged[at] ^= 1 << rnd.randrange(8)
                case 1:
                    del damaged[at : at + rnd.randint(1, 8)]
                case _:
                    damaged[at:at] = rnd.randbytes(rnd.randint(1, 4))
        try:
            reply = store.execute(["RESTORE", "t", "0", text(seal(bytes(damaged))), "REPLACE"])
        except CommandError as e:
            assert e.text.startswith(BAD_DATA), e.text
            continue
        assert reply == "OK"
        run(store, "XINFO", "STREAM", "t", "FULL")
        run(store, "XRANGE", "t", "-", "+")


def test_restore_is_bounded_by_max_restore_bytes(store: Store) -> None:
    """Decoding holds the event loop: a payload over the limit, or one whose strings would
    expand past it, is refused before anything changes."""
    build(store)
    payload = run(store, "DUMP", "s")
    size = len(payload.encode("utf-8", "surrogateescape"))
    store.keyspace.limits = Limits(restore_bytes=size - 1)
    assert error(store, "RESTORE", "t", "0", payload) == (
        f"ERR RESTORE payload of {size} bytes: at most {size - 1} are allowed (max_restore_bytes)"
    )
    # One node whose listpack claims to expand to a million bytes from 4.
    lzf = b"\xc3\x04\x80" + struct.pack(">I", 1_000_000) + b"\x00abc"
    bomb = seal(b"\x0f\x01\x10" + b"\x00" * 16 + lzf).decode("utf-8", "surrogateescape")
    store.keyspace.limits = Limits(restore_bytes=1000)
    assert error(store, "RESTORE", "t", "0", bomb) == (
        "ERR Bad data format: the payload expands past 1000 bytes (max_restore_bytes)"
    )
    assert store.keyspace.get("t") is None
    store.keyspace.limits = Limits(restore_bytes=size)
    assert run(store, "RESTORE", "t", "0", payload) == "OK"
