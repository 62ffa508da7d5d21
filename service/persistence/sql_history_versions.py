"""The SQLAlchemy adapter of ``DocumentVersions``: the catalog's ``documents`` rows, read without their text.

A quoted span is compared in the database (``substr`` counts characters in SQLite and PostgreSQL alike, as
Python's slices do), so checking what an answer quoted never loads a whole document.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from functools import lru_cache
from typing import Any

from sqlalchemy import Integer, Select, bindparam, func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from service.persistence.history_ports import DocumentVersions, QuotedSpan
from service.persistence.sql_base import transaction
from service.persistence.sql_settings import DocumentRow

_BATCH = 500


@lru_cache(maxsize=128)
def _spans(count: int) -> Select[Any]:
    """A document's version and ``count`` spans of its text (``start0``, ``length0``, …): built once per count,
    so checking an answer's quotes skips building and keying a statement per document."""
    texts = [
        func.substr(DocumentRow.text, bindparam(f"start{i}", type_=Integer), bindparam(f"length{i}", type_=Integer))
        for i in range(count)
    ]
    return select(DocumentRow.content_hash, *texts).where(
        DocumentRow.store_id == bindparam("store_id"), DocumentRow.id == bindparam("document_id")
    )


class SqlDocumentVersions(DocumentVersions):
    """Document versions from the settings database's catalog (its engine, its migrations)."""

    def __init__(self, engine: Engine) -> None:
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    def _session(self) -> AbstractContextManager[Session]:
        return transaction(self._sessions)

    def current(self, store_id: str, document_ids: Iterable[str]) -> dict[str, str]:
        wanted = list(dict.fromkeys(document_ids))
        found: dict[str, str] = {}
        with self._session() as s:
            for i in range(0, len(wanted), _BATCH):
                query = select(DocumentRow.id, DocumentRow.content_hash).where(
                    DocumentRow.store_id == store_id, DocumentRow.id.in_(wanted[i : i + _BATCH])
                )
                found.update((d, h) for d, h in s.execute(query))
        return found

    def quoted(self, store_id: str, spans: Sequence[QuotedSpan]) -> dict[str, str]:
        by_document: dict[str, list[QuotedSpan]] = {}
        for span in spans:
            by_document.setdefault(span.document_id, []).append(span)
        versions: dict[str, str] = {}
        with self._session() as s:
            for document_id, quoted in by_document.items():
                values: dict[str, Any] = {"store_id": store_id, "document_id": document_id}
                for i, span in enumerate(quoted):
                    values[f"start{i}"], values[f"length{i}"] = span.start + 1, max(span.end - span.start, 0)
                row = s.execute(_spans(len(quoted)), values).first()
                same = row is not None and all(
                    span.start >= 0 and now == span.text for span, now in zip(quoted, row[1:], strict=True)
                )
                versions[document_id] = row[0] if same and row is not None else ""
        return versions
