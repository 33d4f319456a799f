"""Responses kept for Idempotency-Key in the engine: the window, the budget (oldest first),
and their way through the journal and snapshots, so a restart replays them."""

from __future__ import annotations

import orjson

from app.engine.clock import ManualClock
from app.engine.codec import decode_record, encode_record
from app.engine.effects import Record
from app.engine.responses import RESPONSES_KEY, Responses, Stored
from app.engine.snapshot import encode_snapshot
from app.engine.store import Store


class Sink:
    def __init__(self) -> None:
        self.records: list[Record] = []

    def append(self, record: Record) -> None:
        self.records.append(record)


def test_the_window_ends_a_response() -> None:
    r = Responses(window_ms=100)
    r.put("a", Stored(b"f", b"x", 100), now_ms=0)
    assert r.get("a", 99) is not None
    assert r.get("a", 100) is None
    assert (len(r.entries), r.used_bytes, r.expired) == (0, 0, 1)


def test_past_the_budget_the_oldest_go_first() -> None:
    r = Responses(max_keys=3)
    for i in range(5):
        r.put(f"k{i}", Stored(b"f", b"x", 10**12), now_ms=0)
    assert list(r.entries) == ["k2", "k3", "k4"]
    assert r.evicted == 2
    one = Stored(b"f", b"x" * 1000, 10**12).size("k9")
    small = Responses(max_bytes=2 * one)
    for i in range(4):
        small.put(f"k{i}", Stored(b"f", b"x" * 1000, 10**12), now_ms=0)
    assert list(small.entries) == ["k2", "k3"] and small.used_bytes == 2 * one
    # One response larger than the whole budget is still kept: the write it answers ran.
    small.put("big", Stored(b"f", b"x" * 10_000, 10**12), now_ms=0)
    assert list(small.entries) == ["big"]


def test_kept_responses_survive_the_journal_and_snapshots() -> None:
    clock = ManualClock(1_000)
    sink = Sink()
    store = Store(clock=clock, journal=sink)
    store.keyspace.responses.window_ms = 500
    store.execute(["XADD", "s", "*", "f", "v"])
    store.remember("key:a\nk1", b"\x00fp", b"\xffresponse")
    clock.advance(100)
    store.remember("key:a\nk2", b"fp2", b"r2")
    effect = sink.records[-1][0]
    assert effect.key == RESPONSES_KEY  # type: ignore[union-attr]
    expected = encode_snapshot(store.snapshot_view())
    assert orjson.loads(expected)["format"] == 4

    replayed = Store(clock=ManualClock(1_100))
    replayed.restore(None, (decode_record(encode_record(r)) for r in sink.records))
    assert encode_snapshot(replayed.snapshot_view()) == expected
    loaded = Store(clock=ManualClock(1_100))
    loaded.restore(expected, [])
    found = loaded.keyspace.responses.get("key:a\nk1", 1_100)
    assert found == Stored(b"\x00fp", b"\xffresponse", 1_500)
    # The window runs from when each was kept, not from the restart.
    assert loaded.keyspace.responses.get("key:a\nk1", 1_500) is None
    assert loaded.keyspace.responses.get("key:a\nk2", 1_599) is not None


def test_a_snapshot_without_kept_responses_keeps_its_older_format() -> None:
    store = Store()
    store.execute(["XADD", "s", "*", "f", "v"])
    assert orjson.loads(encode_snapshot(store.snapshot_view()))["format"] == 2


def test_flushall_leaves_kept_responses() -> None:
    """They are not keys: FLUSHALL empties the keyspace, a retry still replays."""
    store = Store()
    store.remember("n", b"f", b"r")
    store.execute(["FLUSHALL"])
    assert store.keyspace.responses.get("n", store.clock.now_ms()) is not None
