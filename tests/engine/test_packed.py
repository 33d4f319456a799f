"""Packed nodes and the compact PEL: what goes in comes back, whatever the IDs and bytes.

The node packs IDs as deltas in arrays that widen on demand and values into one string with
offsets; these cases push each of those past its narrow form (IDs at both ends of the 64-bit
range in one node, a value longer than 65535 characters, entries without the master's fields,
bytes that are not UTF-8) and compare every read with a plain list kept beside the engine.
"""

from __future__ import annotations

import random

import orjson
import pytest

from app.engine.clock import ManualClock
from app.engine.ids import UINT64_MAX, StreamID
from app.engine.keyspace import StreamConfig
from app.engine.node import Node
from app.engine.snapshot import encode_snapshot
from app.engine.store import Store
from app.engine.stream import Stream
from tests.engine.helpers import T0, run

M = UINT64_MAX


def entries(store: Store, key: str = "k") -> list[tuple[str, tuple[str, ...]]]:
    return [(str(e.id), e.fields) for e in run(store, "XRANGE", key, "-", "+")]


def stream(store: Store, key: str = "k") -> Stream:
    s = store.keyspace.get(key)
    assert s is not None
    return s


def reload(store: Store) -> Store:
    """The store rebuilt from its own snapshot."""
    loaded = Store(clock=ManualClock(T0), config=store.keyspace.config)
    loaded.restore(encode_snapshot(store.snapshot_view()), [])
    return loaded


@pytest.mark.parametrize(
    "ids",
    [
        ["0-1", "5-3", "6-0", "6-1"],  # seq deltas below the master's
        ["0-1", f"{M}-{M}"],  # deltas past int64: the node keeps them modulo 2**64
        ["0-1", "100000-0", "100000-5", "4294967296-1"],  # 'b' -> 'i' -> 'q' deltas
        [f"{M - 1}-0", f"{M}-0", f"{M}-{M}"],
        [f"1-{M - 2}", f"2-{M}", "3-0"],
    ],
)
def test_ids_come_back_whatever_their_distance_from_the_master(ids: list[str]) -> None:
    store = Store(clock=ManualClock(T0))
    for i, sid in enumerate(ids):
        run(store, "XADD", "k", sid, "f", f"v{i}")
    expected = [(sid, ("f", f"v{i}")) for i, sid in enumerate(ids)]
    assert entries(store) == expected
    assert len(stream(store).nodes) == 1
    for i, sid in enumerate(ids):
        assert run(store, "XRANGE", "k", sid, sid) and entries(store)[i][0] == sid
    assert [str(e.id) for e in run(store, "XREVRANGE", "k", "+", "-")] == ids[::-1]
    assert entries(reload(store)) == expected


def test_values_fields_and_bytes_come_back_exactly() -> None:
    store = Store(clock=ManualClock(T0))
    big = "x" * 70_000  # past 65535: the offsets array widens
    cases = [
        ("a", "1", "b", "2"),
        ("a", "", "b", "é"),  # same fields (SAMEFIELDS): values only are packed
        ("b", "2", "a", "1"),  # other order: names packed with the values
        ("a", big, "b", "\udcff\udc80"),  # bytes that are not UTF-8, as lone surrogates
        ("only", "one"),
        ("a", "3", "b", "4"),
        ("a", "-12", "b", "00"),
        ("a", "\xff", "b", "\x1e"),  # U+00FF: the character snapshots write separators as
    ]
    for i, fields in enumerate(cases):
        run(store, "XADD", "k", f"{i + 1}-0", *fields)
    expected = [(f"{i + 1}-0", fields) for i, fields in enumerate(cases)]
    assert entries(store) == expected
    assert entries(reload(store)) == expected
    for i, fields in enumerate(cases):
        assert stream(store).get(StreamID(i + 1, 0)) == fields


def test_a_random_history_reads_like_a_plain_list() -> None:
    """XADD / XDEL / XTRIM / XSETID at random on small nodes; every read matches the model."""
    rnd = random.Random(7)
    store = Store(clock=ManualClock(T0), config=StreamConfig(node_max_entries=7))
    model: list[tuple[str, tuple[str, ...]]] = []
    ms = 1
    for step in range(1500):
        roll = rnd.random()
        if roll < 0.6:
            ms += rnd.choice([0, 1, 1, 300, 70_000, 1 << 33])
            names = rnd.choice([("f",), ("f", "g"), ("g", "f"), ("h",)])
            fields = tuple(x for n in names for x in (n, rnd.choice(["1", "vv", "é", "", "77"])))
            sid = run(store, "XADD", "k", f"{ms}-*", *fields)
            model.append((str(sid), fields))
        elif roll < 0.85 and model:
            victim = rnd.choice(model)
            assert run(store, "XDEL", "k", victim[0]) == 1
            model.remove(victim)
        elif roll < 0.9 and model:
            keep = rnd.randint(0, len(model))
            run(store, "XTRIM", "k", "MAXLEN", keep)
            del model[: len(model) - keep]
        elif model:
            first, last = rnd.choice(model)[0], rnd.choice(model)[0]
            got = [(str(e.id), e.fields) for e in run(store, "XRANGE", "k", first, last)]
            assert got == [e for e in model if _key(first) <= _key(e[0]) <= _key(last)]
        if step % 100 == 0:
            assert entries(store) == model
            assert entries(reload(store)) == model
    assert entries(store) == model
    assert run(store, "XLEN", "k") == len(model)


def _key(sid: str) -> tuple[int, int]:
    ms, _, seq = sid.partition("-")
    return int(ms), int(seq)


def test_a_format_1_snapshot_still_loads() -> None:
    """Snapshots written before nodes were packed (lists of IDs and of field tuples)."""
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
                        "lp_bytes": 57,
                        "master_fields": ["f"],
                    }
                ],
                "groups": [["g", "3-0", 3, [["c", T0]], [[1, 0, "c", T0, 2]]]],
            }
        ],
    }
    store = Store(clock=ManualClock(T0))
    store.restore(orjson.dumps(old), [])
    assert entries(store) == [("1-0", ("f", "a")), ("3-0", ("g", "c", "f", "d"))]
    assert stream(store).nodes[0].lp_bytes == 57
    assert str(run(store, "XPENDING", "k", "g")) == str(run(reload(store), "XPENDING", "k", "g"))
    assert run(store, "XPENDING", "k", "g").count == 1


def test_a_consumer_pel_walks_in_id_order_both_ways() -> None:
    """A consumer's pending IDs come out in order whether its set is sorted (a small share of
    the group PEL) or the group's ordered keys are filtered (a large share)."""
    store = Store(clock=ManualClock(T0))
    for i in range(1, 201):
        run(store, "XADD", "k", f"{i}-0", "f", "v")
    run(store, "XGROUP", "CREATE", "k", "g", "0")
    run(store, "XREADGROUP", "GROUP", "g", "big", "COUNT", "190", "STREAMS", "k", ">")
    run(store, "XREADGROUP", "GROUP", "g", "small", "COUNT", "10", "STREAMS", "k", ">")
    # Interleave owners: every 7th entry of "big" goes to "small".
    run(store, "XCLAIM", "k", "g", "small", "0", *(f"{i}-0" for i in range(7, 191, 7)), "JUSTID")
    group = stream(store).groups["g"]
    for name in ("big", "small"):
        mine = sorted(group.consumers[name].pel)
        walked = list(group.consumer_pending(group.consumers[name]))
        assert [s.ms << 64 | s.seq for s in walked] == mine
        rows = run(store, "XPENDING", "k", "g", "-", "+", "1000", name)
        assert [r.id for r in rows] == walked
        history = run(store, "XREADGROUP", "GROUP", "g", name, "COUNT", "5", "STREAMS", "k", "50")
        assert [e.id for e in history[0].entries] == [s for s in walked if s.ms > 50][:5]


def test_xack_of_a_batch_counts_each_pending_id_once() -> None:
    store = Store(clock=ManualClock(T0))
    for i in range(1, 6):
        run(store, "XADD", "k", f"{i}-0", "f", "v")
    run(store, "XGROUP", "CREATE", "k", "g", "0")
    run(store, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "k", ">")
    assert run(store, "XACK", "k", "g", "1-0", "1-0", "3-0", "9-0", "5-0") == 3
    assert [r.id for r in run(store, "XPENDING", "k", "g", "-", "+", "10")] == [
        StreamID(2, 0),
        StreamID(4, 0),
    ]
    assert len(stream(store).groups["g"].consumers["c"].pel) == 2


def test_values_holding_the_separator_or_every_latin1_character_come_back() -> None:
    """Strings are cut by a separator absent from the node; values that bring it make the
    node choose another, and a node holding every Latin-1 character is cut by offsets."""
    store = Store(clock=ManualClock(T0))
    every = "".join(chr(c) for c in range(256))
    cases = [("f", "plain"), ("f", "a\x1fb"), ("f", "\x1e\x1f"), ("f", every), ("f", "x;y")]
    for i, fields in enumerate(cases):
        run(store, "XADD", "k", f"{i + 1}-0", *fields)
        expected = [(f"{j + 1}-0", f) for j, f in enumerate(cases[: i + 1])]
        assert entries(store) == expected
        assert [e.fields for e in run(store, "XREVRANGE", "k", "+", "-")] == cases[i::-1]
        assert entries(reload(store)) == expected
    assert stream(store).nodes[0].sep is None


@pytest.mark.parametrize("seed", range(20))
def test_a_node_built_at_once_is_the_node_built_entry_by_entry(seed: int) -> None:
    """``Node.from_rows`` (RESTORE, old snapshots) packs what ``put`` per entry packs: the
    same IDs, strings, offsets, separator and mixed entries, whatever the IDs and bytes."""
    rnd = random.Random(seed)
    alphabet = ["a", "\x1f", "\x00", "é", "\udcff", "7", "-1", "\x1e"]
    master = StreamID(rnd.choice([0, 5, M - 3]), rnd.choice([0, 9, M]))
    names = ("f",) if rnd.random() < 0.5 else ("f", "g")
    ids, rows = [], []
    for _ in range(rnd.randint(1, 60)):
        ids.append(StreamID(rnd.choice([0, 6, 1 << 40, M]), rnd.choice([0, 2, M])))
        if rnd.random() < 0.7:
            keys = names
        else:
            keys = tuple(rnd.choice(["f", "g", "h"]) for _ in range(rnd.randint(1, 3)))
        values = ("".join(rnd.choices(alphabet, k=rnd.randint(0, 4))) for _ in keys)
        rows.append(tuple(x for pair in zip(keys, values, strict=True) for x in pair))
    one_by_one = Node(master, ())
    one_by_one.master_fields = names
    for sid, fields in zip(ids, rows, strict=True):
        one_by_one.put(sid, fields, fields[0::2] == names)
    at_once = Node.from_rows(master, names, ids, rows)
    for node in (one_by_one, at_once):
        assert node.ids() == [StreamID(s.ms & M, s.seq & M) for s in ids]
        assert [node.fields_at(i) for i in range(len(ids))] == rows
    for attr in ("strs", "sep", "ends", "starts", "mixed", "wide", "dms", "dseq"):
        assert getattr(at_once, attr) == getattr(one_by_one, attr), attr
