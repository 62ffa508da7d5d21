"""Users' query history and ratings: ``query_history`` and ``query_feedback``.

One row per answered query (question, question searched, answer, cited chunk ids and scores, level, store,
class, conversation, user, time) and at most one rating per query, removed with its query. The indexes serve
keyset pages: a user's history newest first, a conversation's turns, a store's ratings newest first, and
the retention purge by age.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "query_history",
        sa.Column("query_id", sa.String(length=64), primary_key=True),
        sa.Column("user_id", sa.String(length=210), nullable=False),
        sa.Column("store_id", sa.String(length=63), nullable=False),
        sa.Column("query_class", sa.String(length=32), nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("rewritten_question", sa.Text(), nullable=True),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("sources", sa.Text(), nullable=False),
        sa.Column("quoted_documents", sa.Text(), nullable=False, server_default="[]"),
        sa.Column("level", sa.Float(), nullable=True),
        sa.Column("threshold", sa.Float(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_query_history_user_newest", "query_history", ["user_id", "created_at", "query_id"])
    op.create_index("ix_query_history_conversation", "query_history", ["conversation_id", "created_at", "query_id"])
    op.create_index("ix_query_history_created", "query_history", ["created_at"])
    op.create_table(
        "query_feedback",
        sa.Column(
            "query_id",
            sa.String(length=64),
            sa.ForeignKey("query_history.query_id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("user_id", sa.String(length=210), nullable=False),
        sa.Column("store_id", sa.String(length=63), nullable=False),
        sa.Column("rating", sa.String(length=8), nullable=False),
        sa.Column("comment", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_query_feedback_store_newest", "query_feedback", ["store_id", "created_at", "query_id"])


def downgrade() -> None:
    op.drop_index("ix_query_feedback_store_newest", table_name="query_feedback")
    op.drop_table("query_feedback")
    op.drop_index("ix_query_history_created", table_name="query_history")
    op.drop_index("ix_query_history_conversation", table_name="query_history")
    op.drop_index("ix_query_history_user_newest", table_name="query_history")
    op.drop_table("query_history")
