"""The audit row keeps counts: how many documents a request named and chunks its answer had.

An audit row keeps only the first few ids of each (``service.usecases.audit``), so
the counts say how many there were. Rows written before this revision have no
counts (NULL); readers count the ids those rows kept.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("query_audit") as table:
        table.add_column(sa.Column("document_count", sa.Integer(), nullable=True))
        table.add_column(sa.Column("chunk_count", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("query_audit") as table:
        table.drop_column("chunk_count")
        table.drop_column("document_count")
