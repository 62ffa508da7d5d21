"""The query engine: the one place where access, relevancy and generation meet.

Every query follows the same path: validate → caller's principal set →
search with the ACL filter inside the index → authoritative access check on
every source document → relevancy threshold → generator. A chunk the caller
cannot read is dropped silently at the access check; nothing downstream (the
answer, the chunk list, counts, errors) can tell it existed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from acl.checker import AccessChecker
from acl.errors import ConfigurationError, InvalidArgument, NotFound, Unavailable
from indexer.embedder import Embedder
from indexer.index import Index
from service.domain.analysis import Comparison, ComparisonRequest, Summary, SummaryRequest
from service.domain.history import HistoryEntry
from service.domain.limits import Limits, is_valid_unicode
from service.domain.queries import Answer, Caller, DocumentQuery, MultiDocumentQuery, Query, VectorQuery
from service.domain.store import Store
from service.domain.threshold import parse_level
from service.generation.port import Generator
from service.history.conversations import Conversations
from service.history.rewrite import says_nothing
from service.persistence.ports import SettingsRepository
from service.query.analysis import Analysis
from service.query.answering import Answering
from service.query.cancellation import Cancellation
from service.query.context import QueryContext, Scope
from service.query.document import document_scope
from service.query.multi_document import multi_document_scope
from service.query.retrieval import CANDIDATES, Retrieval
from service.query.vector import vector_scope
from service.ranking.port import Reranker

log = logging.getLogger("docqa.query")

#: What a question with no word to search for gets, outside a conversation ("hmm", "and?").
NOTHING_TO_SEARCH = "the question has no word to search for: please ask a full question"
#: All a caller learns of a language model that is misconfigured (URL, credentials, project, model id).
LANGUAGE_MODEL_UNAVAILABLE = "the language model is unavailable"


class QueryEngine:
    """Answers the three query classes for a caller: validates, scopes, then answers."""

    def __init__(
        self,
        *,
        repository: SettingsRepository,
        index: Index,
        embedder_for: Callable[[str], Embedder],
        generator: Generator,
        checker: AccessChecker | None = None,
        limits: Limits | None = None,
        link_allowlist: Sequence[str] = (),
        reranker: Reranker | None = None,
        rerank_candidates: int = CANDIDATES,
        conversations: Conversations | None = None,
    ) -> None:
        """``conversations``: when given, every answered query is a turn of its user's conversation and kept in
        their history (``service.history``); without, queries are one-shot and nothing is kept."""
        self._repo = repository
        self._conversations = conversations
        self._limits = limits or Limits()
        self._retrieval = Retrieval(
            catalog=repository,
            index=index,
            checker=checker or AccessChecker(repository),
            embedder_for=embedder_for,
            context_tokens=lambda: generator.context_tokens,
            reranker=reranker,
            candidates=rerank_candidates,
        )
        self._answering = Answering(generator, link_allowlist)
        self._analysis = Analysis(self._retrieval, generator, link_allowlist)

    def ask(
        self,
        caller: Caller,
        query: Query,
        on_text: Callable[[str], None] | None = None,
        cancel: Cancellation | None = None,
        keep: Callable[[HistoryEntry], None] | None = None,
    ) -> Answer:
        """Run ``query`` for ``caller``; raise InvalidArgument/NotFound before any work.

        With ``on_text`` the generator streams: each piece of answer text is
        handed to ``on_text`` as it is produced, before the answer is returned.
        With ``cancel`` the query stops (Cancelled, DeadlineExceeded) once its
        caller no longer wants the answer, and no language model is kept working for it.
        With ``keep`` the answer's history entry is handed to it instead of being committed here: whoever passes
        it must keep the entry before the answer reaches the caller (``AuditedQueries`` does, with the audit row).
        """
        store, principals = self._store(caller, query.store_id)
        question = self._limits.question(query.question)
        if query.conversation_id is None and says_nothing(question):
            raise InvalidArgument(NOTHING_TO_SEARCH)
        level = parse_level(query.level)
        conversations = self._conversations
        turn = (
            None
            if conversations is None
            else conversations.begin(caller, query.conversation_id, question, store.llm_model_id, store.id)
        )
        ctx = QueryContext(store, question if turn is None else turn.searched, level, principals)
        scope: Scope
        if isinstance(query, VectorQuery):
            scope, name = vector_scope(self._retrieval, self._limits, ctx, query), "vector"
        elif isinstance(query, MultiDocumentQuery):
            ids = self._limits.document_ids(query.document_ids)
            scope = multi_document_scope(self._retrieval, self._limits, ctx, ids, query.max_chunks, query.filters)
            name = "multi_document"
        elif isinstance(query, DocumentQuery):
            [document_id] = self._limits.document_ids([query.document_id])
            scope = document_scope(self._retrieval, self._limits, ctx, document_id, query.filters)
            name = "document"
        else:  # pragma: no cover - the type system rules it out
            raise InvalidArgument(f"unknown query class {type(query).__name__}")
        earlier = () if turn is None else turn.earlier
        try:
            answer = self._answering.answer(ctx, caller, name, scope, query.perform_llm_query, on_text, cancel, earlier)
        except ConfigurationError as exc:
            # The operator's to fix, and it may name a URL, a model or a project: the log gets it, the caller not.
            log.error("store %s: the language model is misconfigured: %s", store.id, exc.message)
            raise Unavailable(LANGUAGE_MODEL_UNAVAILABLE) from None
        if conversations is None or turn is None:
            return answer
        return conversations.record(caller, store.id, question, turn, answer, keep)

    def summarize(
        self,
        caller: Caller,
        request: SummaryRequest,
        on_text: Callable[[str], None] | None = None,
        cancel: Cancellation | None = None,
        keep: Callable[[HistoryEntry], None] | None = None,
    ) -> Summary:
        """Summarise a document the caller may read (NotFound otherwise, as for a query); see ``summary``.
        ``keep``: as for ``ask``."""
        store, principals = self._store(caller, request.store_id)
        summary = self._analysis.summarize(store, principals, self._limits, request, on_text, cancel)
        if self._conversations is not None:
            label = f"Summary ({summary.length.lower()})"
            self._conversations.keep(caller, store.id, "summary", label, summary, [summary.document_id], keep)
        return summary

    def compare(
        self,
        caller: Caller,
        request: ComparisonRequest,
        on_text: Callable[[str], None] | None = None,
        cancel: Cancellation | None = None,
        keep: Callable[[HistoryEntry], None] | None = None,
    ) -> Comparison:
        """Compare 2-5 documents the caller may read (NotFound for the whole request if one is not); see
        ``comparison``. ``keep``: as for ``ask``."""
        store, principals = self._store(caller, request.store_id)
        comparison = self._analysis.compare(store, principals, self._limits, request, on_text, cancel)
        if self._conversations is not None:
            label = comparison.question or f"Comparison of {len(comparison.document_ids)} documents"
            self._conversations.keep(caller, store.id, "comparison", label, comparison, comparison.document_ids, keep)
        return comparison

    def principals(self, caller: Caller, store_id: str | None = None) -> frozenset[str]:
        """The caller's principal set: user, transitive groups, token groups, everyone.

        Groups come from the global directory and, for a query on ``store_id``,
        from that store's own manifest (never another store's).
        """
        return caller.principals(self._repo, store_id)

    def _store(self, caller: Caller, store_id: str) -> tuple[Store, frozenset[str]]:
        """The store and the caller's principals in it. NotFound for an unknown store and, in the same words,
        for a store the caller may read nothing of (read in the statement that reads the store): only an admin
        learns that such a store exists, to administer it."""
        # An id that is not valid Unicode text (a lone surrogate) names no store: no database can hold one.
        if not (isinstance(store_id, str) and is_valid_unicode(store_id)):
            raise NotFound(f"store {store_id!r} not found")
        principals = self.principals(caller, store_id)
        store = self._repo.get_store(store_id) if caller.is_admin else self._repo.store_for_reader(store_id, principals)
        if store is None:
            raise NotFound(f"store {store_id!r} not found")
        return store, principals
