"""Record format 2: the journal may hold the effects of Redis 8.2 and 8.8's stream commands.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25

Format 2 adds three stored forms (a trim with a reference policy, ``unref``, ``nack``;
``app/engine/codec.py``) and changes none: every format 1 record is a format 2 record, so
upgrading rewrites no row, it only records the format, and an older xstreams then refuses
the database with a clear message instead of stopping at the first record it cannot read.

Downgrading is refused while the journal holds a format 2 record or a snapshot holds
released (XNACK) entries: format 1 cannot say what they did.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_META = sa.table("xstreams_meta", sa.column("key"), sa.column("value"))
_JOURNAL = sa.table("xstreams_journal", sa.column("records"))
_SNAPSHOTS = sa.table("xstreams_snapshots", sa.column("data"))
# Bytes that only format 2 writes: the new kinds' tags, a trim's policy, a format 3 snapshot.
_FORMAT_2 = ('["unref",', '["nack",', '"DELREF"]', '"ACKED"]')


def _set(value: str) -> None:
    op.execute(sa.update(_META).where(_META.c.key == "record_format").values(value=value))


def upgrade() -> None:
    _set("2")


def downgrade() -> None:
    conn = op.get_bind()
    for row in conn.execute(sa.select(_JOURNAL.c.records)):
        text = bytes(row[0]).decode("utf-8", "replace")
        if any(tag in text for tag in _FORMAT_2):
            raise RuntimeError(
                "the journal holds records of format 2 (XDELEX, XACKDEL, XNACK or a trim with"
                " a reference policy): format 1 cannot express them, so 0004 cannot be undone"
            )
    for row in conn.execute(sa.select(_SNAPSHOTS.c.data)):
        if b'"format":3' in bytes(row[0]):
            raise RuntimeError(
                "a snapshot holds entries released by XNACK: format 1 cannot express them,"
                " so 0004 cannot be undone"
            )
    _set("1")
