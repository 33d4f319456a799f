"""XREAD's ``+`` ID with BLOCK (Redis 7.4; ``xread_last_entry`` on): a read that finds no
entry waits, and when woken answers the stream's last entry then, as redis-server 8.6 runs
the read again (its answers: two entries added by one MULTI wake it with the second only,
also on a stream emptied by XDEL; an entry added and deleted again does not wake it). Off,
``+`` is refused as Redis 7.0 refuses it."""

from __future__ import annotations

from typing import Any

import pytest

from app.engine.blocking import Block
from app.engine.errors import CommandError
from app.engine.keyspace import StreamConfig
from app.engine.store import Store


@pytest.fixture
def last() -> Store:
    return Store(config=StreamConfig(xread_last_entry=True))


def blocked(store: Store, *argv: str) -> list[Any]:
    block = store.execute(list(argv))
    assert isinstance(block, Block)
    got: list[Any] = []
    store.keyspace.blocked.add(block, got.append)
    return got


def ids(got: list[Any]) -> list[tuple[str, list[str]]]:
    assert len(got) == 1
    return [(r.key, [str(e.id) for e in r.entries]) for r in got[0]]


def test_a_missing_key_waits_and_gets_the_last_of_what_came(last: Store) -> None:
    got = blocked(last, "XREAD", "BLOCK", "0", "STREAMS", "a", "+")
    last.execute_atomic([["XADD", "a", "1-0", "f", "1"], ["XADD", "a", "2-0", "f", "2"]])
    assert ids(got) == [("a", ["2-0"])]


def test_a_stream_emptied_by_xdel_waits_for_its_next_entry(last: Store) -> None:
    last.execute(["XADD", "b", "5-0", "f", "v"])
    last.execute(["XDEL", "b", "5-0"])
    got = blocked(last, "XREAD", "COUNT", "5", "BLOCK", "0", "STREAMS", "b", "+")
    last.execute_atomic([["XADD", "b", "6-0", "f", "1"], ["XADD", "b", "7-0", "f", "2"]])
    assert ids(got) == [("b", ["7-0"])]


def test_an_entry_added_and_deleted_again_does_not_wake_it(last: Store) -> None:
    got = blocked(last, "XREAD", "BLOCK", "0", "STREAMS", "c", "+")
    last.execute_atomic([["XADD", "c", "1-0", "f", "1"], ["XDEL", "c", "1-0"]])
    assert got == []
    last.execute(["XADD", "c", "2-0", "f", "2"])
    assert ids(got) == [("c", ["2-0"])]


def test_off_plus_is_an_invalid_id_as_in_redis_7() -> None:
    store = Store()
    store.execute(["XADD", "s", "1-0", "f", "v"])
    with pytest.raises(CommandError, match=r"^ERR Invalid stream ID specified as stream command"):
        store.execute(["XREAD", "STREAMS", "s", "+"])
