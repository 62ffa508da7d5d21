"""A store's retrieval settings: the fusion method, the lexical weight and the link base URL.

All three columns are nullable: a store made before this revision reads NULL
as the configured default (``store_defaults.fusion`` / ``lexical_weight``) and
as no base URL, so upgrading changes no store's behaviour.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("stores") as table:
        table.add_column(sa.Column("fusion", sa.String(length=16), nullable=True))
        table.add_column(sa.Column("lexical_weight", sa.Float(), nullable=True))
        table.add_column(sa.Column("source_base_url", sa.String(length=2000), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("stores") as table:
        table.drop_column("source_base_url")
        table.drop_column("lexical_weight")
        table.drop_column("fusion")
