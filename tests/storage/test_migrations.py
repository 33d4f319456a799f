"""Migrations bring an empty database to head, and the models do not drift from them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from app.engine.clock import ManualClock
from app.engine.store import Store
from app.storage import migrate
from app.storage.database import Database, create_db_engine
from app.storage.tables import RECORD_FORMAT, metadata


def test_upgrade_empty_database_to_head(db_url: str) -> None:
    engine = create_db_engine(db_url)
    try:
        assert migrate.current_revision(engine) is None
        assert migrate.upgrade(engine) == migrate.head_revision()
        tables = set(inspect(engine).get_table_names())
        assert {"xstreams_journal", "xstreams_snapshots", "xstreams_meta"} <= tables
        assert Database(engine).record_format() == RECORD_FORMAT
        # Applying again is a no-op (the service does it on every start).
        assert migrate.upgrade(engine) == migrate.head_revision()
    finally:
        engine.dispose()


def test_models_match_migrations(db_url: str) -> None:
    engine = create_db_engine(db_url)
    try:
        migrate.upgrade(engine)
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True})
            assert compare_metadata(ctx, metadata) == []
    finally:
        engine.dispose()


def test_downgrade_to_base_and_back(db_url: str) -> None:
    engine = create_db_engine(db_url)
    try:
        migrate.upgrade(engine)
        cfg = migrate.alembic_config()
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "base")
        assert not {"xstreams_journal"} & set(inspect(engine).get_table_names())
        assert migrate.upgrade(engine) == migrate.head_revision()
    finally:
        engine.dispose()


def test_cli_migrate(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "app.cli", "migrate", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert f"schema at revision {migrate.head_revision()}" in out
    assert (tmp_path / "xstreams.db").exists()


def test_upgrade_from_0001_computes_checksums_of_existing_rows(db_url: str) -> None:
    """A database written before checksums: its rows get theirs, and it loads as before."""
    import zlib

    import orjson
    from sqlalchemy import text

    from app.engine.snapshot import encode_snapshot
    from app.engine.store import Store
    from app.storage.recovery import recover

    engine = create_db_engine(db_url)
    try:
        assert migrate.upgrade(engine, "0001") == "0001"
        src = Store()
        src.execute(["XADD", "s", "1-0", "f", "v"])
        snap = encode_snapshot(src.snapshot_view())
        rows = [
            (2, 2, b"[" + orjson.dumps([["add", "s", "2-0", ["f", "w"]]]) + b"]"),
            (3, 4, b"[" + orjson.dumps([["add", "s", "3-0", ["g", "x"]]]) + b","
             + orjson.dumps([["add", "s", "4-0", ["g", "y"]]]) + b"]"),
        ]  # fmt: skip
        with engine.begin() as conn:
            conn.execute(
                text(
                    "insert into xstreams_snapshots (covers_seq, data, created_at_ms)"
                    " values (1, :d, 0)"
                ),
                {"d": snap},
            )
            for seq, last, blob in rows:
                conn.execute(
                    text(
                        "insert into xstreams_journal (seq, last_seq, records, created_at_ms)"
                        " values (:s, :l, :r, 0)"
                    ),
                    {"s": seq, "l": last, "r": blob},
                )
        assert migrate.upgrade(engine) == migrate.head_revision()
        with engine.connect() as conn:
            stored = conn.execute(
                text("select records, checksum from xstreams_journal order by seq")
            ).all()
            snap_crc = conn.execute(text("select checksum from xstreams_snapshots")).scalar()
        assert [int(c) for _, c in stored] == [zlib.crc32(bytes(r)) for r in [b for *_, b in rows]]
        assert snap_crc == zlib.crc32(snap)
        store = Store()
        done = recover(Database(engine), store)
        assert (done.snapshot_covers_seq, done.records, done.last_seq) == (1, 3, 4)
        assert store.execute(["XLEN", "s"]) == 4
    finally:
        engine.dispose()


def _records(*commands: list[str]) -> list[tuple[int, bytes]]:
    """The journal records ``commands`` write (clock at ``T0``), encoded as stored."""
    from app.engine.codec import encode_record
    from app.engine.effects import Record

    written: list[Record] = []

    class Sink:
        def append(self, record: Record) -> None:
            written.append(record)

    store = Store(clock=ManualClock(T0), journal=Sink())
    for argv in commands:
        store.execute(argv)
    return [(i, encode_record(r)) for i, r in enumerate(written, 1)]


T0 = 1_700_000_000_000
# Entries 1..5; g read 1..4 (acked 1), h read 1..2; 5 deleted, 1 trimmed (still pending
# in h); a stream n without groups. Every record these write is a format 1 record.
FORMAT_1_COMMANDS = [
    *(["XADD", "s", f"{i}-0", "f", str(i)] for i in range(1, 6)),
    ["XGROUP", "CREATE", "s", "g", "0"],
    ["XGROUP", "CREATE", "s", "h", "0"],
    ["XREADGROUP", "GROUP", "g", "c", "COUNT", "4", "STREAMS", "s", ">"],
    ["XREADGROUP", "GROUP", "h", "d", "COUNT", "2", "STREAMS", "s", ">"],
    ["XACK", "s", "g", "1-0"],
    ["XDEL", "s", "5-0"],
    ["XTRIM", "s", "MAXLEN", "3"],
    ["XADD", "n", "1-0", "f", "v"],
    ["XADD", "n", "2-0", "f", "v"],
]


def _downgrade(engine: Any, revision: str) -> None:
    cfg = migrate.alembic_config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)


def test_format_1_database_is_upgraded_and_loads(db_url: str) -> None:
    """A database as an older xstreams left it (record format "1", its journal written by
    the 7.0 commands): 0004 marks it format 2 without rewriting a row, and it loads."""
    from app.storage.recovery import recover

    engine = create_db_engine(db_url)
    try:
        assert migrate.upgrade(engine, "0003") == "0003"
        db = Database(engine)
        assert db.record_format() == "1"
        records = _records(*FORMAT_1_COMMANDS)
        db.append(records)
        with engine.connect() as conn:
            before = conn.execute(text("select records from xstreams_journal")).all()
        assert migrate.upgrade(engine) == migrate.head_revision()
        assert db.record_format() == RECORD_FORMAT == "4"
        with engine.connect() as conn:
            assert conn.execute(text("select records from xstreams_journal")).all() == before
        store = Store(clock=ManualClock(T0))
        done = recover(db, store)
        assert done.records == len(records)
        assert store.execute(["XLEN", "s"]) == 3
        reference = Store(clock=ManualClock(T0))
        for argv in FORMAT_1_COMMANDS:
            reference.execute(argv)
        for argv in (["XINFO", "STREAM", "s", "FULL"], ["XPENDING", "s", "g"]):
            assert repr(store.execute(argv)) == repr(reference.execute(argv))
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    "command",
    [
        ["XDELEX", "s", "DELREF", "IDS", "1", "1-0"],  # gone, still pending in h
        ["XACKDEL", "s", "g", "DELREF", "IDS", "1", "2-0"],  # pending in h too
        ["XTRIM", "s", "MAXLEN", "0", "DELREF"],
        ["XTRIM", "n", "MAXLEN", "0", "ACKED"],
        ["XADD", "n", "MAXLEN", "1", "ACKED", "9-0", "f", "v"],
        ["XNACK", "s", "g", "FAIL", "IDS", "1", "2-0"],
    ],
    ids=lambda argv: " ".join(argv[:1] + argv[3:5]),
)
def test_downgrade_of_0004_refused_with_format_2_records(db_url: str, command: list[str]) -> None:
    """0004 cannot be undone while the journal holds a record format 1 cannot express; the
    database stays at head and format 2. With format 1 records only, it can."""
    engine = create_db_engine(db_url)
    try:
        migrate.upgrade(engine, "0004")
        db = Database(engine)
        db.append(_records(*FORMAT_1_COMMANDS, command))
        with pytest.raises(RuntimeError, match="format 2"):
            _downgrade(engine, "0003")
        assert migrate.current_revision(engine) == "0004"
        assert db.record_format() == "2"
    finally:
        engine.dispose()


def test_downgrade_of_0004_refused_with_a_released_snapshot(db_url: str) -> None:
    from app.engine.snapshot import encode_snapshot

    engine = create_db_engine(db_url)
    try:
        migrate.upgrade(engine, "0004")
        db = Database(engine)
        store = Store()
        for argv in [*FORMAT_1_COMMANDS, ["XNACK", "s", "g", "SILENT", "IDS", "1", "3-0"]]:
            store.execute(argv)
        db.write_snapshot(0, encode_snapshot(store.snapshot_view()))
        with pytest.raises(RuntimeError, match="XNACK"):
            _downgrade(engine, "0003")
        assert db.record_format() == "2"
    finally:
        engine.dispose()


def test_downgrade_of_0004_with_format_1_records_only(db_url: str) -> None:
    engine = create_db_engine(db_url)
    try:
        migrate.upgrade(engine, "0004")
        db = Database(engine)
        # XDELEX and XACKDEL without DELREF write format 1 records only.
        db.append(
            _records(
                *FORMAT_1_COMMANDS,
                ["XDELEX", "s", "IDS", "1", "3-0"],
                ["XACKDEL", "s", "g", "ACKED", "IDS", "1", "4-0"],
            )
        )
        _downgrade(engine, "0003")
        assert migrate.current_revision(engine) == "0003"
        assert db.record_format() == "1"
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    "command",
    [
        ["XADD", "s", "IDMP", "p", "i", "*", "f", "v"],
        ["XADD", "s", "IDMPAUTO", "p", "*", "f", "v"],
        ["XCFGSET", "s", "IDMP-DURATION", "5"],
    ],
    ids=lambda argv: " ".join(argv[:3]),
)
def test_downgrade_of_0005_refused_with_format_3_records(db_url: str, command: list[str]) -> None:
    """0005 cannot be undone while the journal holds a record format 2 cannot express."""
    engine = create_db_engine(db_url)
    try:
        migrate.upgrade(engine, "0005")
        db = Database(engine)
        assert db.record_format() == "3"
        db.append(_records(*FORMAT_1_COMMANDS, command))
        with pytest.raises(RuntimeError, match="format 3"):
            _downgrade(engine, "0004")
        assert migrate.current_revision(engine) == "0005"
        assert db.record_format() == "3"
    finally:
        engine.dispose()


def test_downgrade_of_0005_refused_with_a_format_4_snapshot(db_url: str) -> None:
    from app.engine.snapshot import encode_snapshot

    engine = create_db_engine(db_url)
    try:
        migrate.upgrade(engine, "0005")
        db = Database(engine)
        store = Store()
        for argv in [*FORMAT_1_COMMANDS, ["XCFGSET", "s", "IDMP-MAXSIZE", "7"]]:
            store.execute(argv)
        db.write_snapshot(0, encode_snapshot(store.snapshot_view()))
        with pytest.raises(RuntimeError, match="format 4"):
            _downgrade(engine, "0004")
        assert db.record_format() == "3"
    finally:
        engine.dispose()


def test_downgrade_of_0005_with_format_2_records_only(db_url: str) -> None:
    """Without IDMP records the format goes back to 2, and 0004's checks still run below."""
    engine = create_db_engine(db_url)
    try:
        migrate.upgrade(engine, "0005")
        db = Database(engine)
        db.append(_records(*FORMAT_1_COMMANDS, ["XADD", "s", "*", "f", "v"]))
        _downgrade(engine, "0004")
        assert migrate.current_revision(engine) == "0004"
        assert db.record_format() == "2"
    finally:
        engine.dispose()


@pytest.mark.parametrize("change", ["policy", "retention", "release", "webhook"])
def test_downgrade_of_0006_refused_with_format_4_records(db_url: str, change: str) -> None:
    """0006 cannot be undone while the journal holds a policy, a retention, a webhook, or a
    release under a policy (its time): format 3 cannot express them."""
    from app.engine.codec import encode_record
    from app.engine.commands.policy import set_policy, set_retention
    from app.engine.commands.webhook_ops import set_webhook
    from app.engine.delivery import DeliveryPolicy, Retention, Webhook
    from app.engine.effects import Record

    written: list[Record] = []

    class Sink:
        def append(self, record: Record) -> None:
            written.append(record)

    engine = create_db_engine(db_url)
    try:
        migrate.upgrade(engine)
        db = Database(engine)
        assert db.record_format() == "4"
        store = Store(clock=ManualClock(T0), journal=Sink())
        for argv in [*FORMAT_1_COMMANDS, ["XGROUP", "CREATE", "s", "p", "0"]]:
            store.execute(argv)
        if change == "retention":
            store.run(set_retention, "s", Retention(max_len=5))
        elif change == "webhook":
            secret = "whsec_MDEyMzQ1Njc4OWFiY2RlZg=="
            store.run(set_webhook, Webhook("s", "p", "h", "https://example.com", secret))
        else:
            store.run(set_policy, "s", "p", DeliveryPolicy(backoff_ms=(10,)))
        if change == "release":
            store.execute(["XREADGROUP", "GROUP", "p", "c", "STREAMS", "s", ">"])
            del written[:]  # only the release: its time alone is format 4
            store.execute(["XNACK", "s", "p", "FAIL", "IDS", "1", "2-0"])
        db.append([(i, encode_record(r)) for i, r in enumerate(written, 1)])
        with pytest.raises(RuntimeError, match="format 4"):
            _downgrade(engine, "0005")
        assert migrate.current_revision(engine) == migrate.head_revision()
        assert db.record_format() == "4"
    finally:
        engine.dispose()


def test_downgrade_of_0006_refused_with_a_webhook_snapshot(db_url: str) -> None:
    """A group with webhooks and no policy is snapshotted as format 5 too."""
    from app.engine.commands.webhook_ops import set_webhook
    from app.engine.delivery import Webhook
    from app.engine.snapshot import encode_snapshot

    engine = create_db_engine(db_url)
    try:
        migrate.upgrade(engine)
        db = Database(engine)
        store = Store()
        for argv in [*FORMAT_1_COMMANDS, ["XGROUP", "CREATE", "s", "p", "0"]]:
            store.execute(argv)
        secret = "whsec_MDEyMzQ1Njc4OWFiY2RlZg=="
        store.run(set_webhook, Webhook("s", "p", "h", "https://example.com", secret))
        db.write_snapshot(0, encode_snapshot(store.snapshot_view()))
        with pytest.raises(RuntimeError, match="format 5"):
            _downgrade(engine, "0005")
        assert db.record_format() == "4"
    finally:
        engine.dispose()


def test_downgrade_of_0006_with_format_3_records_only(db_url: str) -> None:
    """A release without a policy (time 0) is format 2's: the format goes back to 3."""
    engine = create_db_engine(db_url)
    try:
        migrate.upgrade(engine)
        db = Database(engine)
        db.append(_records(*FORMAT_1_COMMANDS, ["XNACK", "s", "g", "FAIL", "IDS", "1", "2-0"]))
        _downgrade(engine, "0005")
        assert migrate.current_revision(engine) == "0005"
        assert db.record_format() == "3"
    finally:
        engine.dispose()


def test_downgrade_of_0008_revokes_the_keys_bound_to_a_prefix(db_url: str) -> None:
    """Without the column a key would reach names outside its tenant: it is revoked first;
    keys without a prefix stay live."""
    from app.access import Grant, KeyRecord
    from app.storage.keys import insert_key, load_keys

    engine = create_db_engine(db_url)
    try:
        migrate.upgrade(engine)
        for name, prefix in (("plain", ""), ("tenant", "a:")):
            insert_key(
                engine,
                KeyRecord(
                    key_id=name[:12],
                    name=name,
                    secret_hash="0" * 64,
                    grant=Grant.of(read=["*"]),
                    created_at_ms=1,
                    prefix=prefix,
                ),
            )
        assert {r.name: r.prefix for r in load_keys(engine)} == {"plain": "", "tenant": "a:"}
        _downgrade(engine, "0007")
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT name, revoked_at_ms FROM xstreams_api_keys")).all()
        revoked = {name: at is not None for name, at in rows}
        assert revoked == {"plain": False, "tenant": True}
        assert migrate.upgrade(engine) == migrate.head_revision()
    finally:
        engine.dispose()
