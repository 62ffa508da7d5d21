"""SCIM 2.0 provisioning: ``scim_resources`` (each User and Group as its SCIM JSON), ``scim_state`` (the
generation every write raises, so that each replica reads the resources again) and ``scim_tokens`` (the SHA-256
of each bearer token an admin issued). The memberships SCIM groups state live in ``memberships`` (source
``scim``), as every other source's.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "scim_resources",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("resource_type", sa.String(32), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
    )
    op.create_table(
        "scim_state",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("generation", sa.Integer(), nullable=False),
    )
    op.create_table(
        "scim_tokens",
        sa.Column("token_sha256", sa.String(64), primary_key=True),
        sa.Column("created_by", sa.String(300), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("scim_tokens")
    op.drop_table("scim_state")
    op.drop_table("scim_resources")
