"""The settings database as of issue 6: stores, documents, ACLs, the group directory, the query audit.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "stores",
        sa.Column("id", sa.String(63), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("embedding_model", sa.String(300), nullable=False),
        sa.Column("level", sa.Float(), nullable=False),
        sa.Column("min_threshold", sa.Float(), nullable=False),
        sa.Column("max_threshold", sa.Float(), nullable=False),
        sa.Column("max_chunks", sa.Integer(), nullable=False),
        sa.Column("llm_model_id", sa.String(300), nullable=False),
        sa.Column("prompt_template", sa.Text(), nullable=False),
    )
    op.create_table(
        "documents",
        sa.Column("store_id", sa.String(63), primary_key=True),
        sa.Column("id", sa.String(1000), primary_key=True),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("source_uri", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("origin", sa.Text(), nullable=False),
        sa.Column("chunk_count", sa.Integer(), nullable=False),
        sa.Column("indexed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["store_id"], ["stores.id"], ondelete="CASCADE"),
    )
    op.create_table(
        "document_acl",
        sa.Column("store_id", sa.String(63), primary_key=True),
        sa.Column("document_id", sa.String(1000), primary_key=True),
        sa.Column("principal", sa.String(210), primary_key=True),
        sa.Column("effect", sa.String(5), primary_key=True),
        sa.ForeignKeyConstraint(
            ["store_id", "document_id"], ["documents.store_id", "documents.id"], ondelete="CASCADE"
        ),
    )
    op.create_table(
        "group_members",
        sa.Column("group", sa.String(210), primary_key=True),
        sa.Column("member", sa.String(210), primary_key=True),
        sa.Column("origin", sa.String(300), primary_key=True),
    )
    op.create_table(
        "query_audit",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("query_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(210), nullable=False),
        sa.Column("store_id", sa.String(63), nullable=False),
        sa.Column("query_class", sa.String(32), nullable=False),
        sa.Column("document_ids", sa.Text(), nullable=False),
        sa.Column("chunk_ids", sa.Text(), nullable=False),
        sa.Column("threshold", sa.Float(), nullable=True),
        sa.Column("timings_ms", sa.Text(), nullable=False),
        sa.Column("outcome", sa.String(64), nullable=False),
        sa.Column("interface", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_query_audit_query_id", "query_audit", ["query_id"])
    op.create_index("ix_query_audit_user_id", "query_audit", ["user_id"])
    op.create_index("ix_query_audit_created_at", "query_audit", ["created_at"])


def downgrade() -> None:
    op.drop_table("query_audit")
    op.drop_table("group_members")
    op.drop_table("document_acl")
    op.drop_table("documents")
    op.drop_table("stores")
