"""Recovery refuses damaged state with a clear message; snapshots cover and drop the journal."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from sqlalchemy import func, select, update

from app.durability import Readiness, ReadyState
from app.engine.snapshot import encode_snapshot
from app.engine.store import Store
from app.settings import FsyncMode, Settings
from app.storage import RecoveryError, Storage
from app.storage import migrate as migrations
from app.storage.database import Database, create_db_engine
from app.storage.recovery import recover
from app.storage.tables import journal, meta, snapshots
from tests.conftest import Commands, free_port
from tests.storage.conftest import DurableServer

GOOD = [["new", "s"], ["add", "s", "1-0", ["f", "v"]]]


def test_replays_the_journal(db: Database) -> None:
    db.append([(1, orjson.dumps(GOOD))])
    db.append([(2, orjson.dumps([["add", "s", "2-0", ["g", "w"]]]))])
    store = Store()
    done = recover(db, store)
    assert (done.records, done.last_seq) == (2, 2)
    assert store.execute(["XLEN", "s"]) == 2


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (b'[["add",', "journal record seq=2 in .*: not valid JSON"),
        (orjson.dumps([["teleport", "s"]]), "cannot replay journal record seq=2 .*unknown effect"),
        (orjson.dumps([["add", "missing", "1-0", []]]), "seq=2 .*missing stream"),
        (orjson.dumps({"not": "a list"}), "seq=2 .*must be a list"),
    ],
)
def test_a_damaged_record_stops_recovery(db: Database, record: bytes, message: str) -> None:
    db.append([(1, orjson.dumps(GOOD))])
    db.append([(2, record)])
    with pytest.raises(RecoveryError, match=message):
        recover(db, Store())


def test_a_gap_stops_recovery(db: Database) -> None:
    db.append([(1, orjson.dumps(GOOD))])
    db.append([(3, orjson.dumps([["del", "s"]]))])
    with pytest.raises(RecoveryError, match="gap: record 2 is missing"):
        recover(db, Store())


def test_an_unknown_format_stops_recovery(db: Database) -> None:
    with db.engine.begin() as conn:
        conn.execute(update(meta).values(value="99"))
    with pytest.raises(RecoveryError, match="record format '99'"):
        recover(db, Store())


def test_a_damaged_snapshot_stops_recovery(db: Database) -> None:
    db.write_snapshot(5, b"{garbage")
    with pytest.raises(
        RecoveryError, match=r"snapshot id=\d+ \(covering record 5\).*not valid JSON"
    ):
        recover(db, Store())


def test_snapshot_then_later_records(db: Database) -> None:
    src = Store()
    src.execute(["XADD", "s", "1-0", "f", "v"])
    db.write_snapshot(10, encode_snapshot(src.snapshot_view()))
    db.append([(9, b"garbage, covered by the snapshot")])
    db.append([(11, orjson.dumps([["del", "s"]]))])
    store = Store()
    done = recover(db, store)
    assert (done.snapshot_covers_seq, done.records, done.last_seq) == (10, 1, 11)
    assert store.execute(["EXISTS", "s"]) == 0


def test_server_refuses_to_start_on_a_damaged_journal(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    engine = create_db_engine(url)
    migrations.upgrade(engine)
    Database(engine).append([(1, orjson.dumps(GOOD))])
    Database(engine).append([(2, b"\x00not json")])
    engine.dispose()
    port = free_port()
    proc = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--database-url", url,
         "--data-dir", str(tmp_path), "--log-level", "warning"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "recovery failed: journal record seq=2" in proc.stderr
    assert "not valid JSON" in proc.stderr


def test_size_trigger_snapshots_and_drops_the_journal(db_url: str, tmp_path: Path) -> None:
    srv = DurableServer(tmp_path, db_url, env={"XSTREAMS_SNAPSHOT_AFTER_BYTES": "5000"})
    xs = Commands(srv.url)
    try:
        for i in range(150):
            xs("XADD", "s", "*", "i", str(i))
        engine = create_db_engine(db_url)
        with engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(snapshots)).scalar() == 1
            covers = conn.execute(select(snapshots.c.covers_seq)).scalar()
            left = conn.execute(select(func.min(journal.c.last_seq))).scalar()
        engine.dispose()
        assert covers and covers > 50
        assert left is None or left > covers
    finally:
        xs.client.close()
        srv.kill()
    srv = DurableServer(tmp_path, db_url)
    xs = Commands(srv.url)
    try:
        assert xs("XLEN", "s") == 150
    finally:
        xs.client.close()
        srv.stop()


def test_cli_snapshot_folds_the_journal(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'xstreams.db'}"
    srv = DurableServer(tmp_path, url)
    xs = Commands(srv.url)
    for i in range(20):
        xs("XADD", "s", "*", "i", str(i))
    xs.client.close()
    srv.kill()
    out = subprocess.run(
        [sys.executable, "-m", "app.cli", "snapshot", "--data-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert "1 streams, snapshot covering record 20 (20 journal records folded in)" in out
    engine = create_db_engine(url)
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(journal)).scalar() == 0
    engine.dispose()


async def test_readyz_is_503_until_recovery_is_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process: recovery is held in the migration step; /readyz and commands wait."""
    from app.main import create_app

    settings = Settings(data_dir=tmp_path, fsync=FsyncMode.ALWAYS)
    gate = asyncio.Event()
    real_start = Storage.start

    async def slow_start(storage: Storage, store: Store) -> object:
        await gate.wait()
        return await real_start(storage, store)

    monkeypatch.setattr(Storage, "start", slow_start)
    held = asyncio.Event()  # a request reached the loading gate's wait
    real_wait = Readiness.wait

    async def wait(readiness: Readiness, timeout_s: float) -> bool:
        held.set()
        return await real_wait(readiness, timeout_s)

    monkeypatch.setattr(Readiness, "wait", wait)
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://x") as client,
    ):
        r = await client.get("/readyz")
        assert r.status_code == 503 and r.json()["status"] == "recovering"
        assert (await client.get("/healthz")).status_code == 200
        held.clear()
        pending = asyncio.create_task(client.post("/", json=["XADD", "s", "*", "a", "1"]))
        await asyncio.wait_for(held.wait(), 10)
        assert not pending.done()  # held by the loading gate, not refused at once
        gate.set()
        r = await pending
        assert r.status_code == 200, r.text
        assert (await client.get("/readyz")).json() == {
            "status": "ready",
            "backend": "embedded",
            "pid": os.getpid(),
            "storage": "ok",
        }
    readiness: Readiness = app.state.services.readiness
    assert readiness.state is ReadyState.READY


def test_rows_partly_covered_by_the_snapshot(db: Database) -> None:
    src = Store()
    src.execute(["XADD", "s", "1-0", "f", "v"])
    src.execute(["XADD", "s", "2-0", "f", "v"])
    db.append([(1, orjson.dumps(GOOD)), (2, orjson.dumps([["add", "s", "2-0", ["f", "v"]]])),
               (3, orjson.dumps([["add", "s", "3-0", ["f", "v"]]]))])  # fmt: skip
    db.write_snapshot(2, encode_snapshot(src.snapshot_view()))  # keeps the row 1..3
    store = Store()
    done = recover(db, store)
    assert (done.snapshot_covers_seq, done.records, done.last_seq) == (2, 1, 3)
    assert store.execute(["XLEN", "s"]) == 3


async def test_a_write_the_journal_cannot_store_is_refused_and_never_recovered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine's arithmetic as it was (a delivery count that grows past 2**64) makes an
    XCLAIM whose record the codec refuses: the client gets a 503 saying why, not a 500; the
    claim is not acknowledged, later writes are refused and so are reads of the key it
    touched, while other streams stay readable; a restart loads the durable state, without
    the claim, and takes writes again."""
    from app.engine.commands import claims
    from app.main import create_app
    from tests.storage.test_crash import _edge_payload

    settings = Settings(data_dir=tmp_path, fsync=FsyncMode.ALWAYS)

    async def run(steps: Any) -> None:
        app = create_app(settings)
        transport = httpx.ASGITransport(app=app)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://x") as client,
        ):
            await steps(client)

    async def before(client: httpx.AsyncClient) -> None:
        body = json.dumps(["RESTORE", "t", "0", _edge_payload()]).encode()
        assert (await client.post("/", content=body)).json() == {"result": "OK"}
        assert (await client.post("/", json=["XADD", "other", "1-0", "f", "v"])).status_code == 200
        monkeypatch.setattr(claims, "u64", lambda n: n)  # no wrap: 2**64
        r = await client.post("/", json=["XCLAIM", "t", "g", "c2", "0", "1-0"])
        assert r.status_code == 503, r.text
        assert "cannot store exactly" in r.json()["error"]
        monkeypatch.undo()
        r = await client.post("/", json=["XADD", "other", "2-0", "f", "v"])
        assert r.status_code == 503 and "until xstreams restarts" in r.json()["error"]
        assert (await client.post("/", json=["XPENDING", "t", "g"])).status_code == 503
        r = await client.post("/", json=["XRANGE", "other", "-", "+"])
        assert r.json() == {"result": [["1-0", ["f", "v"]]]}

    async def after(client: httpx.AsyncClient) -> None:
        r = await client.post("/", json=["XPENDING", "t", "g", "-", "+", "10"])
        assert [row[1::2] for row in r.json()["result"]] == [["c", -1]]  # as restored
        r = await client.post("/", json=["XADD", "other", "2-0", "f", "v"])
        assert r.json() == {"result": "2-0"}

    await run(before)
    await run(after)
