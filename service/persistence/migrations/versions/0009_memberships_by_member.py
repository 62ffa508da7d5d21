"""An index of ``memberships`` by member: a question reads only its caller's groups (and theirs).

Before, every question read the whole membership table to expand one caller's
principals: 8 ms per question at 1,000 users in 150 groups, 513 ms at 50,000
(bench/principals.py).
The expansion now asks for one level of nesting at a time by member, which
this index answers without a scan.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_index("ix_memberships_member", "memberships", ["member", "scope"])


def downgrade() -> None:
    op.drop_index("ix_memberships_member", table_name="memberships")
