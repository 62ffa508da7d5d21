"""Access state with provenance: admin ACL overrides, memberships scoped to a store's manifest, tombstones.

Existing memberships keep their meaning: an ``admin`` row becomes a global
admin row, a ``manifest:<store>:<path>`` row becomes a manifest row of that
store (it no longer grants anything in other stores), any other origin (a
directory sync) stays global under its own name. Existing document ACLs stay
the documents' ingested ACLs; no override exists yet.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None

_MANIFEST_PREFIX = "manifest:"


def _scope_and_source(origin: str) -> tuple[str, str]:
    if origin == "admin":
        return "", "admin"
    if origin.startswith(_MANIFEST_PREFIX):
        store = origin[len(_MANIFEST_PREFIX) :].split(":", 1)[0]
        return store, "manifest"
    return "", origin


def upgrade() -> None:
    op.create_table(
        "acl_overrides",
        sa.Column("store_id", sa.String(63), primary_key=True),
        sa.Column("document_id", sa.String(1000), primary_key=True),
        sa.Column("changed_by", sa.String(300), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["store_id"], ["stores.id"], ondelete="CASCADE"),
    )
    op.create_table(
        "acl_override_entries",
        sa.Column("store_id", sa.String(63), primary_key=True),
        sa.Column("document_id", sa.String(1000), primary_key=True),
        sa.Column("principal", sa.String(210), primary_key=True),
        sa.Column("effect", sa.String(5), primary_key=True),
        sa.ForeignKeyConstraint(
            ["store_id", "document_id"],
            ["acl_overrides.store_id", "acl_overrides.document_id"],
            ondelete="CASCADE",
        ),
    )
    memberships = op.create_table(
        "memberships",
        sa.Column("group", sa.String(210), primary_key=True),
        sa.Column("member", sa.String(210), primary_key=True),
        sa.Column("scope", sa.String(63), primary_key=True),
        sa.Column("source", sa.String(300), primary_key=True),
        sa.Column("changed_by", sa.String(300), nullable=True),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_table(
        "membership_tombstones",
        sa.Column("group", sa.String(210), primary_key=True),
        sa.Column("member", sa.String(210), primary_key=True),
        sa.Column("removed_by", sa.String(300), nullable=False),
        sa.Column("removed_at", sa.DateTime(timezone=True), nullable=False),
    )
    old = sa.table(
        "group_members", sa.column("group", sa.String), sa.column("member", sa.String), sa.column("origin", sa.String)
    )
    connection = op.get_bind()
    rows: dict[tuple[str, str, str, str], dict[str, str | None]] = {}
    for group, member, origin in connection.execute(sa.select(old.c.group, old.c.member, old.c.origin)):
        scope, source = _scope_and_source(origin)
        rows[(group, member, scope, source)] = {
            "group": group,
            "member": member,
            "scope": scope,
            "source": source,
            "changed_by": "migration 0002" if source == "admin" else None,
            "changed_at": None,
        }
    if rows:
        op.bulk_insert(memberships, list(rows.values()))
    op.drop_table("group_members")


def downgrade() -> None:
    group_members = op.create_table(
        "group_members",
        sa.Column("group", sa.String(210), primary_key=True),
        sa.Column("member", sa.String(210), primary_key=True),
        sa.Column("origin", sa.String(300), primary_key=True),
    )
    new = sa.table(
        "memberships",
        sa.column("group", sa.String),
        sa.column("member", sa.String),
        sa.column("scope", sa.String),
        sa.column("source", sa.String),
    )
    connection = op.get_bind()
    rows: dict[tuple[str, str, str], dict[str, str]] = {}
    for group, member, scope, source in connection.execute(
        sa.select(new.c.group, new.c.member, new.c.scope, new.c.source)
    ):
        origin = f"manifest:{scope}:" if source == "manifest" else source
        rows[(group, member, origin)] = {"group": group, "member": member, "origin": origin}
    if rows:
        op.bulk_insert(group_members, list(rows.values()))
    # Tombstones and overrides have no place in 0001: the admin's decisions are lost on downgrade.
    op.drop_table("membership_tombstones")
    op.drop_table("memberships")
    op.drop_table("acl_override_entries")
    op.drop_table("acl_overrides")
