"""The settings database's ports: stores, the document catalog, access state, the audit trail.

Each is small and separate, so a consumer (and its fake) needs only the one it
uses; ``SettingsRepository`` is all four, as the SQL adapter provides them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from acl.model import Acl
from service.domain.history import HistoryEntry
from service.domain.store import DocumentRecord, Store

#: The scope of a membership that holds in every store (admin changes, a directory sync).
GLOBAL_SCOPE = ""
ADMIN_SOURCE = "admin"
MANIFEST_SOURCE = "manifest"


class StoreRepository(ABC):
    """Stores and their settings."""

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


class DocumentCatalog(ABC):
    """The documents of each store as indexed: title, source, content hash, text, ingested ACL."""

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


class AccessRepository(ABC):
    """Authoritative access state: effective ACLs, admin overrides, the group directory with provenance.

    It is the default ``PermissionSource`` (``acls``) and ``GroupDirectory``
    (``memberships``). Only ``service.access.state`` calls the methods that
    write ACL or membership rows.
    """

    @abstractmethod
    def acls(self, store_id: str, document_ids: Iterable[str]) -> Mapping[str, Acl]:
        """The effective ACL of each known document: the admin override if any, else the ingested one."""

    @abstractmethod
    def set_ingested_acl(self, store_id: str, document_id: str, acl: Acl) -> None:
        """Replace the ACL the document's source gave it; NotFound if the document is unknown."""

    @abstractmethod
    def acl_overrides(self, store_id: str, document_ids: Iterable[str]) -> Mapping[str, AclOverride]:
        """The admin override of each document that has one (whether the document exists or not)."""

    @abstractmethod
    def put_acl_override(self, store_id: str, document_id: str, override: AclOverride) -> None:
        """Make ``override`` the document's ACL until it is deleted; no re-index touches it."""

    @abstractmethod
    def delete_acl_override(self, store_id: str, document_id: str) -> bool:
        """Hand the document back to its source; False if it had no override."""

    @abstractmethod
    def mark_for_reindex(self, store_id: str, document_id: str) -> None:
        """Forget the document's indexed content hash, so the next run re-indexes it."""

    # the group directory -----------------------------------------------------------------------
    @abstractmethod
    def memberships(self, store_id: str | None = None) -> Mapping[str, frozenset[str]]:
        """Map every member to its groups: global rows, plus ``store_id``'s manifest rows, minus tombstones."""

    @abstractmethod
    def groups_of(self, members: Collection[str], store_id: str | None = None) -> Mapping[str, frozenset[str]]:
        """The direct groups of ``members`` only, by the same rule as ``memberships`` (a question's expansion)."""

    @abstractmethod
    def group_members(self, store_id: str | None = None) -> Mapping[str, frozenset[str]]:
        """Map every group to its direct members, by the same rule as ``memberships``."""

    @abstractmethod
    def membership_records(self) -> list[Membership]:
        """Every membership row with its provenance, tombstoned ones included."""

    @abstractmethod
    def tombstones(self) -> list[Tombstone]: ...

    @abstractmethod
    def add_admin_membership(self, membership: Membership) -> bool:
        """Lift any tombstone of the pair and add the admin row; False if it was already so."""

    @abstractmethod
    def tombstone_membership(self, tombstone: Tombstone) -> bool:
        """Record the tombstone and delete the pair's admin rows; False if the pair has no row at all."""

    @abstractmethod
    def release_membership(self, group: str, member: str) -> bool:
        """Delete the pair's tombstone and admin rows; False if there were none."""

    @abstractmethod
    def replace_memberships(self, groups: Mapping[str, Iterable[str]], *, scope: str, source: str) -> None:
        """Make ``groups`` the exact rows of (``scope``, ``source``), e.g. one store's manifest."""


class AuditLog(ABC):
    """The query audit trail (never a question or any text)."""

    @abstractmethod
    def record_audit(self, record: AuditRecord, history: Sequence[HistoryEntry] = ()) -> None:
        """Append one query's audit record, and keep ``history`` (its answer's entries in their users' history)
        in the same transaction: both are kept, or neither."""

    @abstractmethod
    def audit_records(
        self,
        user_id: str | None = None,
        limit: int = 100,
        since: datetime | None = None,
        before: datetime | None = None,
    ) -> list[AuditRecord]:
        """The newest records first; only ``user_id``'s when given, only those made at or after ``since``
        and before ``before`` when given."""


class SettingsRepository(StoreRepository, DocumentCatalog, AccessRepository, AuditLog, ABC):
    """Everything DocQA keeps in its SQL settings database: the four ports in one adapter.

    ``save_document`` records a document's ingested ACL too, so it is called
    only through ``service.access.state`` as well.
    """

    def store_for_reader(self, store_id: str, principals: frozenset[str]) -> Store | None:
        """The store when ``principals`` may read at least one of its documents now; None when it is unknown
        or they may read nothing of it, the same answer (a caller must not learn that such a store exists).

        Adapters answer it in the statement that reads the store; this default reads every ACL.
        """
        store = self.get_store(store_id)
        if store is None:
            return None
        acls = self.acls(store_id, [d.id for d in self.list_documents(store_id)])
        return store if any(acl.permits(principals) for acl in acls.values()) else None


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
    #: How many documents the request named and chunks the answer had; ``document_ids`` and
    #: ``chunk_ids`` keep only the first few of them. None on rows written before the counts were kept.
    document_count: int | None = None
    chunk_count: int | None = None

    def counts(self) -> tuple[int, int]:
        """Documents named and chunks returned (for an old row, the ids it kept)."""
        documents = len(self.document_ids) if self.document_count is None else self.document_count
        return documents, len(self.chunk_ids) if self.chunk_count is None else self.chunk_count


@dataclass(frozen=True, slots=True)
class AclOverride:
    """An administrator's ACL for one document: it wins over the source's until reset."""

    acl: Acl
    changed_by: str
    changed_at: datetime


@dataclass(frozen=True, slots=True)
class Membership:
    """One direct membership and where it came from.

    ``scope`` is ``GLOBAL_SCOPE`` for the global directory (admin changes, a
    directory sync) or the id of the store whose manifest defines it; ``source``
    is ``"admin"``, ``"manifest"`` or the name of a directory sync.
    """

    group: str
    member: str
    scope: str
    source: str
    changed_by: str | None = None
    changed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Tombstone:
    """An administrator's removal of (group, member): no manifest or sync row of the pair counts."""

    group: str
    member: str
    removed_by: str
    removed_at: datetime
