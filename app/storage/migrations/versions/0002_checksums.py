"""A checksum on every journal row and snapshot, computed for the rows already stored.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23

The column is added nullable, filled with ``zlib.crc32`` of each row's stored bytes (the
same function the writer uses from now on), then made NOT NULL. Rows are read and updated in
chunks of keys, so a large journal is never held in memory at once.
"""

from __future__ import annotations

import zlib

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_CHUNK = 500
# (table, key column, data column)
_TABLES = (("xstreams_journal", "seq", "records"), ("xstreams_snapshots", "id", "data"))


def _fill(table: str, key: str, data: str) -> None:
    conn = op.get_bind()
    t = sa.table(table, sa.column(key), sa.column(data), sa.column("checksum"))
    keys = [row[0] for row in conn.execute(sa.select(t.c[key]).order_by(t.c[key]))]
    update = sa.update(t).where(t.c[key] == sa.bindparam("k")).values(checksum=sa.bindparam("crc"))
    for i in range(0, len(keys), _CHUNK):
        part = keys[i : i + _CHUNK]
        rows = conn.execute(sa.select(t.c[key], t.c[data]).where(t.c[key].in_(part)))
        values = [{"k": k, "crc": zlib.crc32(bytes(blob))} for k, blob in rows]
        if values:
            conn.execute(update, values)


def upgrade() -> None:
    for table, key, data in _TABLES:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("checksum", sa.BigInteger(), nullable=True))
        _fill(table, key, data)
        with op.batch_alter_table(table) as batch:
            batch.alter_column("checksum", existing_type=sa.BigInteger(), nullable=False)


def downgrade() -> None:
    for table, _, _ in _TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("checksum")
