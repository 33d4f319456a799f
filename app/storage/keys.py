"""API keys in the database: what ``xstreams keys`` writes and the running service reads.

The service re-reads the table every ``keys_refresh_ms`` (a few rows: cheap) into its
``KeyRing``, so keys created or revoked by the command line, from another process, take effect
within about a second, without a restart. Blocking calls: run them off the event loop.
"""

from __future__ import annotations

import orjson
from sqlalchemy import Engine, insert, select, update
from sqlalchemy.exc import IntegrityError

from app.access.grants import Grant
from app.access.keys import KeyRecord
from app.storage.tables import api_keys

__all__ = ["DuplicateKeyName", "insert_key", "load_keys", "revoke_key"]


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
