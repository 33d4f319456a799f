"""Small helpers shared by the engine tests."""

from __future__ import annotations

from typing import Any

import pytest

from app.engine.blocking import Block
from app.engine.codec import decode_record, encode_record
from app.engine.effects import Record
from app.engine.errors import CommandError
from app.engine.ids import StreamID
from app.engine.store import Store

T0 = 1_700_000_000_000
"""The ManualClock's starting time (ms since the epoch) in every engine test."""

INVALID_ID = "ERR Invalid stream ID specified as stream command argument"


def run(store: Store, *argv: str | int) -> Any:
    """Run one command that must answer at once (not block, not fail)."""
    reply = store.execute([str(a) for a in argv])
    assert not isinstance(reply, Block), f"{argv} blocked"
    return reply


def error(store: Store, *argv: str | int) -> str:
    """Run one command that must fail; its exact Redis error text."""
    with pytest.raises(CommandError) as info:
        store.execute([str(a) for a in argv])
    return info.value.text


def sid(text: str) -> StreamID:
    ms, _, seq = text.partition("-")
    return StreamID(int(ms), int(seq))


def ids(entries: list[Any]) -> list[str]:
    """The IDs of a list of entries (or of bare StreamIDs), as "ms-seq" strings."""
    return [str(getattr(e, "id", e)) for e in entries]


class Journal:
    """A store's journal kept in memory, each record through its stored form: what
    recovery reads is what was written."""

    def __init__(self) -> None:
        self.records: list[Record] = []

    def append(self, record: Record) -> None:
        self.records.append(decode_record(encode_record(record)))


def recovered(store: Store, journal: Journal) -> list[Store]:
    """The state replayed from ``journal`` and loaded from a snapshot of ``store``, each
    checked to encode to the very snapshot ``store`` does."""
    from app.engine.clock import ManualClock
    from app.engine.replay import restore
    from app.engine.snapshot import decode_snapshot, encode_snapshot, snapshot_view

    replayed = Store(clock=ManualClock(T0))
    restore(replayed.keyspace, None, journal.records)
    loaded = Store(clock=ManualClock(T0))
    expected = encode_snapshot(snapshot_view(store.keyspace))
    decode_snapshot(expected, loaded.keyspace)
    for other in (replayed, loaded):
        assert encode_snapshot(snapshot_view(other.keyspace)) == expected
    return [replayed, loaded]
