"""Bulk appends in the journal: a run of XADDs is one ``adds`` effect, and replaying it (or
records written before it existed, one ``add`` per entry) rebuilds the same state."""

from __future__ import annotations

import random
from typing import Any

import pytest

from app.engine.clock import ManualClock
from app.engine.codec import record_from_wire
from app.engine.commands.bulk import BatchItemError, xadd_batch
from app.engine.commands.streams import XAddArgs
from app.engine.effects import EntriesAdded, Record, ReplayError, StreamCreated
from app.engine.ids import StreamID
from app.engine.keyspace import Keyspace
from app.engine.replay import apply_record
from app.engine.snapshot import encode_snapshot
from app.engine.store import Store
from tests.engine.test_replay import Sink, _random_command, _try


def _replayed(records: list[Record]) -> bytes:
    store = Store(clock=ManualClock(0))
    store.restore(None, records)
    return encode_snapshot(store.snapshot_view())


def test_a_multi_of_xadds_is_one_adds_effect_that_replays() -> None:
    sink = Sink()
    store = Store(clock=ManualClock(1000), journal=sink)
    replies = store.execute_atomic(
        [
            ["XADD", "s", "1-0", "f", "v"],
            ["XADD", "s", "*", "f", "w", "g", "x"],
            ["XADD", "s", "2-0", "f", "v"],  # below the top now: refused, the run goes on
            ["XADD", "s", "*", "h", "y"],
        ]
    )
    assert replies[:2] == [StreamID(1, 0), StreamID(1000, 0)]
    assert str(replies[2]).startswith("ERR The ID specified in XADD is equal or smaller")
    assert replies[3] == StreamID(1000, 1)
    assert sink.records == [
        [
            StreamCreated(key="s"),
            EntriesAdded(
                key="s",
                ids=(StreamID(1, 0), StreamID(1000, 0), StreamID(1000, 1)),
                rows=(("f", "v"), ("f", "w", "g", "x"), ("h", "y")),
            ),
        ]
    ]
    assert _replayed(sink.records) == encode_snapshot(store.snapshot_view())


def test_a_rest_batch_is_all_or_nothing_and_one_effect() -> None:
    sink = Sink()
    store = Store(clock=ManualClock(50), journal=sink)
    good = [XAddArgs("s", ("f", str(i))) for i in range(250)]
    assert store.run(xadd_batch, good)[-1] == StreamID(50, 249)
    assert [type(e) for e in sink.records[-1]] == [StreamCreated, EntriesAdded]
    before = len(sink.records)
    bad = [XAddArgs("s", ("f", "v"), StreamID(60, 0)), XAddArgs("s", ("f", "v"), StreamID(59, 0))]
    with pytest.raises(BatchItemError) as refused:
        store.run(xadd_batch, bad)
    assert refused.value.index == 1
    assert len(sink.records) == before and store.execute(["XLEN", "s"]) == 250
    assert _replayed(sink.records) == encode_snapshot(store.snapshot_view())


@pytest.mark.parametrize("seed", range(6))
def test_random_histories_with_runs_of_xadds_replay_to_the_same_state(seed: int) -> None:
    """Runs of XADDs (some refused in the middle) between random commands of every kind:
    the replayed store serializes to the same bytes, node layout included."""
    rnd = random.Random(seed)
    clock = ManualClock()
    sink = Sink()
    store = Store(clock=clock, journal=sink)
    for _ in range(150):
        clock.advance(rnd.randint(0, 3))
        if rnd.random() < 0.3:
            key = rnd.choice(["s", "t"])
            run = []
            for _ in range(rnd.randint(2, 120)):
                if rnd.random() < 0.1:
                    sid = f"{clock.now_ms() + rnd.randint(-5, 5)}-{rnd.choice(['*', '0', '3'])}"
                else:
                    sid = "*"
                values = ["f", "v" * rnd.randint(0, 90)] + (
                    ["g", "1"] if rnd.random() < 0.2 else []
                )
                run.append(["XADD", key, sid, *values])
            store.execute_atomic(run)
        else:
            _try(store, _random_command(store, rnd))
    assert any(isinstance(e, EntriesAdded) for record in sink.records for e in record)
    assert _replayed(sink.records) == encode_snapshot(store.snapshot_view())


def test_records_of_single_adds_written_before_batches_still_replay() -> None:
    old = [
        [["new", "s"], ["add", "s", "1-0", ["f", "v"]]],
        [["add", "s", "2-0", ["f", "w"]]],
        [["adds", "s", ["3-0", "3-1"], [["f", "x"], ["g", "y"]]]],
    ]
    store = Store(clock=ManualClock(0))
    store.restore(None, [record_from_wire(r) for r in old])
    assert [str(e.id) for e in store.execute(["XRANGE", "s", "-", "+"])] == [
        "1-0",
        "2-0",
        "3-0",
        "3-1",
    ]


@pytest.mark.parametrize(
    "record",
    [
        [["adds", "missing", ["1-0"], [["f", "v"]]]],
        [["new", "s"], ["adds", "s", ["2-0", "1-0"], [["f", "v"], ["f", "v"]]]],
        [["new", "s"], ["add", "s", "5-0", ["f", "v"]], ["adds", "s", ["5-0"], [["f", "v"]]]],
        [["new", "s"], ["adds", "s", ["1-0", "2-0"], [["f", "v"]]]],
        [["new", "s"], ["adds", "s", [], []]],
        [["new", "s"], ["adds", "s", ["1-0"], "fields"]],
        [["new", "s"], ["adds", "s", ["x-y"], [["f", "v"]]]],
    ],
)
def test_a_malformed_batch_record_stops_replay(record: Any) -> None:
    with pytest.raises(ReplayError):
        apply_record(Keyspace(clock=ManualClock()), record_from_wire(record))
