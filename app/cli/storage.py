"""``xstreams migrate`` and ``xstreams snapshot``: the storage commands of the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from app.settings import FsyncMode

DataDir = Annotated[
    Path | None, typer.Option(help="Folder of the default SQLite database (data/xstreams.db).")
]
DatabaseUrl = Annotated[
    str | None,
    typer.Option(
        help="SQLAlchemy URL, e.g. postgresql+psycopg://user@host/db (default: SQLite in"
        " --data-dir). Env: XSTREAMS_DATABASE_URL."
    ),
]
Fsync = Annotated[
    FsyncMode | None,
    typer.Option(
        help="always: reply after the commit; everysec: commit within a second;"
        " off: snapshots only. Env: XSTREAMS_FSYNC."
    ),
]


def _settings(data_dir: Path | None, database_url: str | None) -> Any:
    from app.settings import Settings

    overrides: dict[str, Any] = {"data_dir": data_dir, "database_url": database_url}
    settings = Settings(**{k: v for k, v in overrides.items() if v is not None})
    if settings.database_url is None:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    return settings


def migrate(data_dir: DataDir = None, database_url: DatabaseUrl = None) -> None:
    """Apply the Alembic migrations up to head (the service also does this on start)."""
    from app.storage.offline import migrate_database

    url, revision = migrate_database(_settings(data_dir, database_url))
    typer.echo(f"{url}: schema at revision {revision}")


def snapshot(data_dir: DataDir = None, database_url: DatabaseUrl = None) -> None:
    """Take a snapshot of the stored state and drop the journal it covers.

    Meant for a stopped service (a running one snapshots by itself on journal size and on
    shutdown), but safe beside a running one: it covers only what is already committed.
    """
    from app.storage import RecoveryError
    from app.storage.offline import snapshot_database

    try:
        done = snapshot_database(_settings(data_dir, database_url))
    except RecoveryError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from e
    r = done.recovered
    what = f"wrote {done.size_bytes} bytes" if done.size_bytes else "nothing to compact"
    typer.echo(
        f"{done.url}: {done.streams} streams, snapshot covering record {r.last_seq}"
        f" ({r.records} journal records folded in); {what}; {done.duration_ms} ms"
    )
