"""Stream nodes (Redis's listpack macro nodes) and the approximate trimming that depends on them.

The numbers were observed on redis-server 7.0.15. Node sizes there were read by copying
the stream (``COPY k k2``) and running ``XTRIM k2 MINID ~ <id> LIMIT 1000000000`` for every
entry ID: the counts removed are the node boundaries. ``radix-tree-keys`` of XINFO STREAM
is the number of nodes.
"""

from __future__ import annotations

import pytest

from app.engine.clock import ManualClock
from app.engine.keyspace import StreamConfig
from app.engine.store import Store
from app.engine.stream import Stream
from tests.engine.helpers import T0, error, run


def stream(store: Store) -> Stream:
    s = store.keyspace.get("k")
    assert s is not None
    return s


def live_sizes(store: Store) -> list[int]:
    """Live entries per node, first to last."""
    s = store.keyspace.get("k")
    return [] if s is None else [n.live for n in s.nodes]


def add(store: Store, first: int, n: int, value: str = "v", field: str = "f") -> None:
    for i in range(first, first + n):
        run(store, "XADD", "k", f"{i}-1", field, value)


def xdel(store: Store, first: int, last: int) -> int:
    deleted: int = run(store, "XDEL", "k", *(f"{i}-1" for i in range(first, last + 1)))
    return deleted


def check_nodes(store: Store, expected: list[int]) -> None:
    assert live_sizes(store) == expected
    if expected:
        info = run(store, "XINFO", "STREAM", "k")
        assert info.header.radix_tree_keys == len(expected)
        assert info.header.length == sum(expected)


# -- where nodes split -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (1, [1]),
        (99, [99]),
        (100, [100]),
        (101, [100, 1]),
        (200, [100, 100]),
        (201, [100, 100, 1]),
        (250, [100, 100, 50]),
    ],
)
def test_nodes_split_at_100_entries(store: Store, n: int, expected: list[int]) -> None:
    add(store, 1, n)
    check_nodes(store, expected)


@pytest.mark.parametrize(
    ("n", "value", "expected"),
    [
        # observed on redis-server 7.0.15 (stream-node-max-bytes 4096)
        (100, "x" * 50, [68, 32]),
        (100, "x" * 63, [55, 45]),  # 63 bytes: the last 1-byte string header size
        (100, "x" * 64, [54, 46]),  # 64 bytes: a 2-byte header
        (60, "x" * 200, [19, 19, 19, 3]),
        (10, "x" * 1000, [4, 4, 2]),
        (3, "x" * 4000, [1, 1, 1]),
        (3, "x" * 4096, [1, 1, 1]),  # an entry larger than a node still gets one
        (100, "é" * 30, [58, 42]),  # 60 bytes of UTF-8
        (150, "123456789", [100, 50]),  # stored as an integer: small
    ],
    ids=lambda v: f"{len(v)}B" if isinstance(v, str) else str(v),
)
def test_nodes_split_at_4096_bytes(store: Store, n: int, value: str, expected: list[int]) -> None:
    add(store, 1, n, value)
    check_nodes(store, expected)


def test_nodes_split_with_several_fields(store: Store) -> None:
    # observed on redis-server: XADD k <i>-1 a 1 b 22 c <30 x>, 200 times -> [92, 92, 16]
    for i in range(1, 201):
        run(store, "XADD", "k", f"{i}-1", "a", "1", "b", "22", "c", "x" * 30)
    check_nodes(store, [92, 92, 16])


def test_nodes_split_with_changing_fields_and_ids(store: Store) -> None:
    # observed on redis-server: IDs (i*1000003)-(i*7), field a or zz, a value of i%70 bytes
    # and an integer field -> [73, 71, 70, 70, 16]
    for i in range(1, 301):
        field = "a" if i % 3 else "zz"
        argv = ["XADD", "k", f"{i * 1000003}-{i * 7}", field, "x" * (i % 70), "n", str(i * i * 997)]
        run(store, *argv)
    check_nodes(store, [73, 71, 70, 70, 16])


@pytest.mark.parametrize(
    ("config", "n", "value", "expected"),
    [
        # observed on redis-server with CONFIG SET stream-node-max-entries / -max-bytes
        ((10, 4096), 35, "v", [10, 10, 10, 5]),
        ((0, 4096), 300, "v", [300]),  # 0 entries: no entry limit
        ((100, 0), 300, "x" * 50, [100, 100, 100]),  # 0 bytes: no byte limit
        ((100, 200), 30, "x" * 20, [6, 6, 6, 6, 6]),
    ],
)
def test_node_limits_are_configurable(
    config: tuple[int, int], n: int, value: str, expected: list[int]
) -> None:
    store = Store(clock=ManualClock(T0), config=StreamConfig(*config))
    add(store, 1, n, value)
    check_nodes(store, expected)


# -- deletion and nodes ------------------------------------------------------------------


def test_deleted_entries_still_fill_a_node(store: Store) -> None:
    # observed on redis-server: 100 entries, XDEL the first 50, XADD one -> [50, 1]
    add(store, 1, 100)
    assert xdel(store, 1, 50) == 50
    add(store, 101, 1)
    check_nodes(store, [50, 1])
    assert [n.live + n.ndeleted for n in stream(store).nodes] == [100, 1]


Step = tuple[str, int, int, str]  # ("add", first, n, value) or ("del", first, last, "")


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        # observed on redis-server
        ([("add", 1, 50, "v"), ("del", 1, 10, ""), ("add", 51, 60, "v")], [90, 10]),
        (
            [("add", 1, 60, "x" * 50), ("del", 1, 30, ""), ("add", 61, 40, "x" * 50)],
            [38, 32],
        ),
    ],
    ids=["entries", "bytes"],
)
def test_deleted_entries_keep_their_room(
    store: Store, steps: list[Step], expected: list[int]
) -> None:
    for op, a, b, value in steps:
        if op == "add":
            add(store, a, b, value)
        else:
            xdel(store, a, b)
    check_nodes(store, expected)


@pytest.mark.parametrize(
    ("first", "last", "expected"),
    [
        (1, 100, [100, 50]),  # the first node goes
        (101, 200, [100, 50]),  # a middle node goes
        (201, 250, [100, 100]),  # the last node goes
        (1, 99, [1, 100, 50]),  # one entry left: the node stays
        (100, 101, [99, 99, 50]),
    ],
)
def test_xdel_of_every_entry_in_a_node_removes_it(
    store: Store, first: int, last: int, expected: list[int]
) -> None:
    add(store, 1, 250)
    xdel(store, first, last)
    check_nodes(store, expected)


def test_xdel_of_a_removed_node_then_xadd(store: Store) -> None:
    # observed on redis-server: 150 entries, XDEL 101..150, XADD one -> [100, 1]
    add(store, 1, 150)
    xdel(store, 101, 150)
    add(store, 151, 1)
    check_nodes(store, [100, 1])


def test_xdel_of_everything_then_xadd(store: Store) -> None:
    add(store, 1, 50)
    xdel(store, 1, 50)
    assert live_sizes(store) == []
    assert run(store, "XLEN", "k") == 0
    assert run(store, "EXISTS", "k") == 1  # an empty stream is still a key
    add(store, 51, 1)
    check_nodes(store, [1])


def test_xdel_then_trim_does_not_count_removed_nodes(store: Store) -> None:
    # observed on redis-server: 250 entries, XDEL 101..200, XTRIM MAXLEN ~ 100 -> 0, XLEN 150
    add(store, 1, 250)
    xdel(store, 101, 200)
    assert run(store, "XTRIM", "k", "MAXLEN", "~", "100") == 0
    assert run(store, "XLEN", "k") == 150


# -- approximate trimming ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "value", "trim", "removed", "length"),
    [
        # all observed on redis-server 7.0.15 (XTRIM's reply, then XLEN)
        (250, "v", ["MAXLEN", "~", "120"], 100, 150),
        (250, "v", ["MAXLEN", "~", "100"], 100, 150),
        (250, "v", ["MAXLEN", "~", "149"], 100, 150),
        (250, "v", ["MAXLEN", "~", "150"], 100, 150),
        (250, "v", ["MAXLEN", "~", "0"], 250, 0),
        (250, "v", ["MAXLEN", "~", "0", "LIMIT", "99"], 0, 250),
        (250, "v", ["MAXLEN", "~", "0", "LIMIT", "150"], 100, 150),
        (250, "v", ["MAXLEN", "~", "0", "LIMIT", "200"], 200, 50),
        (250, "v", ["MAXLEN", "~", "0", "LIMIT", "0"], 250, 0),  # LIMIT 0: no limit
        (250, "v", ["MAXLEN", "120"], 130, 120),  # exact
        (250, "v", ["MAXLEN", "=", "120"], 130, 120),
        (250, "v", ["MINID", "~", "150"], 100, 150),
        (250, "v", ["MINID", "~", "201"], 200, 50),
        (250, "v", ["MINID", "~", "202"], 200, 50),
        (250, "v", ["MINID", "~", "300", "LIMIT", "150"], 100, 150),
        (250, "v", ["MINID", "150"], 149, 101),  # exact
        (100, "x" * 200, ["MAXLEN", "~", "10"], 76, 24),
        (100, "x" * 200, ["MAXLEN", "~", "50"], 38, 62),
        (300, "x" * 50, ["MAXLEN", "~", "100"], 136, 164),
        (20, "y" * 1000, ["MAXLEN", "~", "1"], 16, 4),
        (5, "y" * 4000, ["MAXLEN", "~", "1"], 4, 1),
    ],
)
def test_approximate_trim(
    store: Store, n: int, value: str, trim: list[str], removed: int, length: int
) -> None:
    add(store, 1, n, value)
    assert run(store, "XTRIM", "k", *trim) == removed
    assert run(store, "XLEN", "k") == length
    if "~" in trim:
        assert all(node.ndeleted == 0 for node in stream(store).nodes)  # whole nodes only


def test_xtrim_maxlen_approx_concrete_case(store: Store) -> None:
    # redis-server 7.0.15: 250 XADDs with small values, XTRIM k MAXLEN ~ 120 -> 100, XLEN -> 150
    add(store, 1, 250)
    assert run(store, "XTRIM", "k", "MAXLEN", "~", "120") == 100
    assert run(store, "XLEN", "k") == 150
    assert run(store, "XRANGE", "k", "-", "+", "COUNT", "1")[0].id.ms == 101


@pytest.mark.parametrize(
    ("trim", "length"),
    [
        # observed on redis-server: XADD k <trim> 300-1 f v on 250 small entries, then XLEN
        (["MAXLEN", "~", "120"], 151),
        (["MAXLEN", "~", "0", "LIMIT", "100"], 151),
        (["MINID", "~", "250"], 51),
    ],
)
def test_xadd_trims_approximately(store: Store, trim: list[str], length: int) -> None:
    add(store, 1, 250)
    run(store, "XADD", "k", *trim, "300-1", "f", "v")
    assert run(store, "XLEN", "k") == length


def test_approximate_trim_default_limit(store: Store) -> None:
    # observed on redis-server: 10250 small entries, XTRIM MAXLEN ~ 0 -> 10000 (the default
    # LIMIT is 100 * stream-node-max-entries), XLEN 250
    add(store, 1, 10250)
    assert run(store, "XTRIM", "k", "MAXLEN", "~", "0") == 10000
    assert run(store, "XLEN", "k") == 250


def test_exact_trim_leaves_flagged_entries_that_still_fill_the_node(store: Store) -> None:
    # observed on redis-server: 150 entries, XTRIM MAXLEN 120, 60 more -> [70, 100, 10]
    add(store, 1, 150)
    assert run(store, "XTRIM", "k", "MAXLEN", "120") == 30
    add(store, 151, 60)
    check_nodes(store, [70, 100, 10])


def test_approximate_trim_after_partial_deletes(store: Store) -> None:
    # the first node holds 50 live entries: ~ drops it whole and counts only live ones
    add(store, 1, 250)
    xdel(store, 1, 50)
    assert run(store, "XTRIM", "k", "MAXLEN", "~", "150") == 50
    check_nodes(store, [100, 50])
    assert run(store, "XTRIM", "k", "MAXLEN", "~", "0", "LIMIT", "99") == 0
    assert run(store, "XTRIM", "k", "MAXLEN", "~", "0", "LIMIT", "100") == 100
    check_nodes(store, [50])


@pytest.mark.parametrize(
    ("trim", "message"),
    [
        (["MAXLEN", "120", "LIMIT", "10"], "LIMIT cannot be used without the special ~ option"),
        (["MAXLEN", "~", "-1"], "The MAXLEN argument must be >= 0."),
        (["MAXLEN", "~", "1", "LIMIT", "-1"], "The LIMIT argument must be >= 0."),
    ],
)
def test_trim_option_errors(store: Store, trim: list[str], message: str) -> None:
    add(store, 1, 10)
    assert error(store, "XTRIM", "k", *trim).endswith(message)
    assert run(store, "XLEN", "k") == 10


# -- a node left with deleted entries only -----------------------------------------------


def _emptied(store: Store) -> None:
    """Issue 23: XDEL takes the node's last entry, an exact MINID trim flags its first one
    deleted. redis-server 7.0.15 keeps the node (count 0, deleted 2)."""
    run(store, "XADD", "k", "9-0", "a", "1")
    run(store, "XADD", "k", "11-0", "a", "1", "b", "2", "c", "3")
    assert run(store, "XDEL", "k", "11-0") == 1
    assert run(store, "XTRIM", "k", "MINID", "11-0") == 1


def test_a_trim_keeps_a_node_with_no_live_entry() -> None:
    """XINFO STREAM answers as Redis did (length 0, the node counted, counters kept, no
    first or last entry) instead of failing on the missing first entry."""
    store = Store()
    _emptied(store)
    assert [(n.live, n.ndeleted) for n in stream(store).nodes] == [(0, 2)]
    for argv in (["XINFO", "STREAM", "k"], ["XINFO", "STREAM", "k", "FULL"]):
        info = run(store, *argv)
        assert (info.header.length, info.header.radix_tree_keys, info.header.entries_added) == (
            0,
            1,
            2,
        )
        assert str(info.header.last_generated_id) == str(info.header.max_deleted_entry_id) == "11-0"
        assert str(info.header.recorded_first_entry_id) == "0-0"
    plain = run(store, "XINFO", "STREAM", "k")
    assert plain.first_entry is None and plain.last_entry is None
    assert run(store, "XINFO", "STREAM", "k", "FULL").entries == []
    assert run(store, "XRANGE", "k", "-", "+") == run(store, "XREVRANGE", "k", "+", "-") == []


def test_appends_fill_the_node_a_trim_emptied() -> None:
    """The next entry lands in that node (2 entries < node-max-entries), as in Redis."""
    store = Store()
    _emptied(store)
    run(store, "XADD", "k", "12-0", "a", "1")
    assert [(n.live, n.ndeleted) for n in stream(store).nodes] == [(1, 2)]
    info = run(store, "XINFO", "STREAM", "k")
    assert str(info.first_entry.id) == str(info.last_entry.id) == "12-0"
    assert str(info.header.recorded_first_entry_id) == "12-0"


@pytest.mark.parametrize(
    ("argv", "kept"),
    [
        (["XTRIM", "k", "MAXLEN", "0"], 1),  # length 0 is within MAXLEN 0: nothing to do
        (["XTRIM", "k", "MINID", "11-0"], 1),  # its last (deleted) ID is not below
        (["XTRIM", "k", "MINID", "12-0"], 0),  # dropped whole; 0 entries deleted
        (["XTRIM", "k", "MINID", "~", "12-0"], 0),
    ],
)
def test_a_later_trim_drops_the_emptied_node_as_redis_does(argv: list[str], kept: int) -> None:
    store = Store()
    _emptied(store)
    assert run(store, *argv) == 0
    assert len(stream(store).nodes) == kept
    assert run(store, "XINFO", "STREAM", "k").header.radix_tree_keys == kept


def test_dump_restore_and_snapshot_keep_the_emptied_node() -> None:
    """RESTORE of its DUMP and a snapshot load give the node back (a snapshot of it used to
    be refused as malformed, which stops recovery)."""
    from app.engine.snapshot import encode_snapshot

    store = Store()
    _emptied(store)
    payload = run(store, "DUMP", "k")
    assert run(store, "RESTORE", "copy", "0", payload) == "OK"
    copy = store.keyspace.get("copy")
    assert copy is not None and [(n.live, n.ndeleted) for n in copy.nodes] == [(0, 2)]
    loaded = Store()
    loaded.restore(encode_snapshot(store.snapshot_view()), [])
    for key in ("k", "copy"):
        assert repr(run(loaded, "XINFO", "STREAM", key, "FULL")) == repr(
            run(store, "XINFO", "STREAM", key, "FULL")
        )
        s = loaded.keyspace.get(key)
        assert s is not None and [(n.live, n.ndeleted) for n in s.nodes] == [(0, 2)]
