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
