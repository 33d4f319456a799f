"""A restart replays only a bounded tail of the journal, whatever kind of records it holds.

Replay costs per record, and the records of Idempotency-Key requests (kept responses) and of
XADD IDMP are small: with only a byte trigger, hundreds of thousands of them were replayed on
every restart. ``XSTREAMS_SNAPSHOT_AFTER_RECORDS`` takes a snapshot after that many records;
here a small one, with the byte trigger out of reach, on SQLite and PostgreSQL.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from sqlalchemy import func, select

from app.engine.store import Store
from app.storage import migrate
from app.storage.database import Database, create_db_engine
from app.storage.recovery import RecoveryError, recover
from app.storage.tables import journal, snapshots
from tests.conftest import Commands
from tests.storage.conftest import DurableServer

EVERY = 40
RECORDS_ONLY = {
    "XSTREAMS_SNAPSHOT_AFTER_RECORDS": str(EVERY),
    "XSTREAMS_SNAPSHOT_AFTER_BYTES": str(1 << 40),
}


def _info(xs: Commands, section: str) -> dict[str, str]:
    text: str = xs("INFO", section)
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


@pytest.mark.timeout(120)
def test_record_count_triggers_a_snapshot_and_a_restart_replays_the_tail(
    db_url: str, tmp_path: Path
) -> None:
    srv = DurableServer(tmp_path, db_url, env=RECORDS_ONLY)
    xs = Commands(srv.url)
    try:
        ids = []
        for i in range(60):  # an XADD and its kept response: 2 records each
            r = xs.raw("XADD", "k", "*", "i", str(i), headers={"Idempotency-Key": f"key-{i}"})
            assert r.status_code == 200, r.text
            ids.append(r.json()["result"])
        for i in range(60):
            xs("XADD", "s", "IDMP", "p", f"iid-{i}", "*", "i", str(i))
        before = [xs("XRANGE", "k", "-", "+"), xs("XINFO", "STREAM", "s")]
        assert int(_info(xs, "persistence")["xstreams_journal_records_since_snapshot"]) < EVERY
    finally:
        xs.client.close()
        srv.kill()
    engine = create_db_engine(db_url)
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(snapshots)).scalar() == 1
        covers = conn.execute(select(snapshots.c.covers_seq)).scalar()
        left = conn.execute(select(func.min(journal.c.seq))).scalar()
    migrate.upgrade(engine)
    tail = recover(Database(engine), Store())
    engine.dispose()
    assert covers is not None and covers >= 180 - EVERY
    assert left is None or left > covers - EVERY  # the rows the snapshot covers are gone
    assert tail.snapshot_covers_seq == covers
    assert tail.records < EVERY + 10  # the tail, not the 180-odd records written
    srv = DurableServer(tmp_path, db_url, env=RECORDS_ONLY)
    xs = Commands(srv.url)
    try:
        assert [xs("XRANGE", "k", "-", "+"), xs("XINFO", "STREAM", "s")] == before
        again = xs.raw("XADD", "k", "*", "i", "0", headers={"Idempotency-Key": "key-0"})
        assert again.json()["result"] == ids[0]
        assert again.headers.get("Idempotent-Replayed") == "true"
        assert (
            xs("XADD", "s", "IDMP", "p", "iid-0", "*", "i", "x")
            == before[1][before[1].index("first-entry") + 1][0]
        )
    finally:
        xs.client.close()
        srv.stop()


def test_a_bad_record_inside_a_row_is_named_exactly(db: Database) -> None:
    """Replay takes a row's records at once; a refusal still names its own record, and what
    ``xstreams check --repair`` may keep of the row (the records before it)."""
    db.append([(1, orjson.dumps([["new", "s"]]))])
    ids = (1, 2, 2, 3)  # the third goes back
    db.append([(seq, orjson.dumps([["add", "s", f"{i}-0", ["f", "v"]]])) for seq, i in
               enumerate(ids, 2)])  # fmt: skip
    with pytest.raises(RecoveryError, match="cannot replay journal record seq=4") as caught:
        recover(db, Store())
    stop = caught.value.stop
    assert stop is not None and stop.in_record
    assert (stop.bad_seq, stop.last_good_seq, stop.keep, stop.records) == (4, 3, 2, 3)
