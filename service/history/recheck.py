"""Old answers shown only as today's ACL and today's documents allow: every cited document checked again, as
queries check them, and against the version the answer quoted."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from acl.checker import AccessChecker
from acl.directory import GroupDirectory
from service.domain.history import HistoryEntry, ShownEntry, shown
from service.domain.queries import Caller, SourceChunk
from service.persistence.history_ports import DocumentVersions, QuotedSpan


class Recheck:
    """Which cited documents a reader may read now, by the authoritative access check, per store; and which
    entries still quote the documents as they are now."""

    def __init__(self, directory: GroupDirectory, checker: AccessChecker, versions: DocumentVersions) -> None:
        self._directory = directory
        self._checker = checker
        self._versions = versions

    def readable(self, reader: Caller, entries: Sequence[HistoryEntry]) -> dict[str, frozenset[str]]:
        """For each store of ``entries``, the documents they draw on (``depends_on``) that ``reader`` may read today."""
        wanted = _wanted(entries)
        return {
            store: self._checker.readable(store, reader.principals(self._directory, store), documents)
            for store, documents in wanted.items()
        }

    def readable_named(
        self, reader: Caller, store_id: str, names: Iterable[str]
    ) -> tuple[frozenset[str], frozenset[str]]:
        """Which of ``names`` are documents of ``store_id`` that ``reader`` may read today, and which are
        documents of the store they may not read."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return frozenset(), frozenset()
        readable = self._checker.readable(store_id, reader.principals(self._directory, store_id), wanted)
        existing = self._versions.current(store_id, [n for n in wanted if n not in readable])
        return readable, frozenset(existing)

    def current(self, entries: Sequence[HistoryEntry]) -> set[str]:
        """The query ids of ``entries`` whose every document is still the version they quoted."""
        today = {store: self._versions.current(store, documents) for store, documents in _wanted(entries).items()}
        return {e.query_id for e in entries if e.current(today.get(e.store_id, {}))}

    def show(self, reader: Caller, entries: Sequence[HistoryEntry]) -> list[ShownEntry]:
        """``entries`` as ``reader`` may see them today (``service.domain.history.shown``)."""
        readable = self.readable(reader, entries)
        current = self.current(entries)
        return [
            shown(
                e,
                readable.get(e.store_id, frozenset()),
                current=e.query_id in current,
                owner=e.user_id == reader.user_id,
            )
            for e in entries
        ]

    def quoted_versions(self, store_id: str, chunks: Sequence[SourceChunk]) -> dict[str, str]:
        """The version of each document of ``chunks`` their text was read from ("" when it is not the
        catalog's version now: the document changed while the query ran)."""
        spans = [QuotedSpan(c.document_id, c.start, c.end, c.text) for c in chunks]
        return self._versions.quoted(store_id, spans) if spans else {}

    def versions_now(self, store_id: str, document_ids: Iterable[str]) -> Mapping[str, str]:
        """The version of each of these documents now ("" for one that does not exist)."""
        wanted = list(dict.fromkeys(document_ids))
        found = self._versions.current(store_id, wanted) if wanted else {}
        return {d: found.get(d, "") for d in wanted}


def _wanted(entries: Sequence[HistoryEntry]) -> dict[str, set[str]]:
    wanted: dict[str, set[str]] = {}
    for entry in entries:
        wanted.setdefault(entry.store_id, set()).update(entry.depends_on)
    return wanted
