"""Recovery's replay of records in their stored form rebuilds exactly what the commands built.

Recovery hands replay each record as decoded JSON (``Store.restore_stored``), and the common
ones (a lone entry, an XADD IDMP's entry and IDMP record, a kept Idempotency-Key response)
are applied without becoming effects first. Journals mixing those with every other kind of
record, replayed that way — from the start, or after a snapshot taken midway, or after a
snapshot of an older format — must give the store the engine had: the same snapshot bytes
(entries, nodes, IDMP state, kept responses), and the same answers after.
"""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from app.engine.clock import ManualClock
from app.engine.codec import encode_record
from app.engine.effects import Record, ReplayError
from app.engine.json_codec import decode_json
from app.engine.snapshot import encode_snapshot
from app.engine.store import Store
from tests.engine.helpers import T0
from tests.engine.test_replay import Sink, _random_command, _try

WINDOW_MS = 50  # a kept response's window: some expire during the run


def _stored(record: Record) -> Any:
    """A record as recovery reads it back from the database."""
    return decode_json(encode_record(record))


def _idempotent_xadd(store: Store, rnd: random.Random, n: int) -> None:
    """An XADD under an Idempotency-Key as the API makes it: the write's record, then the
    kept response's record (sometimes a key used before: replaced)."""
    reply = _try(store, ["XADD", rnd.choice(["s", "t"]), "*", "k", str(n)])
    name = f"scope\x00key-{rnd.randint(0, n)}"
    store.remember(name, b"fp-%d" % n, orjson.dumps({"result": str(reply)}))


def _run(seed: int, steps: int) -> tuple[Store, Sink, list[tuple[int, bytes]], ManualClock]:
    """A store driven by a random mix; snapshots (with how many records they cover) taken
    along the way."""
    rnd = random.Random(seed)
    clock = ManualClock(T0)
    sink = Sink()
    store = Store(clock=clock, journal=sink)
    store.keyspace.responses.window_ms = WINDOW_MS
    snapshots = []
    for n in range(steps):
        clock.advance(rnd.randint(0, 3))
        roll = rnd.random()
        if roll < 0.3:
            _try(store, ["XADD", rnd.choice(["s", "t"]), "*", "a", str(n)])
        elif roll < 0.45:
            _idempotent_xadd(store, rnd, n)
        elif roll < 0.6:
            argv = ["XADD", rnd.choice(["s", "t"]), "IDMP", rnd.choice("pq"), str(n % 9)]
            _try(store, [*argv, "*", "i", str(n)])
        elif roll < 0.65:
            _try(store, ["XADD", "s", "IDMPAUTO", "r", "*", "n", str(n % 5)])
        else:
            _try(store, _random_command(store, rnd))
        if rnd.random() < 0.02:
            snapshots.append((len(sink.records), encode_snapshot(store.snapshot_view())))
    return store, sink, snapshots, clock


def _restored(snapshot: bytes | None, records: list[Record], now_ms: int) -> Store:
    """A store rebuilt as recovery does. Replay never reads the clock, so kept responses
    that expired meanwhile are still held (never answered: ``Responses.get`` checks the
    window) until the next kept response drops them; so both sides drop them at ``now_ms``
    before they are compared."""
    store = Store(clock=ManualClock(0))
    store.keyspace.responses.window_ms = WINDOW_MS
    assert store.restore_stored(snapshot, [_stored(r) for r in records]) == len(records)
    store.keyspace.responses.expire(now_ms)
    return store


@pytest.mark.parametrize("seed", range(10))
def test_stored_replay_rebuilds_the_engines_state(seed: int) -> None:
    original, sink, snapshots, clock = _run(seed, 500)
    kinds = {w[0] for r in sink.records for w in _stored(r)}
    assert {"add", "idmp", "remember"} <= kinds, kinds
    now = clock.now_ms()
    original.keyspace.responses.expire(now)
    expected = encode_snapshot(original.snapshot_view())
    assert encode_snapshot(_restored(None, sink.records, now).snapshot_view()) == expected
    # The same through the effects (the path every other record takes).
    effects = Store(clock=ManualClock(0))
    effects.restore(None, sink.records)
    effects.keyspace.responses.expire(now)
    assert encode_snapshot(effects.snapshot_view()) == expected
    for covers, snapshot in snapshots:  # a restart after a snapshot: only the tail replayed
        tail = _restored(snapshot, sink.records[covers:], now)
        assert encode_snapshot(tail.snapshot_view()) == expected

    # After a restart the store answers as the original: kept responses, IDMP repeats.
    restarted = _restored(None, sink.records, now)
    restarted.keyspace.clock = clock
    for name in list(original.keyspace.responses.entries):
        assert restarted.keyspace.responses.get(name, now) == original.keyspace.responses.get(
            name, now
        )
    for argv in (
        ["XADD", "s", "IDMP", "p", "3", "*", "i", "again"],
        ["XADD", "t", "IDMP", "q", "5", "*", "i", "again"],
        ["XADD", "s", "IDMPAUTO", "r", "*", "n", "1"],
        ["XINFO", "STREAM", "s", "FULL"],
        ["XINFO", "STREAM", "t", "FULL"],
    ):
        assert repr(_try(restarted, argv)) == repr(_try(original, argv))


def test_a_bad_record_on_the_fast_path_is_refused_whole() -> None:
    """The fast path checks an entry and an IDMP record as the effect path does: recovery
    stops at the record (``app.storage.recovery`` names it)."""
    records = [
        [["new", "s"]],
        [["add", "s", "5-0", ["f", "v"]]],
        [["add", "s", "5-0", ["f", "w"]]],
    ]
    with pytest.raises(ReplayError, match="not greater than the stream's last ID"):
        Store(clock=ManualClock(T0)).restore_stored(None, records)
    damaged = [["add", "s", "6-0", ["f", "v"]], ["idmp", "s", 7, "i", "6-0", T0]]
    with pytest.raises(ReplayError, match="expected strings"):
        Store(clock=ManualClock(T0)).restore_stored(None, [*records[:2], damaged])


def test_records_after_a_format_1_snapshot_take_the_fast_path() -> None:
    """A snapshot written before nodes were packed (format 1), then an entry, an XADD IDMP
    and a kept response in their stored form: the state the same commands build."""
    old = {
        "format": 1,
        "config": [100, 4096],
        "streams": [
            {
                "key": "k",
                "last_id": "3-0",
                "entries_added": 3,
                "max_deleted_id": "2-0",
                "nodes": [
                    {
                        "ids": [1, 0, 2, 0, 3, 0],
                        "fields": [["f", "a"], ["f", "b"], ["g", "c", "f", "d"]],
                        "deleted": "000100",
                        "live": 2,
                        "ndeleted": 1,
                        "lp_bytes": 62,
                        "master_fields": ["f"],
                    }
                ],
                "groups": [],
            }
        ],
    }
    reference = Store(clock=ManualClock(T0))
    sink = Sink()
    for argv in (["XADD", "k", "1-0", "f", "a"], ["XADD", "k", "2-0", "f", "b"],
                 ["XADD", "k", "3-0", "g", "c", "f", "d"], ["XDEL", "k", "2-0"]):  # fmt: skip
        reference.execute(argv)
    stream = reference.keyspace.get("k")
    assert stream is not None
    assert stream.nodes[0].lp_bytes == 62  # as the format 1 snapshot says
    reference.journal = sink
    reference.execute(["XADD", "k", "4-0", "f", "e"])
    idmp_id = reference.execute(["XADD", "k", "IDMP", "p", "x", "*", "f", "g"])
    reference.remember("scope\x00key", b"fp", b'{"result":"5-0"}')
    assert [len(r) for r in sink.records] == [1, 2, 1]  # each record on its fast path

    store = Store(clock=ManualClock(T0))
    assert store.restore_stored(orjson.dumps(old), [_stored(r) for r in sink.records]) == 3
    assert encode_snapshot(store.snapshot_view()) == encode_snapshot(reference.snapshot_view())
    assert store.execute(["XADD", "k", "IDMP", "p", "x", "*", "f", "h"]) == idmp_id
    kept = store.keyspace.responses.get("scope\x00key", T0)
    assert kept is not None and kept.response == b'{"result":"5-0"}'


def _rows(values: list[Any], rnd: random.Random) -> list[list[Any]]:
    """Records cut into journal rows of random sizes, as the journal writer groups them."""
    rows: list[list[Any]] = []
    i = 0
    while i < len(values):
        size = rnd.choice([1, 2, 3, 17, 100, 400])
        rows.append(values[i : i + size])
        i += size
    return rows


def _xadds(seed: int, steps: int) -> Sink:
    """Runs of plain XADDs, as a journal mostly holds: several streams, interleaved or in
    long runs, values of every size class the listpack model tells apart (integers, long,
    non-ASCII, NUL, the node separator), fields other than the stream's first, explicit IDs
    far apart and near 2**64, and now and then a record of another kind in between."""
    rnd = random.Random(seed)
    sink = Sink()
    store = Store(clock=ManualClock(T0), journal=sink)
    store.execute(["CONFIG", "SET", "stream-node-max-entries", str(rnd.choice([0, 5, 100]))])
    store.execute(["CONFIG", "SET", "stream-node-max-bytes", str(rnd.choice([0, 300, 4096]))])
    values = ["v", "7", "-12", "9" * 19, "x" * 70, "x" * 5000, "é", "a\x00b", "\x1f", ""]
    key = "s"
    ms = {"s": 1, "t": 1, "u": (1 << 64) - 1000}
    for n in range(steps):
        if rnd.random() < 0.05:
            key = rnd.choice("stu")
        fields = ["f1", rnd.choice(values[:3]), "f2", "v", "f3", str(n)]
        if rnd.random() < 0.1:
            fields = ["g", rnd.choice(values)]
        ms[key] += rnd.choice([0, 0, 1, 1, 200, 40000]) if key != "u" else rnd.choice([0, 1])
        _try(store, ["XADD", key, f"{min(ms[key], (1 << 64) - 1)}-*", *fields])
        if rnd.random() < 0.01:
            _try(store, _random_command(store, rnd))
    return sink


@pytest.mark.parametrize("seed", range(6))
def test_rows_of_entries_replay_as_the_commands_built_them(seed: int) -> None:
    """Rows of plain XADD records are decoded and appended together: the nodes (their
    boundaries and modelled sizes) and everything else are those the commands built."""
    sink = _xadds(seed, 3000)
    expected = Store(clock=ManualClock(0))
    expected.restore(None, sink.records)
    values = [_stored(r) for r in sink.records]
    restored = Store(clock=ManualClock(0))
    rows = _rows(values, random.Random(seed))
    assert restored.restore_stored_rows(None, rows) == len(values)
    assert encode_snapshot(restored.snapshot_view()) == encode_snapshot(expected.snapshot_view())


@pytest.mark.parametrize(
    ("damaged", "error"),
    [
        (["add", "s", "3-0", ["f", "v"]], "not greater than the stream's last ID"),
        (["add", "s", "12-x", ["f", "v"]], "malformed ID"),
        (["add", "s", "12", ["f", "v"]], "malformed ID"),
        (["add", "s", "1-2-3", ["f", "v"]], "malformed ID"),
        (["add", "s", f"{1 << 64}-0", ["f", "v"]], "outside the 64-bit range"),
        (["add", "s", "-12-0", ["f", "v"]], "malformed ID"),
        (["add", "s", 12, ["f", "v"]], "expected an ID string"),
        (["add", "s", "12-0", ["f", 5]], "expected a list of field names"),
        (["add", "s", "12-0", "f"], "expected a list of field names"),
        (["add", 5, "12-0", ["f", "v"]], "expected a string"),
        (["add", "t", "12-0", ["f", "v"]], "effect on missing stream 't'"),
    ],
)
def test_a_damaged_entry_in_a_row_of_entries_is_refused_at_its_record(
    damaged: list[Any], error: str
) -> None:
    """A row of entries is decoded together, but a damaged one is still refused alone, as
    the record it is (``ReplayError.index``, which recovery turns into its seq number), with
    the reason the one-by-one path gives, whatever its neighbours."""
    entries = [[["add", "s", f"{10 + i}-0", ["f", "v"]]] for i in range(8)]
    first = [[["new", "s"]], [["add", "s", "5-0", ["f", "v"]]]]
    for at in (0, 3, 8):
        row = [*entries[:at], [damaged], *entries[at:]]
        store = Store(clock=ManualClock(T0))
        with pytest.raises(ReplayError, match=error) as caught:
            store.restore_stored_rows(None, [first, row])
        assert caught.value.index == at
