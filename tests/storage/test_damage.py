"""Storage that refuses damage: a changed byte, IDs or seq numbers going backwards stop recovery.

Before checksums and these replay rules, each case below loaded silently and served a state
that differs from the one acknowledged. Each runs on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import zlib
from typing import Any

import orjson
import pytest
from sqlalchemy import insert, select, update

from app.engine.codec import record_from_wire
from app.engine.effects import ReplayError, StreamCreated
from app.engine.keyspace import Keyspace
from app.engine.replay import apply_record
from app.engine.snapshot import encode_snapshot, snapshot_view
from app.engine.store import Store
from app.storage import RecoveryError
from app.storage.database import Database
from app.storage.recovery import recover
from app.storage.tables import journal, snapshots


def rec(*effects: list[Any]) -> bytes:
    return orjson.dumps(list(effects))


def flip(db: Database, table: Any, key: Any, old: bytes, new: bytes) -> None:
    """Change bytes of one stored row in place, as a damaged disk or a hand edit would,
    leaving everything else (its checksum included) as it was."""
    data = table.c.records if table is journal else table.c.data
    with db.engine.begin() as conn:
        blob = bytes(conn.execute(select(data).where(key)).scalar_one())
        assert old in blob
        conn.execute(update(table).where(key).values({data.name: blob.replace(old, new, 1)}))


def insert_row(db: Database, seq: int, last_seq: int, blob: bytes) -> None:
    """A journal row written behind the writer's back (with a correct checksum)."""
    values: dict[str, Any] = {"seq": seq, "last_seq": last_seq, "records": blob}
    values["created_at_ms"] = 0
    if "checksum" in journal.c:
        values["checksum"] = zlib.crc32(blob)
    with db.engine.begin() as conn:
        conn.execute(insert(journal).values(values))


def test_a_flipped_byte_in_a_journal_value_stops_recovery(db: Database) -> None:
    db.append([(1, rec(["new", "s"], ["add", "s", "1-0", ["f", "value"]])), (2, rec(["del", "s"]))])
    db.append([(3, rec(["new", "t"], ["add", "t", "1-0", ["f", "kept"]]))])
    flip(db, journal, journal.c.seq == 3, b"kept", b"kapt")
    with pytest.raises(RecoveryError, match=r"journal record seq=3 in .*: checksum mismatch"):
        recover(db, Store())


def test_a_flipped_byte_in_a_snapshot_value_stops_recovery(db: Database) -> None:
    src = Store()
    src.execute(["XADD", "s", "1-0", "f", "value"])
    sid = db.write_snapshot(7, encode_snapshot(src.snapshot_view()))
    flip(db, snapshots, snapshots.c.id == sid, b"value", b"valuf")
    with pytest.raises(
        RecoveryError, match=rf"snapshot id={sid} \(covering record 7\).*checksum mismatch"
    ):
        recover(db, Store())


def test_an_edited_entry_id_in_the_journal_stops_recovery(db: Database) -> None:
    db.append([(1, rec(["new", "s"], ["add", "s", "5-0", ["f", "a"]]))])
    db.append([(2, rec(["add", "s", "6-0", ["f", "b"]]))])
    flip(db, journal, journal.c.seq == 2, b"6-0", b"4-0")  # now before 5-0
    with pytest.raises(RecoveryError, match=r"journal record seq=2 .*checksum mismatch"):
        recover(db, Store())


def test_an_entry_id_that_goes_backwards_stops_recovery(db: Database) -> None:
    """Even with a sound checksum (written so, or edited with the checksum fixed up), an
    entry ID not above its stream's last ID is refused: XADD's own rule."""
    db.append([(1, rec(["new", "s"], ["add", "s", "5-0", ["f", "a"]]))])
    db.append([(2, rec(["add", "s", "5-0", ["f", "again"]]))])
    with pytest.raises(
        RecoveryError,
        match=r"cannot replay journal record seq=2 .*5-0 of 's' is not greater than the"
        r" stream's last ID 5-0",
    ):
        recover(db, Store())


def test_overlapping_seq_numbers_stop_recovery(db: Database) -> None:
    db.append([(1, rec(["new", "s"])), (2, rec(["add", "s", "1-0", ["f", "a"]]))])
    insert_row(
        db, 2, 3, b"[" + rec(["add", "s", "1-0", ["f", "a"]]) + b"," + rec(["del", "s"]) + b"]"
    )
    with pytest.raises(
        RecoveryError, match=r"journal records seq=2\.\.3 in .*overlap or go backwards"
    ):
        recover(db, Store())


def test_a_row_whose_seq_range_runs_backwards_stops_recovery(db: Database) -> None:
    db.append([(1, rec(["new", "s"]))])
    insert_row(db, 5, 2, b"[]")
    with pytest.raises(RecoveryError, match=r"seq=5\.\.2 .*last seq is before its first"):
        recover(db, Store())


def test_a_snapshot_covering_part_of_a_row_still_loads(db: Database) -> None:
    """The one overlap that is sound: the first row after a snapshot may start before it."""
    db.append([(1, rec(["new", "s"])), (2, rec(["add", "s", "1-0", ["f", "a"]]))])
    ks = Keyspace()
    apply_record(ks, [StreamCreated(key="s")])  # the state after record 1
    db.write_snapshot(1, encode_snapshot(snapshot_view(ks)))
    store = Store()
    done = recover(db, store)
    assert (done.snapshot_covers_seq, done.records, done.last_seq) == (1, 1, 2)
    assert store.execute(["XLEN", "s"]) == 1


GOOD = [["new", "s"], ["add", "s", "1-0", ["f", "v"]], ["gcreate", "s", "g", "0-0", None]]


@pytest.mark.parametrize(
    ("effect", "message"),
    [
        (["add", "s", "0-5", ["f", "v"]], "not greater than the stream's last ID 1-0"),
        (["add", "s", "1-0", ["f", "v"]], "not greater than the stream's last ID 1-0"),
        (["new", "s"], "created again while it exists"),
        (["del", "nothing"], "deletion of missing stream"),
        (["xdel", "s", ["7-0"]], "deletion of missing entry 7-0"),
        (["gcreate", "s", "g", "0-0", None], "group 'g' of 's' created again"),
        (["gdestroy", "s", "nope"], "destruction of missing group"),
        (["cdel", "s", "g", "nobody"], "deletion of missing consumer"),
        (["ack", "s", "g", ["1-0"]], "ack of 1-0 .*not pending"),
    ],
)
def test_replay_refuses_effects_that_would_build_another_state(
    effect: list[Any], message: str
) -> None:
    """Each of these is recorded by a command only when it happened, so meeting one that
    does not fit means the journal was damaged or edited."""
    ks = Keyspace()
    apply_record(ks, record_from_wire(GOOD))
    with pytest.raises(ReplayError, match=message):
        apply_record(ks, record_from_wire([effect]))
