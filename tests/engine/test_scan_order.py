"""SCAN's order is kept as keys come and go (``StreamMap``), not rebuilt per page: after any
mix of creations, deletions, flushes and replay it equals the order of every key by hash."""

from __future__ import annotations

import random

import pytest

from app.engine.keyspace import StreamMap, _scan_hash
from app.engine.snapshot import encode_snapshot
from app.engine.store import Store


def _full_scan(store: Store) -> list[str]:
    seen, cursor = [], 0
    while True:
        page = store.keyspace.scan(cursor, 7, None, None)
        seen += page.keys
        cursor = page.cursor
        if not cursor:
            return seen


def test_the_order_follows_every_change() -> None:
    rng = random.Random(3)
    store = Store()
    for step in range(600):
        key = f"k{rng.randrange(120)}"
        if rng.random() < 0.7:
            store.execute(["XADD", key, "*", "f", "v"])
        else:
            store.execute(["DEL", key])
        if step == 300:
            store.execute(["FLUSHALL"])
    ks = store.keyspace
    expected = sorted((_scan_hash(k), k) for k in ks.streams)
    assert list(ks.streams.order) == expected
    assert _full_scan(store) == [k for _, k in expected]
    # A store rebuilt from a snapshot scans alike.
    again = Store()
    again.restore(encode_snapshot(store.snapshot_view()), [])
    assert list(again.keyspace.streams.order) == expected


def test_only_the_methods_that_keep_the_order() -> None:
    m = StreamMap()
    for call in (lambda: m.update({}), lambda: m.setdefault("a"), lambda: m.popitem()):
        with pytest.raises(TypeError):
            call()
    with pytest.raises(TypeError):
        m[1] = None  # type: ignore[index,assignment]
