"""``xstreams check``: a stopped service's database verified, the first bad record named, and
``--repair`` truncating the journal there after saying what is lost. SQLite and PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import func, insert, select

from app.engine.snapshot import encode_snapshot
from app.engine.store import Store
from app.storage.database import Database, create_db_engine
from app.storage.tables import journal, snapshots
from tests.conftest import Commands
from tests.storage.conftest import DurableServer
from tests.storage.test_damage import flip


def xstreams_check(url: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "check", "--database-url", url, *flags],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,  # no terminal
    )


def rec(*effects: list[Any]) -> bytes:
    return orjson.dumps(list(effects))


def rows(db: Database) -> list[tuple[int, int]]:
    with db.engine.connect() as conn:
        return [
            (int(a), int(b))
            for a, b in conn.execute(
                select(journal.c.seq, journal.c.last_seq).order_by(journal.c.seq)
            )
        ]


def seed(db: Database) -> None:
    """Records 1..5 in three rows: [1..2] [3..4] [5]."""
    db.append(
        [
            (1, rec(["new", "s"], ["add", "s", "1-0", ["f", "a"]])),
            (2, rec(["add", "s", "2-0", ["f", "b"]])),
        ]
    )
    db.append(
        [(3, rec(["add", "s", "3-0", ["f", "c"]])), (4, rec(["add", "s", "4-0", ["f", "d"]]))]
    )
    db.append([(5, rec(["add", "s", "5-0", ["f", "e"]]))])


def test_a_clean_database_checks_clean(db: Database, db_url: str) -> None:
    seed(db)
    done = xstreams_check(db_url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ": clean; no snapshot; 3 journal rows and 5 records" in done.stdout
    assert "last good record: 5" in done.stdout


def _flipped_value(db: Database) -> None:
    flip(db, journal, journal.c.seq == 3, b'"d"', b'"D"')


def _id_backwards(db: Database) -> None:
    with db.engine.begin() as conn:
        conn.execute(journal.delete().where(journal.c.seq >= 3))
    db.append(
        [(3, rec(["add", "s", "3-0", ["f", "c"]])), (4, rec(["add", "s", "1-5", ["f", "d"]]))]
    )
    db.append([(5, rec(["add", "s", "5-0", ["f", "e"]]))])


def _overlap(db: Database) -> None:
    blob = b"[" + rec(["add", "s", "9-0", ["f", "x"]]) + b"]"
    with db.engine.begin() as conn:
        conn.execute(journal.delete().where(journal.c.seq == 5))
        conn.execute(
            insert(journal).values(
                seq=4, last_seq=4, records=blob, created_at_ms=0, checksum=zlib.crc32(blob)
            )
        )


@pytest.mark.parametrize(
    ("damage", "named", "kept_rows", "lost"),
    [
        (_flipped_value, r"journal records seq=3\.\.4 in .*checksum mismatch", [(1, 2)], "3..5"),
        (
            _id_backwards,
            r"journal record seq=4 .*1-5 of 's' is not greater",
            [(1, 2), (3, 3)],
            "4..5",
        ),
        (_overlap, r"journal record seq=4 in .*overlap or go backwards", [(1, 2), (3, 4)], None),
    ],
)
def test_damage_is_named_then_repaired(
    db: Database,
    db_url: str,
    damage: Any,
    named: str,
    kept_rows: list[tuple[int, int]],
    lost: str | None,
) -> None:
    import re

    seed(db)
    damage(db)
    before = rows(db)
    done = xstreams_check(db_url)
    assert done.returncode == 1, done.stdout + done.stderr
    assert ": DAMAGED;" in done.stdout
    assert re.search("first bad record: .*" + named, done.stdout), done.stdout
    assert rows(db) == before  # a check alone changes nothing

    refused = xstreams_check(db_url, "--repair")  # no terminal, no --yes
    assert refused.returncode == 1
    assert "refusing to repair without --yes" in refused.stderr
    assert rows(db) == before

    repaired = xstreams_check(db_url, "--repair", "--yes")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    if lost is None:
        assert "a repair deletes 1 journal row that holds no record after" in repaired.stdout
    else:
        assert f"a repair deletes records seq {lost}" in repaired.stdout, repaired.stdout
    assert "repaired: the journal now ends at record" in repaired.stdout
    assert rows(db) == kept_rows
    assert xstreams_check(db_url).returncode == 0


def test_a_damaged_snapshot_is_not_repaired(db: Database, db_url: str) -> None:
    src = Store()
    src.execute(["XADD", "s", "1-0", "f", "value"])
    sid = db.write_snapshot(3, encode_snapshot(src.snapshot_view()))
    db.append([(4, rec(["add", "s", "2-0", ["f", "b"]]))])
    flip(db, snapshots, snapshots.c.id == sid, b"value", b"valuf")
    done = xstreams_check(db_url, "--repair", "--yes")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"snapshot id={sid} (covering record 3)" in done.stdout
    assert "checksum mismatch" in done.stdout
    assert "cannot repair it" in done.stdout and "Nothing was changed" in done.stdout
    assert rows(db) == [(4, 4)]
    with db.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(snapshots)).scalar() == 1


def test_missing_database_is_a_usage_error(tmp_path: Path) -> None:
    done = xstreams_check(f"sqlite:///{tmp_path / 'none.db'}")
    assert done.returncode == 2
    assert "no database at" in done.stderr
    assert not (tmp_path / "none.db").exists()


def test_repair_then_the_service_serves_exactly_the_records_before_the_damage(
    db_url: str, tmp_path: Path
) -> None:
    srv = DurableServer(tmp_path, db_url)
    xs = Commands(srv.url)
    ids = [xs("XADD", "s", "*", "n", f"value-{i}") for i in range(8)]  # one row each
    xs.client.close()
    srv.kill()  # no shutdown snapshot: the journal holds everything
    engine = create_db_engine(db_url)
    damaged = Database(engine)
    with engine.connect() as conn:
        stored = conn.execute(select(journal.c.seq, journal.c.records)).all()
    [seq] = [seq for seq, blob in stored if b"value-5" in bytes(blob)]
    flip(damaged, journal, journal.c.seq == seq, b"value-5", b"value-X")
    engine.dispose()

    assert xstreams_check(db_url).returncode == 1
    done = xstreams_check(db_url, "--repair", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr

    srv = DurableServer(tmp_path, db_url)
    xs = Commands(srv.url)
    try:
        got = xs("XRANGE", "s", "-", "+")
        assert [e[0] for e in got] == ids[:5]
        assert [e[1] for e in got] == [["n", f"value-{i}"] for i in range(5)]
    finally:
        xs.client.close()
        srv.stop()


def test_a_bad_record_costs_only_its_keys(db: Database, db_url: str, tmp_path: Path) -> None:
    """The record an XCLAIM of delivery count 2**64-1 once wrote (the count 2**64, read back
    as a float) stopped every start, and a repair offered to delete every later record,
    other streams' acknowledged writes included. The check names the keys it touches; the
    repair drops it and the later records of those keys (a rename binds the new name too)
    and keeps every other record, which the service then serves."""
    db.append(
        [
            (1, rec(["new", "a"], ["add", "a", "1-0", ["f", "1"]])),
            (2, rec(["new", "b"], ["add", "b", "1-0", ["f", "1"]])),
        ]
    )
    bad = b'[["pel","a","g","1-0","c",1700000000000,18446744073709551616]]'
    db.append(
        [
            (3, bad),
            (4, rec(["add", "b", "2-0", ["f", "2"]])),
            (5, rec(["add", "a", "2-0", ["f", "2"]])),
        ]
    )
    db.append(
        [
            (6, rec(["rename", "a", "c"])),
            (7, rec(["add", "c", "5-0", ["f", "5"]])),
            (8, rec(["add", "b", "3-0", ["f", "3"]])),
            (9, rec(["config", "stream-node-max-entries", 50])),
        ]
    )
    before = rows(db)
    done = xstreams_check(db_url)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "journal record seq=3" in done.stdout and "expected an integer" in done.stdout
    assert "it touches the keys: 'a'" in done.stdout
    assert "a repair empties record seq 3 and 3 later records of the keys 'a', 'c'" in done.stdout
    assert "(seq 3, 5, 6, 7)" in done.stdout
    assert "It keeps the 3 later records of every other key." in done.stdout
    assert rows(db) == before

    repaired = xstreams_check(db_url, "--repair", "--yes")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert "repaired: every record up to 9 replays cleanly" in repaired.stdout
    assert rows(db) == before  # the same rows, seq numbers contiguous
    assert xstreams_check(db_url).returncode == 0

    srv = DurableServer(tmp_path, db_url)
    xs = Commands(srv.url)
    try:
        assert xs("XRANGE", "b", "-", "+") == [[f"{i}-0", ["f", str(i)]] for i in (1, 2, 3)]
        assert xs("XRANGE", "a", "-", "+") == [["1-0", ["f", "1"]]]  # as before record 3
        assert xs("EXISTS", "c") == 0
        assert xs("CONFIG", "GET", "stream-node-max-entries") == ["stream-node-max-entries", "50"]
    finally:
        xs.client.close()
        srv.stop()


def test_a_damaged_row_after_the_bad_record_is_left_to_the_next_repair(
    db: Database, db_url: str
) -> None:
    """The repair by key reads the rows after the bad record only while they can be read:
    it rewrites those, and the check after it names the damaged row, which a second repair
    truncates as before."""
    db.append([(1, rec(["new", "a"], ["new", "b"]))])
    bad = b'[["pel","a","g","1-0","c",5,18446744073709551616]]'
    db.append([(2, bad), (3, rec(["add", "b", "1-0", ["f", "1"]])), (4, rec(["del", "a"]))])
    db.append([(5, rec(["add", "b", "2-0", ["f", "2"]]))])
    flip(db, journal, journal.c.seq == 5, b'"2"]', b'"X"]')
    first = xstreams_check(db_url, "--repair", "--yes")
    assert first.returncode == 1, first.stdout + first.stderr
    assert "a repair empties record seq 2 and 1 later record of the keys 'a' (seq 2, 4)" in (
        first.stdout
    )
    assert "the journal holds another bad one: journal record seq=5" in first.stdout
    assert "checksum mismatch" in first.stdout
    second = xstreams_check(db_url, "--repair", "--yes")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "a repair deletes records seq 5..5" in second.stdout
    assert rows(db) == [(1, 1), (2, 4)]
    assert xstreams_check(db_url).returncode == 0
