"""The common search path: embed, search with the ACL inside (dense and lexical), check access, fuse,
threshold, widen, rerank; a question's exact identifiers keep the chunks that name them among the first
(``identifiers``). Every read goes through the caller's ``CallerIndex`` (``guarded``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from acl.checker import AccessChecker
from indexer.embedder import Embedder
from indexer.index import Index, SearchHit
from indexer.index.port import Vector
from service.domain.store import Store
from service.persistence.ports import DocumentCatalog
from service.query.context import QueryContext
from service.query.fusion import fuse, runs_dense, runs_lexical
from service.query.guarded import CallerIndex, Found, Within
from service.query.identifiers import SEARCH_HITS, names, pinned, unnamed
from service.query.overlap import Overlap
from service.query.reranking import Reranking
from service.ranking.port import Reranker

#: Tokens kept free for the template, the question and the answer when a
#: whole document is sent.
PROMPT_RESERVE_TOKENS = 512
#: Characters per token no tokenizer exceeds in practice: whole texts longer than this many per token of the
#: budget are refused without counting their tokens.
MAX_CHARS_PER_TOKEN = 8
#: Fused candidates a search keeps (at least k): what a reranking step chooses from.
CANDIDATES = 30
#: The most hits one search asks the index for.
MAX_FETCH = 10_000


@dataclass(frozen=True, slots=True)
class _Batch:
    """One search's ranked readable hits; ``more``: asking for more could add hits that pass the threshold;
    ``deeper``: asking for more could add other hits, and unreadable ones were dropped (more may replace them)."""

    hits: list[SearchHit]
    more: bool
    deeper: bool = False


def first_fetch(k: int) -> int:
    """How many hits the first round of a search for ``k`` asks for: room for some the access check drops."""
    return min(max(2 * k, k + 8), MAX_FETCH) if k < MAX_FETCH else k


class Retrieval:
    """Finds the chunks a caller may read, through the caller's ``CallerIndex`` (the index with the ACL inside,
    the authoritative access check after, the catalog's whole texts)."""

    def __init__(
        self,
        *,
        catalog: DocumentCatalog,
        index: Index,
        checker: AccessChecker,
        embedder_for: Callable[[str], Embedder],
        context_tokens: Callable[[], int],
        reranker: Reranker | None = None,
        candidates: int = CANDIDATES,
    ) -> None:
        self._index = index
        self._reranking = Reranking(reranker)
        self._candidates = candidates
        self._catalog = catalog
        self._checker = checker
        self._embedder_for = embedder_for
        self._context_tokens = context_tokens
        self._overlap = Overlap()

    def embed(self, ctx: QueryContext) -> Vector:
        """The question's vector in the store's embedding model."""
        vector = self._embedder_for(ctx.store.embedding_model).embed_query(ctx.question)
        ctx.clock.lap("embed")
        return vector

    def reads(self, ctx: QueryContext) -> CallerIndex:
        """The store's content as the query's caller may read it (the decisions shared across the query)."""
        return CallerIndex(
            index=self._index,
            checker=self._checker,
            catalog=self._catalog,
            store_id=ctx.store.id,
            principals=ctx.principals,
            decided=ctx.decided,
        )

    def readable_or_not_found(self, ctx: QueryContext, document_ids: Sequence[str]) -> None:
        """NotFound, in the same words whether it does not exist or may not be read, for a document the
        caller may not read."""
        self.reads(ctx).require_readable(document_ids)

    def search(
        self, ctx: QueryContext, threshold: float | None, k: int, run: Callable[[CallerIndex, int], Found]
    ) -> list[SearchHit]:
        """Search with ``run(reads, n)`` (hits ranked by cosine), drop unreadable documents, apply the threshold,
        keep the top ``k``."""
        reads = self.reads(ctx)

        def batch(n: int) -> _Batch:
            found = run(reads, n)
            ctx.clock.lap("search")
            [hits] = reads.checked(found).lists
            ctx.clock.lap("access")
            return _Batch(hits, found.reaches(n, threshold))

        return self._widened(ctx, threshold, k, batch)

    def candidates(
        self,
        ctx: QueryContext,
        threshold: float | None,
        k: int,
        within: Within,
        exact: bool,
    ) -> tuple[Vector, list[SearchHit]]:
        """The question's vector, and up to ``max(k, CANDIDATES)`` chunks, best first: the dense search (exact
        kNN with ``exact``, else ANN) and the lexical search of the question, both among the chunks the caller
        may read ``within`` the scope, checked, fused by the store's method, then the ones that pass the
        threshold (on the cosine, which is every fused hit's score). The caller cuts to ``k``.

        The lexical search needs no vector, so its first round runs beside the question's embedding, on a
        thread of its own when one is free (``Overlap``). When the store runs it, an identifier of the question
        that no candidate names is searched for once more (``identifiers``): the best readable chunk that
        names it exactly and passes the threshold is added, after the others."""
        store = ctx.store
        method = store.fusion
        want = max(k, self._candidates)
        first = first_fetch(want)
        reads = self.reads(ctx)
        dense = reads.exhaustive if exact else reads.approximate
        early = self._overlap.start(reads.keyword, ctx.question, first, within) if runs_lexical(method) else None
        vector = self.embed(ctx)

        def batch(n: int) -> _Batch:
            nonlocal early
            dense_found = Found([])
            lexical_found = Found([])
            if runs_dense(method):
                dense_found = dense(vector, n, within)
                ctx.clock.lap("search")
            if runs_lexical(method):
                if early is not None and n == first:
                    lexical_found, took_ms = early.result()
                    ctx.clock.lap("lexical_wait")
                    ctx.clock.add("lexical", took_ms)
                else:
                    lexical_found = reads.keyword(ctx.question, n, within)
                    ctx.clock.lap("lexical")
                early = None
            # Both lists checked at once (one statement); only readable hits are fused, so no unreadable hit
            # moves a readable one's rank.
            checked = reads.checked(dense_found, lexical_found)
            ctx.clock.lap("access")
            dense_hits, lexical_hits = checked.lists
            # Every chunk at or above the threshold is in a deep enough dense list, so only the dense list
            # widens for the threshold; the lexical list widens only past unreadable hits.
            fused = fuse(method, dense_hits, lexical_hits, vector, store.lexical_weight)
            more = runs_dense(method) and dense_found.reaches(n, threshold)
            return _Batch(fused, more, checked.dropped and lexical_found.fetched >= n)

        found = self._widened(ctx, threshold, want, batch)
        if runs_lexical(method):
            found += self._naming(ctx, reads, vector, threshold, within, found)
        return vector, found

    def _naming(
        self,
        ctx: QueryContext,
        reads: CallerIndex,
        vector: Vector,
        threshold: float | None,
        within: Within,
        hits: list[SearchHit],
    ) -> list[SearchHit]:
        """For each identifier of the question that none of ``hits`` names: the best chunk, by BM25, of one
        lexical search of it among the chunks the caller may read ``within`` the scope, checked, that names it
        exactly and passes the threshold (on its cosine, as every candidate's)."""
        terms = unnamed(ctx.question, hits)
        if not terms:
            return []
        found = [reads.keyword(term.text, SEARCH_HITS, within) for term in terms]
        ctx.clock.lap("lexical")
        checked = reads.checked(*found)
        ctx.clock.lap("access")
        seen = {h.chunk.chunk_id for h in hits}
        added: list[SearchHit] = []
        for term, listed in zip(terms, checked.lists, strict=True):
            naming = [h for h in listed if names(term, h.chunk) and h.chunk.chunk_id not in seen]
            scored = fuse("lexical", [], naming, vector, ctx.store.lexical_weight)  # the cosine of each
            best = next((h for h in scored if threshold is None or h.score >= threshold), None)
            if best is not None:
                seen.add(best.chunk.chunk_id)
                added.append(best)
        return added

    def rerank(self, ctx: QueryContext, vector: Vector, hits: list[SearchHit]) -> tuple[list[SearchHit], str | None]:
        """The readable, thresholded candidates in the reranker's order (scores stay the cosines), the best chunk
        naming each rare identifier of the question moved among the first three (``identifiers.pinned``), and
        a warning when the reranker could not order them (the fused order is kept, and pinned)."""
        ranked, warning = self._reranking.rerank(ctx, vector, hits)
        return pinned(ctx.question, ranked), warning

    def _widened(
        self, ctx: QueryContext, threshold: float | None, k: int, run: Callable[[int], _Batch]
    ) -> list[SearchHit]:
        """The first ``k`` hits of ``run`` (readable: ``run`` checks them) that pass the threshold.

        The index's ACL copy may be stale (a revocation not yet re-indexed), so
        the search fetches more than ``k`` and widens while the authoritative
        check (or the threshold) dropped hits and more may exist.
        """
        fetch = first_fetch(k)
        while True:
            found = run(fetch)
            passed = [h for h in found.hits if threshold is None or h.score >= threshold]
            if len(passed) >= k or not (found.more or found.deeper) or fetch >= MAX_FETCH:
                return passed[:k]
            fetch = min(fetch * 4, MAX_FETCH)

    def whole_document(self, ctx: QueryContext, document_id: str, score: float) -> SearchHit:
        """The document's whole extracted text as one hit (``<id>#all``; ``score`` NaN = unknown); NotFound
        unless the caller may read it."""
        return self.reads(ctx).whole_document(document_id, score)

    def whole_budget(self) -> int:
        """Tokens whole documents may take: the generator's context less room for the prompt."""
        return max(self._context_tokens() - PROMPT_RESERVE_TOKENS, 0)

    def past_any_context(self, characters: int) -> bool:
        """Whether whole texts of ``characters`` characters cannot fit however they tokenize (more than
        ``MAX_CHARS_PER_TOKEN`` characters per token of the budget): refused without counting tokens."""
        return characters > self.whole_budget() * MAX_CHARS_PER_TOKEN

    def fits(self, store: Store, texts: Sequence[str]) -> bool:
        """Whether whole documents, together, fit the generator's context with room for the prompt."""
        budget = self.whole_budget()
        characters = sum(len(t) for t in texts)
        if characters <= budget:  # never more tokens than characters
            return True
        if self.past_any_context(characters):
            return False
        tokenizer = self._embedder_for(store.embedding_model).tokenizer
        used = 0
        for text in texts:
            used += len(tokenizer.token_spans(text))
            if used > budget:
                return False
        return True
