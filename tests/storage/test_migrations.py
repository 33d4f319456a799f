"""Migrations bring an empty database to head, and the models do not drift from them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

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
