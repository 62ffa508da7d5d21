"""The authoritative access check, run on every chunk before anyone sees it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from acl.model import Acl


class PermissionSource(Protocol):
    """The authoritative ACLs: the settings database or a content-system connector."""

    def acls(self, store_id: str, document_ids: Iterable[str]) -> Mapping[str, Acl]:
        """ACL of each known document; unknown documents are simply absent."""
        ...


class AccessChecker:
    """Decides which documents a principal set may read, from the authoritative source."""

    def __init__(self, source: PermissionSource) -> None:
        self._source = source

    def readable(self, store_id: str, principals: frozenset[str], document_ids: Iterable[str]) -> frozenset[str]:
        """The subset of ``document_ids`` the principals may read now.

        A document the source does not know is not readable (fail closed).
        """
        wanted = set(document_ids)
        if not wanted:
            return frozenset()
        acls = self._source.acls(store_id, wanted)
        return frozenset(d for d in wanted if (acl := acls.get(d)) is not None and acl.permits(principals))

    def can_read(self, store_id: str, principals: frozenset[str], document_id: str) -> bool:
        return document_id in self.readable(store_id, principals, [document_id])
