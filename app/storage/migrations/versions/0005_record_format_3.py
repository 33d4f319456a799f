"""Record format 3: the journal may hold the effects of Redis 8.6's idempotent appends.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26

Format 3 adds stored forms (``idmp``, ``idmpdup``, ``xcfgset``: XADD IDMP / IDMPAUTO and
XCFGSET; ``remember``: a response kept for an Idempotency-Key; ``app/engine/codec.py``)
and changes none: every format 2 record is a format 3
record, so upgrading rewrites no row, it only records the format, and an older xstreams then
refuses the database with a clear message instead of stopping at a record it cannot read.

Downgrading is refused while the journal holds a format 3 record or a snapshot is format 4
(a stream's IDMP state, kept responses): format 2 cannot say what they did.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_META = sa.table("xstreams_meta", sa.column("key"), sa.column("value"))
_JOURNAL = sa.table("xstreams_journal", sa.column("records"))
_SNAPSHOTS = sa.table("xstreams_snapshots", sa.column("data"))
# Bytes that only format 3 writes, one tag a line: each kind's opening.
_FORMAT_3 = (
    '["idmp",',
    '["idmpdup",',
    '["xcfgset",',
    '["remember",',
)
# Snapshot formats format 2 records cannot come with.
_SNAPSHOT_FORMATS = (b'"format":4',)


def _set(value: str) -> None:
    op.execute(sa.update(_META).where(_META.c.key == "record_format").values(value=value))


def upgrade() -> None:
    _set("3")


def downgrade() -> None:
    conn = op.get_bind()
    for row in conn.execute(sa.select(_JOURNAL.c.records)):
        text = bytes(row[0]).decode("utf-8", "replace")
        if any(tag in text for tag in _FORMAT_3):
            raise RuntimeError(
                "the journal holds records of format 3 (Redis 8.6's XADD IDMP / IDMPAUTO,"
                " XCFGSET, or a response kept for an Idempotency-Key): format 2 cannot express"
                " them, so 0005 cannot be undone"
            )
    for row in conn.execute(sa.select(_SNAPSHOTS.c.data)):
        if any(tag in bytes(row[0]) for tag in _SNAPSHOT_FORMATS):
            raise RuntimeError(
                "a snapshot is format 4 (a stream's IDMP state or kept Idempotency-Key"
                " responses): format 2 cannot express it,"
                " so 0005 cannot be undone"
            )
    _set("2")
