"""History bound to what it cited: ``query_history.versions``.

A JSON object (document id -> the catalog's content hash) of every document an answer draws on, as it was
quoted. Rows kept before this revision get NULL: their versions are unknown, so they are never current and
their answers are withheld from everyone but their askers (``service.domain.history.shown``).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("query_history") as batch:
        batch.add_column(sa.Column("versions", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("query_history") as batch:
        batch.drop_column("versions")
