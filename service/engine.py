"""The query engine: the one place where access, relevancy and generation meet.

Every query follows the same path: validate → caller's principal set →
search with the ACL filter inside the index → authoritative access check on
every source document → relevancy threshold → generator. A chunk the caller
cannot read is dropped silently at the access check; nothing downstream (the
answer, the chunk list, counts, errors) can tell it existed.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from acl.checker import AccessChecker
from acl.errors import GeneratorUnavailable, InvalidArgument, NotFound
from indexer.embedder import Embedder
from indexer.index import ChunkRecord, Index, SearchHit, acl_filter, and_, documents_filter
from service.domain import Store
from service.generator import Completion, ContextChunk, Generator, Prompt
from service.prompting import Budgeted, fit_prompt
from service.queries import (
    NO_ANSWER_GENERATED,
    NO_RELEVANT_DOCUMENT,
    Answer,
    Caller,
    DocumentQuery,
    MultiDocumentQuery,
    Query,
    SourceChunk,
    VectorQuery,
)
from service.repository import SettingsRepository
from service.threshold import Threshold, parse_level

log = logging.getLogger("docqa.query")

#: Tokens kept free for the template, the question and the answer when a
#: whole document is sent.
_PROMPT_RESERVE_TOKENS = 512


@dataclass(frozen=True, slots=True)
class Limits:
    max_question_chars: int = 4000
    max_k: int = 100
    max_documents: int = 1000
    max_document_id_chars: int = 1000


@dataclass(slots=True)
class _Scope:
    """What a query class hands the common tail of the path."""

    hits: list[SearchHit]
    threshold: float | None
    level: float | None
    one_document: bool


class _Clock:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._start = time.perf_counter()
        self._mark = self._start

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = self.timings.get(name, 0.0) + (now - self._mark) * 1000
        self._mark = now

    def total(self) -> dict[str, float]:
        self.timings["total"] = (time.perf_counter() - self._start) * 1000
        return self.timings


class QueryEngine:
    """Answers the three query classes for a caller."""

    def __init__(
        self,
        *,
        repository: SettingsRepository,
        index: Index,
        embedder_for: Callable[[str], Embedder],
        generator: Generator,
        checker: AccessChecker | None = None,
        limits: Limits = Limits(),
    ) -> None:
        self._repo = repository
        self._index = index
        self._embedder_for = embedder_for
        self._generator = generator
        self._checker = checker or AccessChecker(repository)
        self._limits = limits

    # public -------------------------------------------------------------------
    def ask(self, caller: Caller, query: Query, on_text: Callable[[str], None] | None = None) -> Answer:
        """Run ``query`` for ``caller``; raise InvalidArgument/NotFound before any work.

        With ``on_text`` the generator streams: each piece of answer text is
        handed to ``on_text`` as it is produced, before the answer is returned.
        """
        clock = _Clock()
        store = self._store(query.store_id)
        question = self._question(query.question)
        level = parse_level(query.level)
        principals = self.principals(caller, store.id)
        if isinstance(query, VectorQuery):
            scope = self._vector(store, question, level, query.max_chunks, principals, clock)
            name = "vector"
        elif isinstance(query, MultiDocumentQuery):
            ids = self._document_ids(query.document_ids)
            scope = self._multi(store, question, ids, level, query.max_chunks, principals, clock)
            name = "multi_document"
        elif isinstance(query, DocumentQuery):
            ids = self._document_ids([query.document_id])
            scope = self._single(store, question, ids[0], level, principals, clock)
            name = "document"
        else:  # pragma: no cover - the type system rules it out
            raise InvalidArgument(f"unknown query class {type(query).__name__}")
        return self._finish(store, caller, question, name, scope, query.perform_llm_query, clock, on_text)

    def principals(self, caller: Caller, store_id: str | None = None) -> frozenset[str]:
        """The caller's principal set: user, transitive groups, token groups, everyone.

        Groups come from the global directory and, for a query on ``store_id``,
        from that store's own manifest (never another store's).
        """
        return caller.principals(self._repo, store_id)

    # validation -----------------------------------------------------------------
    def _store(self, store_id: str) -> Store:
        store = self._repo.get_store(store_id) if isinstance(store_id, str) else None
        if store is None:
            raise NotFound(f"store {store_id!r} not found")
        return store

    def _question(self, question: str) -> str:
        if not isinstance(question, str) or not question.strip():
            raise InvalidArgument("question must not be empty")
        if len(question) > self._limits.max_question_chars:
            raise InvalidArgument(f"question is longer than {self._limits.max_question_chars} characters")
        return question.strip()

    def _document_ids(self, ids: Iterable[str]) -> list[str]:
        unique = list(dict.fromkeys(ids))
        if not unique:
            raise InvalidArgument("at least one document id is required")
        if len(unique) > self._limits.max_documents:
            raise InvalidArgument(f"at most {self._limits.max_documents} document ids are allowed")
        for document_id in unique:
            if (
                not isinstance(document_id, str)
                or not document_id.strip()
                or len(document_id) > self._limits.max_document_id_chars
            ):
                raise InvalidArgument("document ids must be non-empty strings of at most 1000 characters")
        return unique

    def _k(self, store: Store, requested: int | None, *, allow_whole: bool = False) -> int:
        k = store.max_chunks if requested is None else requested
        if allow_whole and k == -1:
            return -1
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= self._limits.max_k:
            raise InvalidArgument(f"max_chunks must be between 1 and {self._limits.max_k}")
        return k

    def _readable_or_not_found(self, store: Store, principals: frozenset[str], document_ids: Sequence[str]) -> None:
        readable = self._checker.readable(store.id, principals, document_ids)
        for document_id in document_ids:
            if document_id not in readable:
                # The same words whether it does not exist or may not be read.
                raise NotFound(f"document {document_id!r} not found in store {store.id!r}")

    # query classes --------------------------------------------------------------
    def _thresholds(self, store: Store, level: float | None) -> tuple[float, float | None]:
        effective = store.level if level is None else level
        return effective, Threshold(store.min_threshold, store.max_threshold).score_for(effective)

    def _vector(
        self,
        store: Store,
        question: str,
        level: float | None,
        max_chunks: int | None,
        principals: frozenset[str],
        clock: _Clock,
    ) -> _Scope:
        k = self._k(store, max_chunks)
        effective, threshold = self._thresholds(store, level)
        vector = self._embedder_for(store.embedding_model).embed_query(question)
        clock.lap("embed")
        hits = self._search(
            store,
            principals,
            threshold,
            k,
            clock,
            lambda n: self._index.knn(store.id, vector, n, acl_filter(principals)),
        )
        return _Scope(hits, threshold, effective, one_document=False)

    def _multi(
        self,
        store: Store,
        question: str,
        document_ids: list[str],
        level: float | None,
        max_chunks: int | None,
        principals: frozenset[str],
        clock: _Clock,
    ) -> _Scope:
        k = self._k(store, max_chunks, allow_whole=True)
        self._readable_or_not_found(store, principals, document_ids)
        effective, threshold = self._thresholds(store, level)
        vector = self._embedder_for(store.embedding_model).embed_query(question)
        clock.lap("embed")
        restrict = and_(acl_filter(principals), documents_filter(document_ids))
        if k == -1:
            # Whole documents: rank each by its best chunk, send the full text.
            total = self._index.count(store.id, restrict)
            hits = self._search(
                store,
                principals,
                None,
                max(total, 1),
                clock,
                lambda n: self._index.exact(store.id, vector, n, restrict),
            )
            best: dict[str, SearchHit] = {}
            for hit in hits:
                best.setdefault(hit.chunk.document_id, hit)
            ranked = [
                self._whole_document(store, h.chunk.document_id, h.score)
                for h in best.values()
                if threshold is None or h.score >= threshold
            ]
            if not self._fits([h.chunk.text for h in ranked], self._embedder_for(store.embedding_model)):
                # Whole documents are bounded like one document is: by the model's context.
                raise InvalidArgument(
                    f"the whole texts of these {len(ranked)} documents exceed the language model's context "
                    f"budget of {self._whole_budget()} tokens: ask for max_chunks between 1 and "
                    f"{self._limits.max_k}, or name fewer documents"
                )
            return _Scope(ranked, threshold, effective, one_document=len(document_ids) == 1)
        hits = self._search(
            store, principals, threshold, k, clock, lambda n: self._index.exact(store.id, vector, n, restrict)
        )
        return _Scope(hits, threshold, effective, one_document=len(document_ids) == 1)

    def _single(
        self,
        store: Store,
        question: str,
        document_id: str,
        level: float | None,
        principals: frozenset[str],
        clock: _Clock,
    ) -> _Scope:
        self._readable_or_not_found(store, principals, [document_id])
        whole = self._whole_document(store, document_id, math.nan)
        embedder = self._embedder_for(store.embedding_model)
        if not self._fits([whole.chunk.text], embedder):
            return self._multi(store, question, [document_id], level, None, principals, clock)
        vector = embedder.embed_query(question)
        clock.lap("embed")
        restrict = and_(acl_filter(principals), documents_filter([document_id]))
        best = self._index.exact(store.id, vector, 1, restrict)
        clock.lap("search")
        if best:
            whole = SearchHit(whole.chunk, best[0].score)
        return _Scope([whole], None, None, one_document=True)

    def _whole_budget(self) -> int:
        """Tokens whole documents may take: the generator's context less room for the prompt."""
        return max(self._generator.context_tokens - _PROMPT_RESERVE_TOKENS, 0)

    def _fits(self, texts: Sequence[str], embedder: Embedder) -> bool:
        """Whether whole documents, together, fit the generator's context with room for the prompt."""
        budget = self._whole_budget()
        characters = sum(len(t) for t in texts)
        if characters <= budget:  # never more tokens than characters
            return True
        if characters > budget * 8:
            return False
        used = 0
        for text in texts:
            used += len(embedder.tokenizer.token_spans(text))
            if used > budget:
                return False
        return True

    # the common path -------------------------------------------------------------
    def _search(
        self,
        store: Store,
        principals: frozenset[str],
        threshold: float | None,
        k: int,
        clock: _Clock,
        run: Callable[[int], list[SearchHit]],
    ) -> list[SearchHit]:
        """Search, drop unreadable documents, apply the threshold, keep the top ``k``.

        The index's ACL copy may be stale (a revocation not yet re-indexed), so
        the search fetches more than ``k`` and widens while the authoritative
        check drops hits and more may exist.
        """
        fetch = min(max(2 * k, k + 8), 10_000) if k < 10_000 else k
        while True:
            hits = run(fetch)
            clock.lap("search")
            readable = self._checker.readable(store.id, principals, {h.chunk.document_id for h in hits})
            clock.lap("access")
            passed = [
                h for h in hits if h.chunk.document_id in readable and (threshold is None or h.score >= threshold)
            ]
            below = threshold is not None and bool(hits) and hits[-1].score < threshold
            if len(passed) >= k or len(hits) < fetch or below or fetch >= 10_000:
                return passed[:k]
            fetch = min(fetch * 4, 10_000)

    def _whole_document(self, store: Store, document_id: str, score: float) -> SearchHit:
        """The document's whole extracted text as one hit (``<id>#all``); ``score`` NaN = unknown."""
        document = self._repo.get_document(store.id, document_id)
        if document is None:
            raise NotFound(f"document {document_id!r} not found in store {store.id!r}")
        return SearchHit(
            ChunkRecord(
                chunk_id=f"{document_id}#all",
                document_id=document_id,
                ordinal=0,
                text=document.text,
                title=document.title,
                source_uri=document.source_uri,
                heading_path=(),
                start=0,
                end=len(document.text),
                acl=document.acl,
            ),
            score,
        )

    def _finish(
        self,
        store: Store,
        caller: Caller,
        question: str,
        name: str,
        scope: _Scope,
        perform_llm_query: bool,
        clock: _Clock,
        on_text: Callable[[str], None] | None = None,
    ) -> Answer:
        scale = Threshold(store.min_threshold, store.max_threshold)
        chunks = tuple(self._source(hit, scale) for hit in scope.hits)
        query_id = str(uuid.uuid4())
        nothing = not chunks
        answer: str | None = None
        model_id: str | None = None
        input_tokens = output_tokens = 0
        llm_called = False
        generation_error: str | None = None
        if nothing and perform_llm_query:
            answer = NO_RELEVANT_DOCUMENT
        elif perform_llm_query:
            prompt = Prompt(
                question=question,
                chunks=tuple(
                    ContextChunk(i + 1, c.document_id, c.title, c.text, c.score) for i, c in enumerate(chunks)
                ),
                template=store.prompt_template,
                model_id=store.llm_model_id,
            )
            used = chunks
            if isinstance(self._generator, Budgeted):
                # Leave out the lowest-scored chunks, whole, until the prompt fits the model's window;
                # the answer then lists exactly the chunks it was given (renumbered to match).
                fitted = fit_prompt(prompt, self._generator.token_budget())
                prompt, used = fitted.prompt, tuple(chunks[c - 1] for c in fitted.kept)
                if not fitted.fits:
                    generation_error = "not even the best source fits the language model's context window"
            if generation_error is None:
                try:
                    completion = self._generate(prompt, on_text)
                except GeneratorUnavailable as exc:
                    # The caller still gets the scored sources, with a plain statement instead of an answer.
                    generation_error = exc.message
                    model_id = self._generator.model_id
                    log.warning("query %s: no answer generated: %s", query_id, exc.message)
                else:
                    answer = completion.text or NO_ANSWER_GENERATED
                    model_id = completion.model_id
                    input_tokens, output_tokens = completion.input_tokens, completion.output_tokens
                    chunks = used
                llm_called = True
                clock.lap("generate")
            if generation_error is not None:
                answer = NO_ANSWER_GENERATED
        result = Answer(
            query_id=query_id,
            query_class=name,
            answer=answer,
            chunks=chunks,
            threshold=scope.threshold,
            level=scope.level,
            no_relevant_document=nothing,
            retry_without_threshold_allowed=nothing and scope.one_document and scope.threshold is not None,
            model_id=model_id,
            llm_called=llm_called,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            timings_ms=clock.total(),
            generation_error=generation_error,
        )
        log.info(
            "query %s class=%s store=%s user=%s chunks=%d llm=%s total_ms=%.1f",
            query_id,
            name,
            store.id,
            caller.user_id,
            len(chunks),
            llm_called,
            result.timings_ms["total"],
        )
        return result

    def _generate(self, prompt: Prompt, on_text: Callable[[str], None] | None) -> Completion:
        """The generator's completion; streamed piece by piece to ``on_text`` when given."""
        if on_text is None:
            return self._generator.generate(prompt)
        pieces: list[str] = []
        for piece in self._generator.stream(prompt):
            pieces.append(piece)
            on_text(piece)
        return Completion(text="".join(pieces), model_id=self._generator.model_id, stop_reason="streamed")

    @staticmethod
    def _source(hit: SearchHit, scale: Threshold) -> SourceChunk:
        chunk = hit.chunk
        known = not math.isnan(hit.score)
        return SourceChunk(
            document_id=chunk.document_id,
            chunk_id=chunk.chunk_id,
            title=chunk.title,
            source_uri=chunk.source_uri,
            text=chunk.text,
            heading_path=chunk.heading_path,
            score=hit.score if known else None,
            relevance=scale.relevance(hit.score) if known else None,
            start=chunk.start,
            end=chunk.end,
        )
