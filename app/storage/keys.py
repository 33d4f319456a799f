"""API keys in the database: what ``xstreams keys`` writes and the running service reads.

The service re-reads the table every ``keys_refresh_ms`` (a few rows: cheap) into its
``KeyRing``, so keys created or revoked by the command line, from another process, take effect
within about a second, without a restart. The functions block: run them off the event loop
(``KeyStore`` does, for the service).

Keys live in the service's SQL database whatever serves the streams: beside the journal with
the embedded engine, and alone (this table, no journal) in front of Redis, where several
front-ends on several hosts share them through one ``--database-url``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
from sqlalchemy import Engine, insert, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError

from app.access.grants import Grant
from app.access.keys import KeyRecord
from app.access.rates import CredentialLimits
from app.storage import migrate
from app.storage.database import Database, create_db_engine
from app.storage.tables import api_keys

__all__ = ["DuplicateKeyName", "KeyStore", "insert_key", "load_keys", "revoke_key"]


class KeyStore:
    """The running service's view of the keys table: what ``app/main.py`` loads at start and
    re-reads every ``keys_refresh_ms``, on either backend.

    With the embedded engine it shares ``Storage``'s database, which ``Storage.start``
    migrated. In front of Redis it opens the database itself (``at``), lazily: the first
    ``load`` creates the engine and migrates the schema as ``Storage.start`` and
    ``xstreams keys`` do, and a failure (a database server away, a bad URL, a folder that
    cannot be written) raises there and is tried again on the next ``load``, so the caller
    decides how to wait and what to say.
    """

    def __init__(self, db: Database | None, url: str) -> None:
        self._db = db  # None until the first load opens it (``at``)
        self._owned = db is None  # opened here, so closed here
        self._url = url
        self.url = make_url(url).render_as_string(hide_password=True)  # for messages

    @classmethod
    def sharing(cls, db: Database) -> KeyStore:
        """The keys of a database whose owner migrates and closes it (``Storage``)."""
        return cls(db, db.engine.url.render_as_string(hide_password=False))

    @classmethod
    def at(cls, url: str) -> KeyStore:
        """The keys of the database at ``url``, opened and migrated by the first ``load``."""
        return cls(None, url)

    async def load(self) -> list[KeyRecord]:
        """The API keys as stored now (``xstreams keys`` writes them)."""
        return await asyncio.to_thread(self._load)

    def _load(self) -> list[KeyRecord]:
        return load_keys(self._opened().engine)

    def open_now(self) -> None:
        """Open and migrate the database now, blocking, unless done already (the first
        ``load`` does it otherwise)."""
        self._opened()

    def _opened(self) -> Database:
        if self._db is None:
            self._db = self._open()
        return self._db

    def _open(self) -> Database:
        u = make_url(self._url)
        if u.get_backend_name() == "sqlite" and u.database not in (None, "", ":memory:"):
            # The default file under --data-dir, whose folder a front-end may be first to use.
            Path(u.database).parent.mkdir(parents=True, exist_ok=True)
        db = Database(create_db_engine(self._url))
        try:
            migrate.upgrade(db.engine)
        except BaseException:
            db.close()
            raise
        return db

    def close(self) -> None:
        """Close a database this store opened (a shared one is its owner's to close)."""
        if self._owned and self._db is not None:
            self._db.close()
            self._db = None


class DuplicateKeyName(Exception):
    """A key of that name exists already (revoked keys keep their names)."""


def insert_key(engine: Engine, record: KeyRecord) -> None:
    try:
        with engine.begin() as conn:
            conn.execute(
                insert(api_keys).values(
                    key_id=record.key_id,
                    name=record.name,
                    secret_hash=record.secret_hash,
                    grant_json=orjson.dumps(record.grant.to_json()).decode(),
                    created_at_ms=record.created_at_ms,
                    expires_at_ms=record.expires_at_ms,
                    revoked_at_ms=record.revoked_at_ms,
                    limits_json=(
                        orjson.dumps(record.limits.as_json()).decode()
                        if record.limits.limited
                        else None
                    ),
                    prefix=record.prefix or None,
                )
            )
    except IntegrityError as e:
        raise DuplicateKeyName(record.name) from e


def load_keys(engine: Engine) -> list[KeyRecord]:
    with engine.connect() as conn:
        rows = conn.execute(select(api_keys).order_by(api_keys.c.name)).all()
    return [
        KeyRecord(
            key_id=r.key_id,
            name=r.name,
            secret_hash=r.secret_hash,
            grant=Grant.from_json(orjson.loads(r.grant_json)),
            created_at_ms=int(r.created_at_ms),
            expires_at_ms=None if r.expires_at_ms is None else int(r.expires_at_ms),
            revoked_at_ms=None if r.revoked_at_ms is None else int(r.revoked_at_ms),
            limits=(
                CredentialLimits()
                if r.limits_json is None
                else CredentialLimits.from_json(orjson.loads(r.limits_json))
            ),
            prefix=r.prefix or "",
        )
        for r in rows
    ]


def revoke_key(engine: Engine, name: str, now_ms: int) -> bool:
    """Revoke the live key ``name``; False when there is none."""
    with engine.begin() as conn:
        done = conn.execute(
            update(api_keys)
            .where(api_keys.c.name == name, api_keys.c.revoked_at_ms.is_(None))
            .values(revoked_at_ms=now_ms)
        )
    return bool(done.rowcount)
