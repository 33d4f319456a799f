"""API keys may carry limits: ``xstreams keys create --rate 100/s``.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-29

A nullable column of JSON (``{"requests": "100/s:300"}``, app/access/rates.py); a key
without it is limited by the settings' defaults only. Downgrading drops the column and with
it every key's own limits, which an older xstreams could not enforce anyway.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("xstreams_api_keys") as batch:
        batch.add_column(sa.Column("limits_json", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("xstreams_api_keys") as batch:
        batch.drop_column("limits_json")
