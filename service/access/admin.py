"""Administrator operations: stores and their settings, groups, authoritative ACLs."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from acl.errors import InvalidArgument, NotFound
from acl.model import Acl
from service.access.state import AccessState, AclView, MembershipView
from service.config import StoreDefaults
from service.domain.calibration_report import CalibrationReport
from service.domain.store import STORE_SETTINGS, Store, store_setting, validate_store_id
from service.domain.store_settings import validate_store_name
from service.domain.threshold import Threshold
from service.persistence.ports import AuditRecord, SettingsRepository

if TYPE_CHECKING:
    from indexer.index import Index

log = logging.getLogger("docqa.admin")
#: The audit trail's class of a calibrated scale applied to a store.
CALIBRATION_AUDIT_CLASS = "calibrate"


class Admin:
    """What an administrator may change; every change is validated before it is made."""

    def __init__(self, repository: SettingsRepository, index: Index | None = None) -> None:
        self._repo = repository
        self._access = AccessState(repository, index)

    # stores -------------------------------------------------------------------------
    def store(self, store_id: str) -> Store:
        store = self._repo.get_store(store_id)
        if store is None:
            raise NotFound(f"store {store_id!r} not found")
        return store

    def ensure_store(self, store_id: str, embedding_model: str, defaults: StoreDefaults) -> Store:
        """The store, created with ``defaults`` if new; its model must match."""
        validate_store_id(store_id)
        store = self._repo.get_store(store_id)
        if store is None:
            try:
                return self._create_store(store_id, embedding_model, defaults)
            except InvalidArgument:
                # Another process (a second indexing shard) created it meanwhile: use that one.
                store = self._repo.get_store(store_id)
                if store is None:
                    raise
        if store.embedding_model != embedding_model:
            raise InvalidArgument(
                f"store {store_id!r} was indexed with embedding model {store.embedding_model!r}, "
                f"but the configured model is {embedding_model!r}"
            )
        return store

    def _create_store(self, store_id: str, embedding_model: str, defaults: StoreDefaults) -> Store:
        # The configured default of each setting store_defaults names; the declared default of the others.
        named = type(defaults).model_fields
        configured = {s.name: getattr(defaults, s.name) for s in STORE_SETTINGS if s.name in named}
        return self._repo.create_store(Store(id=store_id, name=store_id, embedding_model=embedding_model, **configured))

    def update_settings(self, store_id: str, **changes: Any) -> Store:
        """Validate and apply setting changes (None values are ignored; ``source_base_url=""`` removes the URL)."""
        store = self.store(store_id)
        clean: dict[str, Any] = {}
        for key, value in changes.items():
            if value is None:
                continue
            declared = store_setting(key)
            if key == "name":
                clean[key] = validate_store_name(value)
            elif declared is None:
                raise InvalidArgument(f"unknown store setting {key!r}")
            else:
                clean[key] = declared.validate(value)  # an optional setting's "" clears it (None)
        Threshold(
            clean.get("min_threshold", store.min_threshold),
            clean.get("max_threshold", store.max_threshold),
        )
        if not clean:
            return store
        return self._repo.update_store(store_id, **clean)

    def apply_calibration(self, report: CalibrationReport, user_id: str, interface: str) -> Store:
        """Store the report's proposed min/max thresholds; the audit trail records who applied them, and when."""
        before = self.store(report.store_id)
        store = self.update_settings(
            report.store_id, min_threshold=report.proposed.minimum, max_threshold=report.proposed.maximum
        )
        self._repo.record_audit(
            AuditRecord(
                query_id=str(uuid.uuid4()),
                user_id=user_id,
                store_id=store.id,
                query_class=CALIBRATION_AUDIT_CLASS,
                document_ids=(),
                chunk_ids=(),
                threshold=Threshold(store.min_threshold, store.max_threshold).score_for(store.level),
                timings_ms={},
                outcome="OK",
                interface=interface,
                created_at=datetime.now(UTC),
                document_count=report.documents_sampled,
                chunk_count=0,
            )
        )
        log.info(
            "store %s: %s applied a calibrated scale over %s: min_threshold %.4f -> %.4f, max_threshold %.4f -> %.4f",
            store.id,
            user_id,
            interface,
            before.min_threshold,
            store.min_threshold,
            before.max_threshold,
            store.max_threshold,
        )
        return store

    # groups (through the one writer of access state) ---------------------------------------
    def add_member(self, group: str, member: str, actor: str) -> bool:
        """A global membership by ``actor`` (lifts an earlier removal of the pair)."""
        return self._access.add_member(group, member, actor)

    def remove_member(self, group: str, member: str, actor: str) -> bool:
        """A durable removal: a tombstone no manifest or re-index undoes, until ``reset_member``."""
        self._access.remove_member(group, member, actor)
        return True

    def reset_member(self, group: str, member: str) -> None:
        """Hand the pair back to the manifests (drop the admin's tombstone or membership)."""
        self._access.reset_member(group, member)

    def membership_views(self) -> list[MembershipView]:
        return self._access.membership_views()

    # ACLs ---------------------------------------------------------------------------------
    def find_document_store(self, document_id: str, store_id: str | None) -> str:
        """The store holding ``document_id`` (given, or the only one that has it)."""
        if store_id is not None:
            self.store(store_id)
            if self._repo.get_document(store_id, document_id) is None:
                raise NotFound(f"document {document_id!r} not found in store {store_id!r}")
            return store_id
        holders = [s.id for s in self._repo.list_stores() if self._repo.get_document(s.id, document_id)]
        if not holders:
            raise NotFound(f"document {document_id!r} not found")
        if len(holders) > 1:
            raise InvalidArgument(
                f"document {document_id!r} is in several stores ({', '.join(holders)}): name one with --store"
            )
        return holders[0]

    def set_acl(
        self, document_id: str, allow: Iterable[str], deny: Iterable[str], actor: str, store_id: str | None = None
    ) -> AclView:
        """Replace the document's whole ACL by an admin override (in force at once, kept over every re-index)."""
        acl = Acl.of(allow, deny)
        store = self.find_document_store(document_id, store_id)
        return self._access.override_acl(store, document_id, acl, actor)

    def reset_acl(self, document_id: str, store_id: str | None = None) -> AclView:
        """Drop the admin override: the manifest's (or the push's) ACL is in force again.

        With ``store_id`` this also resets the override of a document that has left the store.
        """
        store = self.store(store_id).id if store_id is not None else self.find_document_store(document_id, None)
        return self._access.reset_acl(store, document_id)

    def acl_view(self, document_id: str, store_id: str | None = None) -> AclView:
        """The effective ACL, its source (manifest | api | admin, who, when) and the source's value."""
        return self._access.acl_view(self.find_document_store(document_id, store_id), document_id)
