"""Replaying the journal of effects rebuilds exactly the state the commands built.

Random command sequences run on a store with a journal attached; a second store replays the
records (never reading its own clock, which is set elsewhere on purpose) and a third loads a
snapshot of the first. All three must serialize to the same bytes, node layout included.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from app.engine.clock import ManualClock
from app.engine.codec import decode_record, encode_record, record_from_wire
from app.engine.effects import (
    ConfigSet,
    Delivered,
    Effect,
    EntryAdded,
    GroupUpdated,
    KeyRenamed,
    Record,
    ReplayError,
    StreamCreated,
)
from app.engine.errors import CommandError
from app.engine.ids import StreamID
from app.engine.keyspace import Keyspace
from app.engine.replay import apply_record
from app.engine.snapshot import encode_snapshot
from app.engine.store import Store


class Sink:
    def __init__(self) -> None:
        self.records: list[Record] = []

    def append(self, record: Record) -> None:
        self.records.append(record)


def _try(store: Store, argv: list[str]) -> Any:
    try:
        return store.execute(argv)
    except CommandError:
        return None


def _restore(store: Store, key: str, rnd: random.Random) -> list[str]:
    """RESTORE of a DUMP of a stream, under its own name or the other one."""
    payload = _try(store, ["DUMP", rnd.choice(["s", "t"])])
    if payload is None:
        return ["PING"]
    return ["RESTORE", key, "0", payload, *(["REPLACE"] if rnd.random() < 0.8 else [])]


def _random_command(store: Store, rnd: random.Random) -> list[str]:
    key = rnd.choice(["s", "t"])
    ids = [str(e.id) for e in _try(store, ["XRANGE", key, "-", "+"]) or []]
    pending = _try(store, ["XPENDING", key, "g", "-", "+", "10"]) or []
    consumer = rnd.choice("cde")
    some_id = rnd.choice(ids) if ids else "1-1"
    choices = [
        ["XADD", key, "*", "a", "1"],
        ["XADD", key, "IDMP", rnd.choice("pq"), str(rnd.randint(0, 6)), "*", "a", "1"],
        ["XADD", key, "IDMPAUTO", "p", "MAXLEN", "5", "*", "n", str(rnd.randint(0, 6))],
        ["XCFGSET", key, "IDMP-MAXSIZE", str(rnd.randint(2, 4)), "IDMP-DURATION", "1"]
        if rnd.random() < 0.2
        else ["PING"],
        ["XADD", key, "MAXLEN", "~", "30", "*", "b", "2"],
        ["XADD", key, "MINID", "=", ids[len(ids) // 3] if ids else "0", "*", "x", "y", "z", "w"],
        ["XGROUP", "CREATE", key, "g", "0", "MKSTREAM"],
        ["XREADGROUP", "GROUP", "g", consumer, "COUNT", "3", "STREAMS", key, ">"],
        ["XREADGROUP", "GROUP", "g", consumer, "STREAMS", key, "0"],
        ["XREADGROUP", "GROUP", "g", consumer, "NOACK", "STREAMS", key, ">"],
        ["XCLAIM", key, "g", consumer, "0", *(ids[:2] or ["0-1"]), "RETRYCOUNT", "4"],
        ["XCLAIM", key, "g", consumer, "0", some_id, "FORCE", "JUSTID", "LASTID", some_id],
        ["XDEL", key, some_id],
        ["XAUTOCLAIM", key, "g", consumer, "0", "0", "COUNT", "2"],
        ["XACK", key, "g", str(pending[0].id) if pending else "0-1"],
        ["XTRIM", key, "MAXLEN", "~", "10"],
        ["XTRIM", key, "MINID", some_id],
        ["XSETID", key, "99999999999999-0", "ENTRIESADDED", "100000"],
        ["XGROUP", "DELCONSUMER", key, "g", consumer],
        ["XGROUP", "SETID", key, "g", "0", "ENTRIESREAD", "0"],
        ["XGROUP", "CREATECONSUMER", key, "g", "zz"],
        ["XGROUP", "DESTROY", key, "g"] if rnd.random() < 0.1 else ["PING"],
        ["DEL", key] if rnd.random() < 0.05 else ["XLEN", key],
        ["RENAME", key, rnd.choice(["s", "t", "u"])] if rnd.random() < 0.2 else ["PING"],
        ["RENAMENX", key, rnd.choice(["s", "t"])],
        _restore(store, key, rnd) if rnd.random() < 0.2 else ["PING"],
        ["CONFIG", "SET", "stream-node-max-entries", rnd.choice(["2", "5", "0", "100"])]
        if rnd.random() < 0.2
        else ["PING"],
        ["CONFIG", "SET", "stream-node-max-bytes", rnd.choice(["60", "4kb", "0"])]
        if rnd.random() < 0.1
        else ["PING"],
        ["XIDMPRECORD", key, rnd.choice("pq"), str(rnd.randint(0, 6)), some_id],
        ["CONFIG", "SET", "stream-idmp-maxsize", rnd.choice(["2", "3", "100"])]
        if rnd.random() < 0.2
        else ["PING"],
        ["CONFIG", "SET", "stream-idmp-duration", rnd.choice(["1", "5", "100"])]
        if rnd.random() < 0.2
        else ["PING"],
    ]
    return rnd.choice(choices)


@pytest.mark.parametrize("seed", range(12))
def test_replay_and_snapshot_rebuild_the_same_state(seed: int) -> None:
    rnd = random.Random(seed)
    clock = ManualClock()
    sink = Sink()
    original = Store(clock=clock, journal=sink)
    for _ in range(400):
        clock.advance(rnd.randint(0, 3))
        _try(original, _random_command(original, rnd))
    assert sink.records, "the run wrote nothing"

    replayed = Store(clock=ManualClock(0))
    replayed.restore(None, sink.records)
    expected = encode_snapshot(original.snapshot_view())
    assert encode_snapshot(replayed.snapshot_view()) == expected

    # The same through the stored form, as recovery reads it from the database.
    stored = Store(clock=ManualClock(0))
    stored.restore(None, (decode_record(encode_record(r)) for r in sink.records))
    assert encode_snapshot(stored.snapshot_view()) == expected

    loaded = Store(clock=ManualClock(0))
    loaded.restore(expected, [])
    assert encode_snapshot(loaded.snapshot_view()) == expected
    # The loaded store keeps answering like the original.
    for argv in (
        ["XINFO", "STREAM", "s", "FULL"],
        ["XPENDING", "s", "g"],
        ["XRANGE", "t", "-", "+"],
    ):
        assert repr(_try(loaded, argv)) == repr(_try(original, argv))


def test_read_only_commands_write_no_record() -> None:
    sink = Sink()
    store = Store(clock=ManualClock(), journal=sink)
    store.execute(["XADD", "s", "1-1", "f", "v"])
    before = len(sink.records)
    for argv in (["XRANGE", "s", "-", "+"], ["XLEN", "s"], ["XINFO", "STREAM", "s"], ["PING"]):
        store.execute(argv)
    assert len(sink.records) == before


def test_a_blocked_reader_served_by_a_write_is_in_that_writes_record() -> None:
    sink = Sink()
    store = Store(clock=ManualClock(), journal=sink)
    store.execute(["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
    block = store.execute(["XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"])
    got: list[Any] = []
    store.keyspace.blocked.add(block, got.append)
    store.execute(["XADD", "s", "5-1", "f", "v"])
    assert got, "the waiter was not served"
    kinds: list[type[Effect]] = [type(effect) for effect in sink.records[-1]]
    assert kinds[0] is EntryAdded and Delivered in kinds and GroupUpdated in kinds


@pytest.mark.parametrize(
    "record",
    [
        [["nonsense", "s"]],
        [["add", "missing", "1-1", ["f", "v"]]],
        [["new", "s"], ["add", "s", "not-an-id", ["f", "v"]]],
        "not a list",
        [["new", "s"], ["gset", "s", "nogroup", "1-1", 0]],
        [["rename", "missing", "t"]],
        [["config", "no-such-parameter", 5]],
        [["config", "stream-node-max-entries", -1]],
        [["config", "stream-node-max-bytes", "4kb"]],
        [["config", "stream-idmp-duration", 0]],
        [["config", "stream-idmp-maxsize", 10001]],
    ],
)
def test_an_unknown_or_malformed_record_stops_replay(record: Any) -> None:
    with pytest.raises(ReplayError):
        apply_record(Keyspace(clock=ManualClock()), record_from_wire(record))


def test_a_corrupt_snapshot_stops_recovery() -> None:
    with pytest.raises(ReplayError):
        Store(clock=ManualClock()).restore(b'{"format": 1, "streams": [{"key": 1}]}', [])
    with pytest.raises(ReplayError):
        Store(clock=ManualClock()).restore(b"\x00garbage", [])


def test_binary_values_survive_snapshots() -> None:
    """Bytes that are not UTF-8 arrive as lone surrogates; a snapshot must keep them."""
    value = b"\x00\xff\x80A".decode("utf-8", "surrogateescape")
    store = Store(clock=ManualClock())
    store.execute(["XADD", "s", "1-1", "f", value])
    loaded = Store(clock=ManualClock())
    loaded.restore(encode_snapshot(store.snapshot_view()), [])
    [entry] = loaded.execute(["XRANGE", "s", "-", "+"])
    assert entry.fields == ("f", value)


def test_config_set_and_rename_replay_into_the_same_nodes() -> None:
    """A CONFIG SET record sits where it ran: entries appended after it fill nodes of the new
    size on replay too; the snapshot keeps what CONFIG SET changed, so a restored store (whose
    start-up settings say otherwise) goes on appending as the original did."""
    sink = Sink()
    original = Store(clock=ManualClock(), journal=sink)
    for i in range(1, 8):
        original.execute(["XADD", "a", f"{i}-0", "f", "v"])
    original.execute(["CONFIG", "SET", "stream-node-max-entries", "2"])
    for i in range(8, 14):
        original.execute(["XADD", "a", f"{i}-0", "f", "v"])
    original.execute(["XGROUP", "CREATE", "a", "g", "0"])
    original.execute(["RENAME", "a", "b"])
    assert sink.records[-1] == [KeyRenamed(key="a", new_key="b")]
    assert ConfigSet(parameter="stream-node-max-entries", value=2) in sink.records[7]
    replayed = Store(clock=ManualClock(0))
    replayed.restore(None, sink.records)
    snapshot = encode_snapshot(original.snapshot_view())
    assert encode_snapshot(replayed.snapshot_view()) == snapshot
    assert replayed.execute(["CONFIG", "GET", "stream-node-max-entries"]) == [
        "stream-node-max-entries",
        "2",
    ]
    loaded = Store(clock=ManualClock(0))  # started with the default, 100
    loaded.restore(snapshot, [])
    for store in (original, loaded):
        store.execute(["XADD", "b", "20-0", "f", "v"])
        store.execute(["XADD", "b", "21-0", "f", "v"])
    assert encode_snapshot(loaded.snapshot_view()) == encode_snapshot(original.snapshot_view())
    assert [len(n) for n in loaded.keyspace.streams["b"].nodes] == [7, 2, 2, 2, 2]


def test_consecutive_appends_are_checked_one_by_one() -> None:
    """Replay appends a run of XADD records in one go, but a record whose ID goes backwards
    is refused by name, and what came before it in the run is the stream's state."""
    records: list[Record] = [
        [StreamCreated(key="s"), EntryAdded(key="s", id=StreamID(1, 0), fields=("f", "v"))],
        [EntryAdded(key="s", id=StreamID(2, 0), fields=("f", "v"))],
        [EntryAdded(key="s", id=StreamID(3, 0), fields=("f", "v"))],
        [EntryAdded(key="s", id=StreamID(2, 5), fields=("f", "v"))],
    ]
    store = Store(clock=ManualClock())
    with pytest.raises(ReplayError, match="entry 2-5 of 's' is not greater"):
        store.restore(None, records)
    ok = Store(clock=ManualClock())
    assert ok.restore(None, records[:3]) == 3
    assert [e.id for e in ok.execute(["XRANGE", "s", "-", "+"])] == [
        StreamID(1, 0),
        StreamID(2, 0),
        StreamID(3, 0),
    ]


def test_a_trim_that_only_drops_an_emptied_node_is_journaled() -> None:
    """XTRIM MINID past a node that holds only deleted entries answers 0 yet drops the node
    (as Redis does): the journal records it, so replay does not keep a node the live store
    dropped (the next appends would land elsewhere, and ``~`` trims would differ)."""
    sink = Sink()
    store = Store(clock=ManualClock(0), journal=sink)
    for argv in (
        ["XADD", "s", "9-0", "a", "1"],
        ["XADD", "s", "11-0", "a", "1", "b", "2"],
        ["XDEL", "s", "11-0"],
        ["XTRIM", "s", "MINID", "11-0"],
    ):
        store.execute(argv)
    assert store.execute(["XTRIM", "s", "MINID", "12-0"]) == 0
    assert str(store.execute(["XADD", "s", "12-0", "a", "1"])) == "12-0"
    replayed = Store(clock=ManualClock(0))
    replayed.restore(None, (decode_record(encode_record(r)) for r in sink.records))
    assert encode_snapshot(replayed.snapshot_view()) == encode_snapshot(store.snapshot_view())
