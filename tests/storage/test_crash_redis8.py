"""kill -9 after the commands Redis added after 7.0: what was acknowledged comes back.

XDELEX and XACKDEL (DELREF, ACKED), trims with DELREF and ACKED, XNACK (FORCE and
RETRYCOUNT included) and XREADGROUP ... CLAIM run on a durable server (``--fsync always``),
which is then killed with SIGKILL. After the restart (the journal replayed) and again after
a clean stop (the shutdown snapshot loaded), XRANGE, XINFO STREAM FULL and XPENDING
(extended, idle masked) answer exactly as they did before the kill, and claims serve the
released entries in the order XNACK gave them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from app.storage.database import create_db_engine
from tests.conftest import Commands
from tests.storage.conftest import DurableServer


def state(xs: Commands) -> list[Any]:
    out: list[Any] = [
        xs("XRANGE", "s", "-", "+"),
        xs("XINFO", "STREAM", "s", "FULL"),
        xs("XRANGE", "n", "-", "+"),
        xs("XINFO", "STREAM", "n", "FULL"),
    ]
    for group in ("g", "h"):
        rows = xs("XPENDING", "s", group, "-", "+", "100")
        out.append([[r[0], r[1], r[3]] for r in rows])  # idle is the wall clock's
        out.append(xs("XPENDING", "s", group))
    return out


def redis8_writes(xs: Commands) -> None:
    """Every new command once or more, each reply checked (the facts the state must keep)."""
    for i in range(1, 13):
        assert xs("XADD", "s", f"{i}-0", "f", str(i)) == f"{i}-0"
    assert xs("XGROUP", "CREATE", "s", "g", "0") == "OK"
    assert xs("XGROUP", "CREATE", "s", "h", "0") == "OK"
    assert (
        len(xs("XREADGROUP", "GROUP", "g", "alice", "COUNT", "8", "STREAMS", "s", ">")[0][1]) == 8
    )
    assert len(xs("XREADGROUP", "GROUP", "h", "bob", "COUNT", "4", "STREAMS", "s", ">")[0][1]) == 4
    assert xs("XDELEX", "s", "DELREF", "IDS", "2", "1-0", "12-0") == [1, 1]
    assert xs("XDELEX", "s", "ACKED", "IDS", "2", "2-0", "11-0") == [2, 2]
    assert xs("XACKDEL", "s", "g", "ACKED", "IDS", "2", "3-0", "5-0") == [2, 2]
    assert xs("XACKDEL", "s", "h", "ACKED", "IDS", "1", "3-0") == [1]
    assert xs("XACKDEL", "s", "g", "DELREF", "IDS", "1", "4-0") == [1]
    assert xs("XTRIM", "s", "MINID", "3-0", "DELREF") == 1  # 2-0, pending in both groups
    assert xs("XACK", "s", "g", "6-0") == 1
    assert xs("XTRIM", "s", "MAXLEN", "0", "ACKED") == 0  # h has not read 5..10
    # XNACK: FAIL, FATAL with FORCE on an entry never delivered to h, RETRYCOUNT.
    assert xs("XNACK", "s", "g", "FAIL", "IDS", "2", "8-0", "7-0") == 2
    assert xs("XNACK", "s", "h", "FATAL", "FORCE", "IDS", "1", "9-0") == 1
    assert xs("XNACK", "s", "g", "SILENT", "IDS", "1", "5-0", "RETRYCOUNT", "4") == 0  # acked
    assert xs("XNACK", "s", "g", "SILENT", "FORCE", "IDS", "1", "6-0", "RETRYCOUNT", "4") == 1
    # CLAIM: the released entries first (8, 7, 6), then what is new to g, COUNT 4 in all.
    read = xs("XREADGROUP", "GROUP", "g", "carol", "CLAIM", "60000", "COUNT", "4",
              "STREAMS", "s", ">")  # fmt: skip
    assert [(e[0], e[3]) for e in read[0][1]] == [("8-0", 1), ("7-0", 1), ("6-0", 4), ("9-0", 0)]
    # A stream without groups: ACKED and DELREF trim as plain trims.
    for i in range(1, 6):
        xs("XADD", "n", f"{i}-0", "f", "v")
    assert xs("XTRIM", "n", "MAXLEN", "3", "ACKED") == 2
    assert xs("XADD", "n", "MAXLEN", "2", "DELREF", "6-0", "f", "v") == "6-0"


@pytest.mark.timeout(120)
def test_redis8_commands_survive_kill_9(db_url: str, tmp_path: Path) -> None:
    srv = DurableServer(tmp_path, db_url)
    xs = Commands(srv.url)
    try:
        redis8_writes(xs)
        before = state(xs)
        # What the checks below rest on: released entries, and a DELREF that left no trace.
        assert [r[:2] for r in before[6]] == [["9-0", ""]]
        assert "2-0" not in {r[0] for r in before[4] + before[6]}
    finally:
        xs.client.close()
        srv.kill()
    for _ in range(2):  # after kill -9: the journal; after a clean stop: the snapshot
        srv = DurableServer(tmp_path, db_url)
        xs = Commands(srv.url)
        try:
            assert state(xs) == before
        finally:
            xs.client.close()
            srv.stop()
    # And what was left released is still claimed first (h's 9-0, released under FATAL).
    srv = DurableServer(tmp_path, db_url)
    xs = Commands(srv.url)
    try:
        read = xs("XREADGROUP", "GROUP", "h", "dave", "CLAIM", "60000", "COUNT", "1",
                  "STREAMS", "s", ">")  # fmt: skip
        assert [(e[0], e[3]) for e in read[0][1]] == [("9-0", 2**63 - 1)]
    finally:
        xs.client.close()
        srv.kill()


def snapshots(db_url: str) -> int:
    engine = create_db_engine(db_url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text("select count(*) from xstreams_snapshots")).scalar_one())
    finally:
        engine.dispose()


@pytest.mark.timeout(120)
def test_released_fifo_survives_a_snapshot_and_kill_9(db_url: str, tmp_path: Path) -> None:
    """Released entries in a snapshot (taken at a clean stop) and after it in the journal
    (then kill -9): claims serve them in the order XNACK gave them, across both."""
    srv = DurableServer(tmp_path, db_url)
    xs = Commands(srv.url)
    try:
        for i in range(1, 7):
            xs("XADD", "s", f"{i}-0", "f", "v")
        xs("XGROUP", "CREATE", "s", "g", "0")
        xs("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
        assert xs("XNACK", "s", "g", "FAIL", "IDS", "1", "4-0") == 1
        assert xs("XNACK", "s", "g", "SILENT", "IDS", "2", "2-0", "5-0") == 2
        assert xs("XNACK", "s", "g", "FAIL", "IDS", "1", "4-0") == 1  # to the end again
    finally:
        xs.client.close()
        srv.stop()
    assert snapshots(db_url) >= 1
    srv = DurableServer(tmp_path, db_url)
    xs = Commands(srv.url)
    try:
        assert xs("XNACK", "s", "g", "FATAL", "IDS", "1", "1-0") == 1
    finally:
        xs.client.close()
        srv.kill()
    srv = DurableServer(tmp_path, db_url)
    xs = Commands(srv.url)
    try:
        pending = xs("XPENDING", "s", "g", "-", "+", "10")
        assert [(r[0], r[1], r[2], r[3]) for r in pending if r[1] == ""] == [
            ("1-0", "", -1, 2**63 - 1),
            ("2-0", "", -1, 0),
            ("4-0", "", -1, 1),
            ("5-0", "", -1, 0),
        ]
        read = xs("XREADGROUP", "GROUP", "g", "bob", "CLAIM", "60000", "STREAMS", "s", ">")
        assert [e[0] for e in read[0][1]] == ["2-0", "5-0", "4-0", "1-0"]
    finally:
        xs.client.close()
        srv.kill()
