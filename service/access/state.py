"""The one writer of ACLs and group memberships, with provenance (admin and ingest both call it).

Rules it keeps:

- A document's *ingested* ACL is what its source gave it: its store's manifest
  (folder runs) or a content system's push (the gRPC indexing API). An admin
  ACL is an *override* (who, when) that wins over the ingested one and that no
  re-index touches, until ``reset_acl`` hands the document back to its source.
  An override outlives the document's removal: if the same id comes back, the
  admin's ACL is still the one in force.
- A manifest's groups are scoped to its store: they count only for queries on
  that store. The global directory changes only by an admin (or a directory sync).
- An admin's removal of (group, member) is a *tombstone*: no manifest row of the
  pair counts, in any store, and no re-index brings it back, until
  ``reset_member`` hands the pair back to the manifests (or an admin adds it).
- The index copy of a document's ACL follows the effective ACL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from acl.errors import DocQAError, NotFound
from acl.model import Acl, validate_principal
from indexer.documents import DocumentRecord
from indexer.errors import IndexUnavailable
from service.persistence.ports import (
    ADMIN_SOURCE,
    GLOBAL_SCOPE,
    MANIFEST_SOURCE,
    AclOverride,
    Membership,
    SettingsRepository,
    Tombstone,
)

if TYPE_CHECKING:
    from indexer.index import Index

Clock = Callable[[], datetime]


def _now() -> datetime:
    return datetime.now(UTC)


def ingest_source(origin: str) -> str:
    """Where a document's ingested ACL came from: ``manifest`` for folder runs, else the origin (``api``)."""
    return MANIFEST_SOURCE if origin.startswith("folder:") else origin


@dataclass(frozen=True, slots=True)
class AclView:
    """A document's effective ACL, where it came from, and its source's value."""

    store_id: str
    document_id: str
    effective: Acl
    source: str  # "admin", or the ingest source: "manifest" | "api"
    changed_by: str | None
    changed_at: datetime | None
    ingested: Acl | None  # None: the document is not (or no longer) in the store
    ingested_source: str

    def to_dict(self) -> dict[str, Any]:
        """JSON for the CLI and logs: the effective ACL first; the source's value when it differs."""
        out: dict[str, Any] = {
            "store": self.store_id,
            "document_id": self.document_id,
            **self.effective.to_dict(),
            "source": self.source,
        }
        if self.source == ADMIN_SOURCE:
            out["changed_by"] = self.changed_by
            out["changed_at"] = None if self.changed_at is None else self.changed_at.isoformat()
            if self.ingested != self.effective:
                out[self.ingested_source] = None if self.ingested is None else self.ingested.to_dict()
        return out


@dataclass(frozen=True, slots=True)
class MembershipView:
    """One (group, member) pair: every row that states it, and the admin's tombstone if any."""

    group: str
    member: str
    rows: tuple[Membership, ...]
    tombstone: Tombstone | None


class AccessState:
    """Owns ACLs and memberships: the admin entry points and the indexer's ``AccessRecorder``."""

    def __init__(self, repository: SettingsRepository, index: Index | None = None, clock: Clock = _now) -> None:
        self._repo = repository
        self._index = index
        self._clock = clock

    # ingest: indexer.ingest.pipeline.AccessRecorder -------------------------------------------------
    def record_document(self, document: DocumentRecord) -> None:
        """Save an indexed document with the ACL its source gave it (an admin override stays in force)."""
        self._repo.save_document(document)

    def record_ingested_acl(self, store_id: str, document_id: str, acl: Acl) -> Acl:
        """Record the source's new ACL of a document; return the effective ACL (the index copy's)."""
        self._repo.set_ingested_acl(store_id, document_id, acl)
        return self.effective_acls(store_id, {document_id: acl})[document_id]

    def effective_acls(self, store_id: str, ingested: Mapping[str, Acl]) -> dict[str, Acl]:
        """The ACL each document will have in force, given the ACL its source gives it."""
        overrides = self._repo.acl_overrides(store_id, list(ingested))
        return {d: overrides[d].acl if d in overrides else acl for d, acl in ingested.items()}

    def replace_manifest_groups(self, store_id: str, groups: Mapping[str, Iterable[str]]) -> None:
        """Make ``groups`` the manifest memberships of ``store_id`` (they count in that store only)."""
        self._repo.replace_memberships(groups, scope=store_id, source=MANIFEST_SOURCE)

    # admin: ACLs ----------------------------------------------------------------------------
    def acl_view(self, store_id: str, document_id: str) -> AclView:
        """The document's effective ACL and its provenance; NotFound if neither a document nor an override."""
        document = self._repo.get_document(store_id, document_id)
        override = self._repo.acl_overrides(store_id, [document_id]).get(document_id)
        if document is None and override is None:
            raise NotFound(f"document {document_id!r} not found in store {store_id!r}")
        source = ingest_source(document.origin) if document is not None else MANIFEST_SOURCE
        ingested = document.acl if document is not None else None
        if override is not None:
            return AclView(
                store_id,
                document_id,
                override.acl,
                ADMIN_SOURCE,
                override.changed_by,
                override.changed_at,
                ingested,
                source,
            )
        if ingested is None:  # pragma: no cover - ruled out above
            raise NotFound(f"document {document_id!r} not found in store {store_id!r}")
        return AclView(store_id, document_id, ingested, source, None, None, ingested, source)

    def override_acl(self, store_id: str, document_id: str, acl: Acl, actor: str) -> AclView:
        """Make ``acl`` the document's ACL, recorded as ``actor``'s, until ``reset_acl``."""
        if self._repo.get_document(store_id, document_id) is None:
            raise NotFound(f"document {document_id!r} not found in store {store_id!r}")
        self._repo.put_acl_override(store_id, document_id, AclOverride(acl, actor, self._clock()))
        self._sync_index(store_id, document_id, acl)
        return self.acl_view(store_id, document_id)

    def reset_acl(self, store_id: str, document_id: str) -> AclView:
        """Drop the admin override: the source's ACL is in force again (at once, and in the index)."""
        view = self.acl_view(store_id, document_id)
        if not self._repo.delete_acl_override(store_id, document_id):
            return view  # already the source's: nothing to hand back
        if view.ingested is None:  # the document is gone: nothing is readable, nothing to re-index
            return AclView(store_id, document_id, Acl(), view.ingested_source, None, None, None, view.ingested_source)
        self._sync_index(store_id, document_id, view.ingested)
        return self.acl_view(store_id, document_id)

    def _sync_index(self, store_id: str, document_id: str, acl: Acl) -> None:
        if self._index is None:
            # Fail closed on the index side too: the next run re-indexes with the effective ACL.
            self._repo.mark_for_reindex(store_id, document_id)
            return
        try:
            self._index.set_document_acl(store_id, document_id, acl)
        except DocQAError as exc:
            # The authoritative ACL is in force already; the index copy is refreshed on the next run.
            self._repo.mark_for_reindex(store_id, document_id)
            raise IndexUnavailable(
                f"the ACL of {document_id!r} is saved and in force, but the index copy could not be "
                f"updated ({exc.message}); index the document again to refresh it"
            ) from None

    # admin: memberships ------------------------------------------------------------------------
    def add_member(self, group: str, member: str, actor: str) -> bool:
        """A global admin membership (lifting any tombstone of the pair); False if already so."""
        validate_principal(member)
        return self._repo.add_admin_membership(
            Membership(group, member, GLOBAL_SCOPE, ADMIN_SOURCE, actor, self._clock())
        )

    def remove_member(self, group: str, member: str, actor: str) -> None:
        """Tombstone the pair: out of every store's manifest and the global directory until reset."""
        validate_principal(group)
        validate_principal(member)
        if not self._repo.tombstone_membership(Tombstone(group, member, actor, self._clock())):
            raise NotFound(f"{member} is not a direct member of {group}")

    def reset_member(self, group: str, member: str) -> None:
        """Drop the admin's decisions about the pair (tombstone, admin row): the manifests decide again."""
        validate_principal(group)
        validate_principal(member)
        if not self._repo.release_membership(group, member):
            raise NotFound(f"no admin change of {member} in {group} to reset")

    def membership_views(self) -> list[MembershipView]:
        """Every pair that has a row or a tombstone, with its provenance."""
        rows: dict[tuple[str, str], list[Membership]] = {}
        for row in self._repo.membership_records():
            rows.setdefault((row.group, row.member), []).append(row)
        tombstones = {(t.group, t.member): t for t in self._repo.tombstones()}
        return [
            MembershipView(g, m, tuple(rows.get((g, m), ())), tombstones.get((g, m)))
            for g, m in sorted(set(rows) | set(tombstones))
        ]
