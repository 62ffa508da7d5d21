"""The access-state tables of the SQL settings repository: ingested ACLs and admin overrides (the directory's
tables, memberships and tombstones, are ``sql_memberships``'s).

``SqlAccessRows`` is mixed into ``SqlSettingsRepository``; the rules that decide
*when* these rows change live in ``service.access.state``, the only caller of the
writing methods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from sqlalchemy import DateTime, ForeignKeyConstraint, String, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from acl.model import Acl
from service.persistence.ports import AclOverride
from service.persistence.sql_base import Base
from service.persistence.sql_memberships import SqlMembershipRows, _utc

_BATCH = 500  # ids per IN (...) clause


class AclRow(Base):
    """The ACL the document's source (its store's manifest, or an API push) gave it."""

    __tablename__ = "document_acl"
    store_id: Mapped[str] = mapped_column(String(63), primary_key=True)
    document_id: Mapped[str] = mapped_column(String(1000), primary_key=True)
    principal: Mapped[str] = mapped_column(String(210), primary_key=True)
    effect: Mapped[str] = mapped_column(String(5), primary_key=True)  # allow | deny
    __table_args__ = (
        ForeignKeyConstraint(["store_id", "document_id"], ["documents.store_id", "documents.id"], ondelete="CASCADE"),
    )


class AclOverrideRow(Base):
    """An admin's ACL for a document. No FK to the document: it outlives a removal and re-adding."""

    __tablename__ = "acl_overrides"
    store_id: Mapped[str] = mapped_column(String(63), primary_key=True)
    document_id: Mapped[str] = mapped_column(String(1000), primary_key=True)
    changed_by: Mapped[str] = mapped_column(String(300))
    changed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    __table_args__ = (ForeignKeyConstraint(["store_id"], ["stores.id"], ondelete="CASCADE"),)


class AclOverrideEntryRow(Base):
    __tablename__ = "acl_override_entries"
    store_id: Mapped[str] = mapped_column(String(63), primary_key=True)
    document_id: Mapped[str] = mapped_column(String(1000), primary_key=True)
    principal: Mapped[str] = mapped_column(String(210), primary_key=True)
    effect: Mapped[str] = mapped_column(String(5), primary_key=True)  # allow | deny
    __table_args__ = (
        ForeignKeyConstraint(
            ["store_id", "document_id"], ["acl_overrides.store_id", "acl_overrides.document_id"], ondelete="CASCADE"
        ),
    )


def read_acls(
    s: Session, store_id: str, document_ids: list[str], table: type[AclRow] | type[AclOverrideEntryRow]
) -> dict[str, Acl]:
    """The ACL rows of ``table`` for these documents (documents without a row are absent)."""
    allow: dict[str, set[str]] = {}
    deny: dict[str, set[str]] = {}
    seen: set[str] = set()
    for i in range(0, len(document_ids), _BATCH):
        batch = document_ids[i : i + _BATCH]
        rows = s.execute(
            select(table.document_id, table.principal, table.effect).where(
                table.store_id == store_id, table.document_id.in_(batch)
            )
        )
        for document_id, principal, effect in rows:
            seen.add(document_id)
            (allow if effect == "allow" else deny).setdefault(document_id, set()).add(principal)
    return {d: Acl(frozenset(allow.get(d, ())), frozenset(deny.get(d, ()))) for d in seen}


def write_ingested_acl(s: Session, store_id: str, document_id: str, acl: Acl) -> None:
    s.execute(delete(AclRow).where(AclRow.store_id == store_id, AclRow.document_id == document_id))
    s.add_all(
        [AclRow(store_id=store_id, document_id=document_id, principal=p, effect="allow") for p in acl.allow]
        + [AclRow(store_id=store_id, document_id=document_id, principal=p, effect="deny") for p in acl.deny]
    )


class SqlAccessRows(SqlMembershipRows):
    """The access-state half of ``SqlSettingsRepository`` (which provides ``_session``): ACLs here, the
    directory's rows in ``SqlMembershipRows``."""

    # ACLs --------------------------------------------------------------------------------
    def _overrides(self, s: Session, store_id: str, document_ids: list[str]) -> dict[str, AclOverride]:
        headers: dict[str, AclOverrideRow] = {}
        for i in range(0, len(document_ids), _BATCH):
            batch = document_ids[i : i + _BATCH]
            query = select(AclOverrideRow).where(
                AclOverrideRow.store_id == store_id, AclOverrideRow.document_id.in_(batch)
            )
            headers.update({row.document_id: row for row in s.scalars(query)})
        entries = read_acls(s, store_id, list(headers), AclOverrideEntryRow)
        return {
            d: AclOverride(entries.get(d, Acl()), row.changed_by, _utc(row.changed_at)) for d, row in headers.items()
        }

    def acl_overrides(self, store_id: str, document_ids: Iterable[str]) -> Mapping[str, AclOverride]:
        with self._session() as s:
            return self._overrides(s, store_id, list(document_ids))

    def put_acl_override(self, store_id: str, document_id: str, override: AclOverride) -> None:
        with self._session() as s:
            s.execute(
                delete(AclOverrideRow).where(
                    AclOverrideRow.store_id == store_id, AclOverrideRow.document_id == document_id
                )
            )
            s.execute(
                delete(AclOverrideEntryRow).where(
                    AclOverrideEntryRow.store_id == store_id, AclOverrideEntryRow.document_id == document_id
                )
            )
            s.add(
                AclOverrideRow(
                    store_id=store_id,
                    document_id=document_id,
                    changed_by=override.changed_by,
                    changed_at=override.changed_at,
                )
            )
            s.flush()
            acl = override.acl
            s.add_all(
                [
                    AclOverrideEntryRow(store_id=store_id, document_id=document_id, principal=p, effect="allow")
                    for p in acl.allow
                ]
                + [
                    AclOverrideEntryRow(store_id=store_id, document_id=document_id, principal=p, effect="deny")
                    for p in acl.deny
                ]
            )

    def delete_acl_override(self, store_id: str, document_id: str) -> bool:
        with self._session() as s:
            s.execute(
                delete(AclOverrideEntryRow).where(
                    AclOverrideEntryRow.store_id == store_id, AclOverrideEntryRow.document_id == document_id
                )
            )
            result = s.execute(
                delete(AclOverrideRow).where(
                    AclOverrideRow.store_id == store_id, AclOverrideRow.document_id == document_id
                )
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]
