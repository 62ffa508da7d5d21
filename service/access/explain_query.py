"""The query form of ``docqa access explain``: which of an admin's search results would this user see?

The chunks are the admin's own search (the store's retrieval with the admin's principals, level 0, the store's
rerank), so the admin is shown only chunks the admin may read. Each chunk's document is then explained for the
user exactly as the document form explains it (``explain.decide``): the same principals, the same effective
ACL, the same deciding entry.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from acl.directory import GroupSource
from acl.errors import InvalidArgument
from acl.model import user_principal
from service.access.explain import EXPLAIN_AUDIT_CLASS, Explanation, Principal, decide, principals_of
from service.access.state import AclView
from service.domain.queries import Answer, Caller, SourceChunk, VectorQuery
from service.persistence.ports import AuditRecord, SettingsRepository

#: How many of the admin's top chunks a question explains by default, and at most.
DEFAULT_CHUNKS = 10
MAX_CHUNKS = 50

#: The admin's search: (admin, store id, question, k) -> the top chunks the admin may read, best first.
Search = Callable[[Caller, str, str, int], Sequence[SourceChunk]]


class Asks(Protocol):
    """What the search needs of the query engine (``service.query.engine.QueryEngine``)."""

    def ask(self, caller: Caller, query: VectorQuery) -> Answer: ...


def engine_search(engine: Callable[[], Asks]) -> Search:
    """The admin's search as the console's relevancy preview runs it: a vector query with no threshold (level
    0) and no language model, through the store's retrieval and rerank; ``engine`` should keep no history."""

    def search(admin: Caller, store_id: str, question: str, k: int) -> Sequence[SourceChunk]:
        query = VectorQuery(store_id, question, level=0.0, max_chunks=k, perform_llm_query=False)
        return engine().ask(admin, query).chunks

    return search


@dataclass(frozen=True, slots=True)
class ExplainedChunk:
    """One chunk of the admin's search and whether the user would see it (its document's explanation)."""

    chunk_id: str
    #: The raw score of the search and the 0-1 relevance on the store's scale (the order is the rerank's).
    score: float | None
    relevance: float | None
    explanation: Explanation

    @property
    def document_id(self) -> str:
        return self.explanation.acl.document_id

    @property
    def visible(self) -> bool:
        return self.explanation.readable

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id,
            "document_id": self.document_id,
            "score": self.score,
            "relevance": self.relevance,
            "visible": self.visible,
            "deciding_entry": self.explanation.deciding,
            "reason": self.explanation.reason,
        }


@dataclass(frozen=True, slots=True)
class QueryExplanation:
    """The admin's top chunks for a question, each marked visible or not to ``user``, and the user's principals."""

    user: str
    store_id: str
    searched_as: str
    principals: tuple[Principal, ...]
    chunks: tuple[ExplainedChunk, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "user": self.user,
            "store": self.store_id,
            "searched_as": self.searched_as,
            "chunks": [c.to_dict() for c in self.chunks],
            "principals": [{"principal": p.principal, "path": p.path()} for p in self.principals],
        }


@dataclass(frozen=True, slots=True)
class QueryExplainer:
    """``explainAccess`` with a question. The admin check is the caller's (``AuthorizedAdmin``)."""

    repository: SettingsRepository
    sources: Sequence[GroupSource]
    acl_view: Callable[[str, str | None], AclView]
    search: Search

    def explain(
        self,
        user_id: str,
        store_id: str,
        question: str,
        admin: Caller,
        *,
        k: int | None = None,
        by: str,
        interface: str,
    ) -> QueryExplanation:
        """The top ``k`` chunks (default 10, at most 50) of ``admin``'s search for ``question`` in ``store_id``,
        each with whether ``user_id`` would see it and the entry that decides. InvalidArgument for a malformed
        user id or ``k``, before anything is read; NotFound for an unknown store; the audit row (the chunks'
        documents and ids) is written before the answer is returned."""
        user = user_id.removeprefix("user:")
        user_principal(user)
        size = DEFAULT_CHUNKS if k is None else k
        if isinstance(size, bool) or not 1 <= size <= MAX_CHUNKS:
            raise InvalidArgument(f"k must be between 1 and {MAX_CHUNKS}")
        found = self.search(admin, store_id, question, size)
        principals = principals_of(self.repository, self.sources, user, store_id)
        views: dict[str, AclView] = {}
        chunks = []
        for chunk in found[:size]:
            if chunk.document_id not in views:
                views[chunk.document_id] = self.acl_view(chunk.document_id, store_id)
            chunks.append(
                ExplainedChunk(
                    chunk.chunk_id, chunk.score, chunk.relevance, decide(user, views[chunk.document_id], principals)
                )
            )
        self.repository.record_audit(
            AuditRecord(
                query_id=str(uuid.uuid4()),
                user_id=by,
                store_id=store_id,
                query_class=EXPLAIN_AUDIT_CLASS,
                document_ids=tuple(views),
                chunk_ids=tuple(c.chunk_id for c in chunks),
                threshold=None,
                timings_ms={},
                outcome="OK",
                interface=interface,
                created_at=datetime.now(UTC),
                document_count=len(views),
                chunk_count=len(chunks),
            )
        )
        return QueryExplanation(user, store_id, admin.user_id, principals, tuple(chunks))
