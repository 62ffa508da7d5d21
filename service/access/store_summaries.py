"""What a caller may know about stores: the one place that computes store listings.

An administrator sees every store, every count and every setting. Anyone
else sees only the stores where they may read at least one document, counts
of only the documents (and their chunks) they may read, and no prompt
template or model ids: counts of hidden documents, polled, would tell when
they come and go. A store where the caller may read nothing is NOT_FOUND,
the same answer as a store that does not exist. Readability is decided by
the authoritative access check, the same one every query runs.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

from acl.checker import AccessChecker
from acl.errors import NotFound
from service.domain.queries import Caller
from service.domain.setting import StoreSetting
from service.domain.store import DocumentRecord, Store
from service.persistence.ports import SettingsRepository


@dataclass(frozen=True, slots=True)
class Viewer:
    """Whose view a listing is: a caller (None for the administrator's own view), and the admin role."""

    caller: Caller | None
    is_admin: bool

    @classmethod
    def of(cls, caller: Caller) -> Viewer:
        """The viewer of a verified caller (principals from the token and the directory, per store)."""
        return cls(caller, caller.is_admin)


#: The administrator's own view (the CLI on the server).
ADMIN = Viewer(None, is_admin=True)


@dataclass(frozen=True, slots=True)
class StoreSummary:
    """A store as one viewer may see it; admin-only settings are None for others."""

    store: Store
    documents: int
    chunks: int
    admin_view: bool = True

    @property
    def embedding_model(self) -> str | None:
        return self.store.embedding_model if self.admin_view else None

    @property
    def llm_model_id(self) -> str | None:
        return self.store.llm_model_id if self.admin_view else None

    @property
    def prompt_template(self) -> str | None:
        return self.store.prompt_template if self.admin_view else None

    def setting(self, declared: StoreSetting) -> Any:
        """The store's value of ``declared`` for this viewer; None where only administrators may see it."""
        return getattr(self.store, declared.name) if self.admin_view or declared.seen_by == "reader" else None


class StoreSummaries:
    """Store listings per viewer, from the settings repository and the access check."""

    def __init__(self, repository: SettingsRepository, checker: AccessChecker | None = None) -> None:
        self._repo = repository
        self._checker = checker or AccessChecker(repository)

    def list(self, viewer: Viewer) -> list[StoreSummary]:
        """The stores ``viewer`` may know of, in the repository's order."""
        out = []
        for store in self._repo.list_stores():
            summary = self._summary(store, viewer)
            if summary is not None:
                out.append(summary)
        return out

    def one(self, store_id: str, viewer: Viewer) -> StoreSummary:
        """One store as ``viewer`` sees it; NotFound if unknown or nothing in it is readable."""
        store = self._repo.get_store(store_id) if isinstance(store_id, str) else None
        summary = None if store is None else self._summary(store, viewer)
        if summary is None:
            raise NotFound(f"store {store_id!r} not found")
        return summary

    def readable_documents(self, store_id: str, caller: Caller) -> tuple[Store, builtins.list[DocumentRecord]]:
        """The store and the documents of it ``caller`` may read, in the repository's order, whatever the
        caller's role (the console's document picker); NotFound, in an unknown store's words, when they may
        read none of them."""
        store = self._repo.get_store(store_id) if isinstance(store_id, str) else None
        seen = None if store is None else self._readable(store, caller)
        if store is None or not seen:
            raise NotFound(f"store {store_id!r} not found")
        return store, seen

    def _readable(self, store: Store, caller: Caller) -> builtins.list[DocumentRecord]:
        documents = self._repo.list_documents(store.id)
        # A store's own manifest groups count for its documents only, as in every query.
        principals = caller.principals(self._repo, store.id)
        readable = self._checker.readable(store.id, principals, [d.id for d in documents])
        return [d for d in documents if d.id in readable]

    def _summary(self, store: Store, viewer: Viewer) -> StoreSummary | None:
        if viewer.is_admin or viewer.caller is None:
            documents = self._repo.list_documents(store.id)
            return StoreSummary(store, len(documents), sum(d.chunk_count for d in documents))
        seen = self._readable(store, viewer.caller)
        if not seen:
            return None
        return StoreSummary(store, len(seen), sum(d.chunk_count for d in seen), admin_view=False)
