"""Schema changes through Alembic only: applied on start and by ``xstreams migrate``.

The Alembic configuration is built in code and runs on a connection of xstreams' own engine,
so the same dialect settings apply and no second URL has to be kept in step. The scripts live
inside the package (``app/storage/migrations``), so an installed wheel migrates its database
as a checkout does; ``alembic.ini`` at the top of the repository points there too.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("path_separator", "os")
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> str | None:
    """Bring the schema to ``revision``; returns the revision the database is at after."""
    cfg = alembic_config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
    return current_revision(engine)


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()
