"""The settings repository port: stores, documents, authoritative ACLs, groups."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from acl.model import Acl
from service.domain import DocumentRecord, Store

ADMIN_ORIGIN = "admin"


class SettingsRepository(ABC):
    """Everything DocQA keeps in its SQL settings database.

    It is also the default authoritative ``PermissionSource`` (``acls``) and
    ``GroupDirectory`` (``memberships``).
    """

    # stores -----------------------------------------------------------------
    @abstractmethod
    def get_store(self, store_id: str) -> Store | None: ...

    @abstractmethod
    def list_stores(self) -> list[Store]: ...

    @abstractmethod
    def create_store(self, store: Store) -> Store:
        """Create ``store``; InvalidArgument if the id is taken."""

    @abstractmethod
    def update_store(self, store_id: str, **changes: Any) -> Store:
        """Change settings of a store; NotFound if unknown."""

    # documents --------------------------------------------------------------
    @abstractmethod
    def get_document(self, store_id: str, document_id: str) -> DocumentRecord | None: ...

    @abstractmethod
    def list_documents(self, store_id: str, origin: str | None = None) -> list[DocumentRecord]:
        """Documents of a store (without their text), optionally of one origin."""

    @abstractmethod
    def document_count(self, store_id: str) -> int: ...

    @abstractmethod
    def save_document(self, document: DocumentRecord) -> None:
        """Insert or replace a document and its ACL, marking it indexed now."""

    @abstractmethod
    def delete_document(self, store_id: str, document_id: str) -> bool:
        """Remove a document and its ACL; False if it did not exist."""

    # the authoritative ACL ----------------------------------------------------
    @abstractmethod
    def acls(self, store_id: str, document_ids: Iterable[str]) -> Mapping[str, Acl]: ...

    @abstractmethod
    def set_acl(self, store_id: str, document_id: str, acl: Acl) -> None:
        """Replace a document's ACL; NotFound if the document is unknown."""

    @abstractmethod
    def mark_for_reindex(self, store_id: str, document_id: str) -> None:
        """Forget the document's indexed content hash, so the next run re-indexes it."""

    # the group directory ---------------------------------------------------------
    @abstractmethod
    def memberships(self) -> Mapping[str, frozenset[str]]: ...

    @abstractmethod
    def group_members(self) -> Mapping[str, frozenset[str]]:
        """Map every group to its direct members."""

    @abstractmethod
    def add_member(self, group: str, member: str, origin: str = ADMIN_ORIGIN) -> bool:
        """Add a direct membership; False if it was already there."""

    @abstractmethod
    def remove_member(self, group: str, member: str) -> bool:
        """Remove a direct membership whatever its origin; False if absent."""

    @abstractmethod
    def replace_groups(self, groups: Mapping[str, Iterable[str]], origin: str) -> None:
        """Make ``groups`` the exact memberships of ``origin`` (e.g. one manifest)."""

    # the query audit trail --------------------------------------------------------
    @abstractmethod
    def record_audit(self, record: AuditRecord) -> None:
        """Append one query's audit record."""

    @abstractmethod
    def audit_records(self, user_id: str | None = None, limit: int = 100) -> list[AuditRecord]:
        """The newest records first; only ``user_id``'s when given."""


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """What the audit table keeps about one query (never the question or any text)."""

    query_id: str
    user_id: str
    store_id: str
    query_class: str
    document_ids: tuple[str, ...]
    chunk_ids: tuple[str, ...]
    threshold: float | None
    timings_ms: Mapping[str, float]
    outcome: str
    interface: str
    created_at: datetime
