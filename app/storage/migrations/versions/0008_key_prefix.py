"""API keys may be bound to a tenant prefix: ``xstreams keys create --prefix tenant-a:``.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-29

A nullable column of its own, not a member of ``grant_json`` or ``limits_json``: the prefix is
neither a verb nor a limit but the namespace both apply in (app/access/prefix.py), one plain
string. An older xstreams meets a revision it does not know and refuses the database, rather
than loading such a key without its prefix. Downgrading revokes every key with a prefix
before dropping the column: without it they would reach names outside their tenant.
"""

from __future__ import annotations

import time

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("xstreams_api_keys") as batch:
        batch.add_column(sa.Column("prefix", sa.String(200), nullable=True))


def downgrade() -> None:
    keys = sa.table(
        "xstreams_api_keys",
        sa.column("prefix", sa.String),
        sa.column("revoked_at_ms", sa.BigInteger),
    )
    op.execute(
        keys.update()
        .where(keys.c.prefix.is_not(None), keys.c.revoked_at_ms.is_(None))
        .values(revoked_at_ms=time.time_ns() // 1_000_000)
    )
    with op.batch_alter_table("xstreams_api_keys") as batch:
        batch.drop_column("prefix")
