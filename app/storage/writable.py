"""Whether the database takes writes: checked at start, before anything is loaded or served.

A database that can be read but not written (a SQLite file of mode 0444, or in a read-only
folder or file system; a PostgreSQL hot standby or ``default_transaction_read_only=on``; a
role without INSERT) used to start and report ready, then apply a write in memory that the
commit refused. ``Storage.start`` now runs ``Database.probe_write`` (a rolled-back insert)
after the migrations, and classifies a failure here: a database that refuses writes keeps
the service not ready with this reason, retried, like a PostgreSQL that cannot be reached.

Refusals are recognised by their codes, not their texts: SQLite's ``SQLITE_READONLY`` family,
PostgreSQL's SQLSTATE 25006 (read-only transaction) and 42501 (insufficient privilege). SQLite
answers ``SQLITE_CANTOPEN`` when it cannot create its ``-wal`` / ``-shm`` files beside the
database; the file system is asked then, to tell a read-only folder from a missing one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from sqlalchemy.engine import URL

from app.storage.writer import describe

_SQLITE_READONLY = 8
_SQLITE_CANTOPEN = 14
_PG_REFUSALS = {"25006": "read-only transaction", "42501": "insufficient privilege"}


def read_only_reason(url: URL, exc: BaseException) -> str | None:
    """Why the database refused a write, if ``exc`` is such a refusal; None otherwise."""
    orig = getattr(exc, "orig", None) or exc
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        path = _sqlite_path(url)
        found = _file_problem(path) if path is not None else None
        if code & 0xFF == _SQLITE_READONLY:
            return found or describe(exc)
        if code & 0xFF == _SQLITE_CANTOPEN:
            return found  # None: it cannot be opened for another reason (missing folder ...)
        return None
    sqlstate = getattr(orig, "sqlstate", None)
    if isinstance(sqlstate, str) and sqlstate in _PG_REFUSALS:
        return f"{_PG_REFUSALS[sqlstate]} ({describe(exc)})"
    return None


def _sqlite_path(url: URL) -> Path | None:
    name = url.database
    if not name or name == ":memory:" or name.startswith("file:"):
        return None
    return Path(name)


def _file_problem(path: Path) -> str | None:
    """What the file system refuses SQLite: writing the file, or new files beside it."""
    if path.exists():
        try:
            os.close(os.open(path, os.O_RDWR))
        except OSError as e:
            return f"the file {path} cannot be opened for writing ({e.strerror})"
    folder = path.parent
    try:
        fd, probe = tempfile.mkstemp(prefix=".xstreams-probe-", dir=folder)
    except OSError as e:
        if not folder.is_dir():
            return None
        return (
            f"the folder {folder} does not accept new files ({e.strerror}); SQLite creates"
            f" {path.name}-wal and {path.name}-shm there"
        )
    os.close(fd)
    os.unlink(probe)
    return None
