"""Old answers shown only as today's ACL allows: every cited document checked again, as queries check them."""

from __future__ import annotations

from collections.abc import Sequence

from acl.checker import AccessChecker
from acl.directory import GroupDirectory
from service.domain.history import HistoryEntry, ShownEntry, shown
from service.domain.queries import Caller


class Recheck:
    """Which cited documents a reader may read now, by the authoritative access check, per store."""

    def __init__(self, directory: GroupDirectory, checker: AccessChecker) -> None:
        self._directory = directory
        self._checker = checker

    def readable(self, reader: Caller, entries: Sequence[HistoryEntry]) -> dict[str, frozenset[str]]:
        """For each store of ``entries``, the documents they draw on (``depends_on``) that ``reader`` may read today."""
        wanted: dict[str, set[str]] = {}
        for entry in entries:
            wanted.setdefault(entry.store_id, set()).update(entry.depends_on)
        return {
            store: self._checker.readable(store, reader.principals(self._directory, store), documents)
            for store, documents in wanted.items()
        }

    def show(self, reader: Caller, entries: Sequence[HistoryEntry]) -> list[ShownEntry]:
        """``entries`` as ``reader`` may see them today (``service.domain.history.shown``)."""
        readable = self.readable(reader, entries)
        return [shown(e, readable.get(e.store_id, frozenset())) for e in entries]
