"""How the settings database reads access in one statement: a document's effective ACL rows, and "may these
principals read it" as SQL, so that callers fold it into the statement they run anyway."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BindParameter, ColumnElement, Subquery, and_, exists, literal_column, or_, select, union_all

from service.persistence.sql_access import AclOverrideEntryRow, AclOverrideRow, AclRow

#: ``acl_entries``'s ``origin`` of an admin override's entries (the others are the source's).
OVERRIDE_ORIGIN = "override"


def acl_entries(store_id: str | BindParameter[str], document_ids: list[str] | BindParameter[Any]) -> Subquery:
    """The ingested ACL rows and the admin overrides' entries of these documents, as one row set
    (``document_id, principal, effect, origin``): read in the same statement whether or not an override
    exists, so a document's ACL costs the same whoever set it. Values or bound parameters (``document_ids``:
    an expanding one), for a statement built once."""
    # Inline text literals: a bound parameter in a UNION's select list has no type Postgres can infer.
    origin: ColumnElement[str] = literal_column("'source'").label("origin")
    ingested = select(AclRow.document_id, AclRow.principal, AclRow.effect, origin).where(
        AclRow.store_id == store_id, AclRow.document_id.in_(document_ids)
    )
    overridden: ColumnElement[str] = literal_column(f"'{OVERRIDE_ORIGIN}'").label("origin")
    overriding = select(
        AclOverrideEntryRow.document_id, AclOverrideEntryRow.principal, AclOverrideEntryRow.effect, overridden
    ).where(AclOverrideEntryRow.store_id == store_id, AclOverrideEntryRow.document_id.in_(document_ids))
    return union_all(ingested, overriding).subquery("acl_entries")


def readable_document(
    store_id: Any, document_id: Any, principals: frozenset[str] | BindParameter[Any]
) -> ColumnElement[bool]:
    """SQL for "``principals`` may read the document ``(store_id, document_id)``" (columns of the caller's
    statement): its admin override's entries when it has one, else its source's ACL; deny wins. ``principals``:
    a set, or an expanding bound parameter for a statement built once."""
    wanted = principals if isinstance(principals, BindParameter) else sorted(principals)

    def meets(table: type[AclRow] | type[AclOverrideEntryRow], effect: str) -> ColumnElement[bool]:
        return exists().where(
            table.store_id == store_id,
            table.document_id == document_id,
            table.effect == effect,
            table.principal.in_(wanted),
        )

    overridden = exists().where(AclOverrideRow.store_id == store_id, AclOverrideRow.document_id == document_id)
    return or_(
        and_(overridden, meets(AclOverrideEntryRow, "allow"), ~meets(AclOverrideEntryRow, "deny")),
        and_(~overridden, meets(AclRow, "allow"), ~meets(AclRow, "deny")),
    )
