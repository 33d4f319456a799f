"""``xstreams migrate``, ``snapshot`` and ``check``: the storage commands of the command line."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from app.engine.keyspace import StreamConfig
from app.settings import FsyncMode

if TYPE_CHECKING:
    from app.storage.check import KeyRepair, Loss, Report
    from app.storage.database import Database

DataDir = Annotated[
    Path | None, typer.Option(help="Folder of the default SQLite database (data/xstreams.db).")
]
DatabaseUrl = Annotated[
    str | None,
    typer.Option(
        help="SQLAlchemy URL, e.g. postgresql+psycopg://user@host/db (default: SQLite in"
        " --data-dir). With a Redis backend it holds the API keys only: give every front-end"
        " and `xstreams keys` the same one. Env: XSTREAMS_DATABASE_URL."
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


def check(
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Drop the bad record and the later records of its keys, or truncate the"
            " journal at a damaged row (says what is lost first).",
        ),
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Repair without asking for confirmation.")
    ] = False,
) -> None:
    """Verify a stopped service's database: checksums, seq order, every record replayed.

    Exit status: 0 clean (or repaired), 1 damage found and not repaired, 2 the database
    cannot be checked (missing, unreachable, schema not migrated).
    """
    from app.settings import Settings
    from app.storage import check as checking

    overrides: dict[str, Any] = {"data_dir": data_dir, "database_url": database_url}
    settings = Settings(**{k: v for k, v in overrides.items() if v is not None})
    try:
        db = checking.open_database(settings)
    except checking.CheckUnavailable as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from e
    config = StreamConfig(
        settings.stream_node_max_entries,
        settings.stream_node_max_bytes,
        settings.idmp_max_producers,
    )
    try:
        report = checking.check(db, config)
        _summary(report)
        if report.error is None:
            return
        typer.echo(f"first bad record: {report.error}")
        if report.bad_keys is not None:
            typer.echo(f"it touches the keys: {_keys_text(report.bad_keys)}")
        if report.key_repair is not None:
            _repair_keys(db, config, report.key_repair, repair=repair, yes=yes)
            return
        loss = report.loss
        if loss is None:
            if report.snapshot_damaged:
                typer.echo(
                    f"the newest snapshot (id={report.snapshot_id}) is damaged: truncating the"
                    " journal cannot repair it (the records it covers are gone); restore a"
                    " backup. Nothing was changed."
                )
            else:
                typer.echo("this cannot be repaired by truncating the journal; nothing changed")
            raise typer.Exit(1)
        typer.echo(_loss_text(loss))
        if not repair:
            typer.echo("run `xstreams check --repair` to truncate the journal there")
            raise typer.Exit(1)
        _confirm("Truncate the journal?", yes)
        checking.repair(db, loss)
        after = checking.check(db, config)
        if after.error is not None:  # pragma: no cover - what remains replayed cleanly
            typer.echo(f"still damaged after the repair: {after.error}", err=True)
            raise typer.Exit(1)
        typer.echo(f"repaired: the journal now ends at record {after.last_good_seq}")
    finally:
        db.close()


def _confirm(question: str, yes: bool) -> None:
    """Go on with a repair: --yes, or a terminal's answer (exit 1 otherwise)."""
    import sys

    if yes:
        return
    if not sys.stdin.isatty():
        typer.echo(
            "refusing to repair without --yes: standard input is not a terminal; nothing changed",
            err=True,
        )
        raise typer.Exit(1)
    if not typer.confirm(question, default=False):
        typer.echo("nothing changed")
        raise typer.Exit(1)


def _keys_text(keys: frozenset[str]) -> str:
    # repr: a key may hold any byte (kept as \udcNN) or a comma.
    return ", ".join(repr(k) for k in sorted(keys))


def _repair_keys(
    db: Database, config: StreamConfig, plan: KeyRepair, *, repair: bool, yes: bool
) -> None:
    """Say what a repair scoped to the bad record's keys drops and keeps, then do it."""
    from app.storage import check as checking

    later = len(plan.dropped) - 1
    typer.echo(
        f"a repair empties record seq {plan.bad_seq} and {later} later"
        f" record{'' if later == 1 else 's'} of the keys {_keys_text(plan.keys)}"
        f" (seq {_seqs_text(plan.dropped)}); those keys come back as they were before record"
        f" {plan.bad_seq}. It keeps the {plan.kept} later record{'' if plan.kept == 1 else 's'}"
        " of every other key."
    )
    if not repair:
        typer.echo("run `xstreams check --repair` to drop those records")
        raise typer.Exit(1)
    _confirm("Drop those records?", yes)
    checking.repair_keys(db, plan)
    after = checking.check(db, config)
    if after.error is not None:
        typer.echo(f"repaired that record; the journal holds another bad one: {after.error}")
        typer.echo("run `xstreams check --repair` again")
        raise typer.Exit(1)
    typer.echo(f"repaired: every record up to {after.last_good_seq} replays cleanly")


def _seqs_text(seqs: list[int]) -> str:
    shown = ", ".join(map(str, seqs[:10]))
    return shown + (f" and {len(seqs) - 10} more" if len(seqs) > 10 else "")


def _summary(report: Report) -> None:
    snap = (
        f"snapshot id={report.snapshot_id} covering record {report.snapshot_covers_seq}"
        if report.snapshot_id is not None
        else "no snapshot"
    )
    state = "clean" if report.error is None else "DAMAGED"
    typer.echo(
        f"{report.url}: {state}; {snap}; {report.rows} journal rows and {report.records}"
        f" records after it replay cleanly; last good record: {report.last_good_seq}"
    )


def _loss_text(loss: Loss) -> str:
    from app.storage.check import time_text

    rows = loss.rows
    kept = (
        f"; the damaged row's first {len(loss.keep)} records are kept (rewritten with a fresh"
        " checksum)"
        if loss.keep
        else ""
    )
    if loss.last_seq < loss.first_seq:  # a row repeating records already loaded
        return (
            f"a repair deletes {rows.rows} journal row{'s' if rows.rows > 1 else ''} that"
            f" hold{'s' if rows.rows == 1 else ''} no record after the last good one"
            f" (written {time_text(rows.first_created_at_ms)})"
        )
    return (
        f"a repair deletes records seq {loss.first_seq}..{loss.last_seq}"
        f" ({loss.last_seq - loss.first_seq + 1} records in {rows.rows} journal rows, written"
        f" {time_text(rows.first_created_at_ms)} .. {time_text(rows.last_created_at_ms)})"
        f"{kept}"
    )
