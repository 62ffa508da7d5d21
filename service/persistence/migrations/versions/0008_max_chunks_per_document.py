"""A store's ``max_chunks_per_document``: the most chunks of one document among a question's sources.

The column is NOT NULL with the server default 0 (no cap), so every existing
store keeps its behaviour.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("stores") as table:
        table.add_column(sa.Column("max_chunks_per_document", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("stores") as table:
        table.drop_column("max_chunks_per_document")
