"""IDMP state stays bounded (``app.engine.idmp``): what it holds follows what is tracked, a
stream tracks at most ``idmp_max_producers`` producers (the least recent one goes), and an
idempotent ID expires on time even on a stream whose last ID is ahead of the clock, where
redis-server 8.6 never forgets it (redis/redis#15836). Each rule holds after replay and
after a snapshot is loaded."""

from __future__ import annotations

from app.engine.clock import ManualClock
from app.engine.codec import decode_record, encode_record
from app.engine.effects import Record
from app.engine.idmp import Idmp, IdmpInfo
from app.engine.ids import StreamID
from app.engine.keyspace import StreamConfig
from app.engine.replies import StreamInfo
from app.engine.snapshot import decode_snapshot, encode_snapshot
from app.engine.store import Store
from tests.engine.helpers import T0

FUTURE = "9999999999999-0"


class Sink:
    def __init__(self) -> None:
        self.records: list[Record] = []

    def append(self, record: Record) -> None:
        self.records.append(record)


def _store(clock: ManualClock, max_producers: int = 10_000, sink: Sink | None = None) -> Store:
    return Store(clock=clock, config=StreamConfig(idmp_max_producers=max_producers), journal=sink)


def _state(store: Store, key: str = "s") -> Idmp:
    idmp = store.keyspace.streams[key].idmp
    assert idmp is not None
    return idmp


def _info(store: Store, key: str = "s") -> IdmpInfo | None:
    info = store.execute(["XINFO", "STREAM", key])
    assert isinstance(info, StreamInfo)
    return info.header.idmp


def _held(idmp: Idmp) -> int:
    return sum(len(iids) for iids in idmp.producers.values())


def test_memory_follows_the_iids_tracked(store: Store) -> None:
    """MAXSIZE 1 and thousands of appends behind an older iid still live: two iids tracked,
    and the expiry queue holds about that much, not one record per append ever made."""
    store.execute(["XADD", "s", "*", "f", "v"])
    store.execute(["XCFGSET", "s", "IDMP-MAXSIZE", "1"])
    store.execute(["XADD", "s", "IDMP", "first", "i", "*", "f", "v"])
    for n in range(5000):
        store.execute(["XADD", "s", "IDMP", "p", str(n), "*", "f", "v"])
        idmp = _state(store)
        assert _held(idmp) == 2
        assert len(idmp.order) <= 2 * _held(idmp) + 64, n
    assert _info(store) == IdmpInfo(100, 1, 2, 2, 5001, 0)


def test_memory_follows_the_producers_tracked(clock: ManualClock) -> None:
    store = _store(clock, max_producers=3)
    for n in range(5000):
        store.execute(["XADD", "s", "IDMP", f"p{n}", "i", "*", "f", "v"])
        idmp = _state(store)
        assert len(idmp.producers) <= 3
        assert len(idmp.order) <= 2 * _held(idmp) + 64, n
    assert _info(store) == IdmpInfo(100, 100, 3, 3, 5000, 0, 4997)


def test_the_producer_that_appended_least_recently_goes_first(clock: ManualClock) -> None:
    store = _store(clock, max_producers=2)
    first = {p: store.execute(["XADD", "s", "IDMP", p, "i", "*", "f", "v"]) for p in ("a", "b")}
    store.execute(["XADD", "s", "IDMP", "a", "j", "*", "f", "v"])  # a appended last
    store.execute(["XADD", "s", "IDMP", "c", "i", "*", "f", "v"])  # b goes
    assert store.execute(["XADD", "s", "IDMP", "a", "i", "*", "f", "v"]) == first["a"]
    assert _info(store) == IdmpInfo(100, 100, 2, 3, 4, 1, 1)
    again = store.execute(["XADD", "s", "IDMP", "b", "i", "*", "f", "v"])  # b is new again
    assert again != first["b"]
    assert _info(store) == IdmpInfo(100, 100, 2, 2, 5, 1, 2)  # and a went, all its iids


def test_a_future_dated_stream_still_forgets_on_time(store: Store, clock: ManualClock) -> None:
    """Every ``*`` ID after a future one carries the future millisecond; the window counts
    from the clock at the append instead, as it does when the ID is the clock's."""
    store.execute(["XADD", "s", FUTURE, "f", "v"])
    store.execute(["XCFGSET", "s", "IDMP-DURATION", "2"])
    first = store.execute(["XADD", "s", "IDMP", "p", "i", "*", "f", "v"])
    assert first == StreamID(9999999999999, 1)
    clock.advance(1999)
    assert store.execute(["XADD", "s", "IDMP", "p", "i", "*", "f", "v"]) == first
    clock.advance(1)
    assert _info(store) == IdmpInfo(2, 100, 0, 0, 1, 1)
    again = store.execute(["XADD", "s", "IDMP", "p", "i", "*", "f", "v"])
    assert again == StreamID(9999999999999, 2)
    assert _held(_state(store)) == 1


def test_an_id_behind_the_clock_expires_as_redis_expires_it(
    store: Store, clock: ManualClock
) -> None:
    """The sane case stays Redis's: an iid of an entry the clock named expires exactly
    IDMP-DURATION after that millisecond (its ID's millisecond is the clock's)."""
    store.execute(["XADD", "s", f"{T0 - 5000}-0", "f", "v"])  # the last ID is behind
    store.execute(["XCFGSET", "s", "IDMP-DURATION", "1"])
    sid = store.execute(["XADD", "s", "IDMP", "p", "i", "*", "f", "v"])
    assert sid == StreamID(T0, 0)
    clock.advance(999)
    assert _info(store) == IdmpInfo(1, 100, 1, 1, 1, 0)
    clock.advance(1)
    assert _info(store) == IdmpInfo(1, 100, 0, 0, 1, 0)


def _rebuilt(sink: Sink, clock: ManualClock, max_producers: int) -> Store:
    replayed = _store(clock, max_producers)
    replayed.restore(None, (decode_record(encode_record(r)) for r in sink.records))
    return replayed


def test_replay_and_a_snapshot_keep_the_order_the_stamps_and_the_count(
    clock: ManualClock,
) -> None:
    sink = Sink()
    store = _store(clock, max_producers=2, sink=sink)
    store.execute(["XADD", "s", FUTURE, "f", "v"])
    store.execute(["XCFGSET", "s", "IDMP-DURATION", "5"])
    for producer, iid in (("a", "1"), ("b", "1"), ("a", "2"), ("c", "1"), ("a", "3")):
        clock.advance(1000)
        store.execute(["XADD", "s", "IDMP", producer, iid, "*", "f", "v"])
    expected = encode_snapshot(store.snapshot_view())
    assert b'"format":6' in expected  # stamps and an eviction need format 6
    loaded_clock, replayed_clock = ManualClock(clock.now_ms()), ManualClock(clock.now_ms())
    loaded = _store(loaded_clock, max_producers=2)
    loaded.restore(expected, [])
    replayed = _rebuilt(sink, replayed_clock, max_producers=2)
    for other in (loaded, replayed):
        assert encode_snapshot(other.snapshot_view()) == expected
        assert list(_state(other).producers) == ["c", "a"]  # least recent first
        assert _info(other) == _info(store) == IdmpInfo(5, 100, 2, 4, 5, 0, 1)
    for s, c in ((store, clock), (loaded, loaded_clock), (replayed, replayed_clock)):
        c.advance(2000)
        # a/1 (recorded 5 s ago) expires, on the clock, though its ID is in the future
        assert _info(s) == IdmpInfo(5, 100, 2, 3, 5, 0, 1)
        s.execute(["XADD", "s", "IDMP", "d", "1", "*", "f", "v"])  # c goes, not a
        assert list(_state(s).producers) == ["a", "d"]


def test_a_snapshot_without_the_new_state_stays_format_4(store: Store) -> None:
    """Appends on the clock and no eviction: the snapshot an older release writes."""
    store.execute(["XADD", "s", "IDMP", "p", "i", "*", "f", "v"])
    data = encode_snapshot(store.snapshot_view())
    assert b'"format":4' in data
    loaded = Store(clock=ManualClock(T0))
    decode_snapshot(data, loaded.keyspace)
    assert _held(_state(loaded)) == 1
