"""Record format 4: the journal may hold delivery policies, retention, webhooks and timed
releases.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26

Format 4 adds stored forms (``policy``: a group's delivery policy; ``retention``: a stream
name's retention; ``webhook``: a group's webhook; a sixth item on ``nack``: the release time
under a policy; ``app/engine/codec.py``) and changes none: every format 3 record is a
format 4 record, so upgrading rewrites no row, it only records the format, and an older
xstreams then refuses the database with a clear message instead of stopping at a record it
cannot read.

Downgrading is refused while the journal holds a format 4 record or a snapshot is format 5
(a group's policy or webhooks, a retention): format 3 cannot say what they did.
"""

from __future__ import annotations

import re

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_META = sa.table("xstreams_meta", sa.column("key"), sa.column("value"))
_JOURNAL = sa.table("xstreams_journal", sa.column("records"))
_SNAPSHOTS = sa.table("xstreams_snapshots", sa.column("data"))
# Bytes that only format 4 writes: each new kind's opening, and a release with its time (a
# "nack" whose count list is followed by a sixth item).
_FORMAT_4 = re.compile(r'\["policy",|\["retention",|\["webhook",|\["nack",[^\]]*\],\[[^\]]*\],-?\d')
# Snapshot formats format 3 records cannot come with.
_SNAPSHOT_FORMATS = (b'"format":5',)


def _set(value: str) -> None:
    op.execute(sa.update(_META).where(_META.c.key == "record_format").values(value=value))


def upgrade() -> None:
    _set("4")


def downgrade() -> None:
    conn = op.get_bind()
    for row in conn.execute(sa.select(_JOURNAL.c.records)):
        text = bytes(row[0]).decode("utf-8", "replace")
        if _FORMAT_4.search(text):
            raise RuntimeError(
                "the journal holds records of format 4 (a delivery policy, a retention, a"
                " webhook, or a release under a policy): format 3 cannot express them, so"
                " 0006 cannot be undone"
            )
    for row in conn.execute(sa.select(_SNAPSHOTS.c.data)):
        if any(tag in bytes(row[0]) for tag in _SNAPSHOT_FORMATS):
            raise RuntimeError(
                "a snapshot is format 5 (a group's delivery policy or webhooks, a retention):"
                " format 3 cannot express it, so 0006 cannot be undone"
            )
    _set("3")
