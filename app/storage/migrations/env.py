"""Alembic environment: runs migrations on the connection xstreams hands over, or on the URL
from the xstreams settings when Alembic's own command line is used."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from app.storage.tables import metadata

config = context.config


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        # SQLite cannot ALTER most things in place; batch mode rebuilds the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    from app.settings import FsyncMode, Settings
    from app.storage.database import create_db_engine

    settings = Settings()
    url = config.get_main_option("sqlalchemy.url") or settings.resolved_database_url()
    engine = create_db_engine(url, FsyncMode.ALWAYS)
    try:
        with engine.begin() as conn:
            _run(conn)
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("xstreams migrations run online only")
run_migrations_online()
