"""The common search path: embed, search with the ACL inside (dense and lexical, fused), check access,
threshold, widen."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from acl.checker import AccessChecker
from acl.errors import NotFound
from indexer.embedder import Embedder
from indexer.index import ChunkRecord, Filter, Index, SearchHit
from indexer.index.port import Vector
from service.domain.store import Store
from service.persistence.ports import DocumentCatalog
from service.query.context import QueryContext
from service.query.fusion import fuse, runs_dense, runs_lexical
from service.query.overlap import Overlap
from service.query.reranking import Reranking
from service.ranking.port import Reranker

#: Tokens kept free for the template, the question and the answer when a
#: whole document is sent.
PROMPT_RESERVE_TOKENS = 512
#: Fused candidates a search keeps (at least k): what a reranking step chooses from.
CANDIDATES = 30
#: The most hits one search asks the index for.
MAX_FETCH = 10_000


@dataclass(frozen=True, slots=True)
class _Batch:
    """One search's ranked hits; ``more``: asking for more could add hits that pass the threshold;
    ``deeper``: asking for more could add other hits, worth it only to replace unreadable ones."""

    hits: list[SearchHit]
    more: bool
    deeper: bool = False


def first_fetch(k: int) -> int:
    """How many hits the first round of a search for ``k`` asks for: room for some the access check drops."""
    return min(max(2 * k, k + 8), MAX_FETCH) if k < MAX_FETCH else k


def _more(hits: Sequence[SearchHit], asked: int, threshold: float | None) -> bool:
    """Whether a cosine-ranked list cut at ``asked`` may go on with hits at or above ``threshold``."""
    return len(hits) >= asked and (threshold is None or hits[-1].score >= threshold)


class Retrieval:
    """Finds the chunks a caller may read: the index, the authoritative access check, the catalog."""

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
        self.index = index
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

    def readable_or_not_found(self, ctx: QueryContext, document_ids: Sequence[str]) -> None:
        readable = self._checker.readable(ctx.store.id, ctx.principals, document_ids)
        for document_id in document_ids:
            if document_id not in readable:
                # The same words whether it does not exist or may not be read.
                raise NotFound(f"document {document_id!r} not found in store {ctx.store.id!r}")

    def search(
        self, ctx: QueryContext, threshold: float | None, k: int, run: Callable[[int], list[SearchHit]]
    ) -> list[SearchHit]:
        """Search with ``run`` (hits ranked by cosine), drop unreadable documents, apply the threshold, keep
        the top ``k``."""

        def batch(n: int) -> _Batch:
            hits = run(n)
            ctx.clock.lap("search")
            return _Batch(hits, _more(hits, n, threshold))

        return self._widened(ctx, threshold, k, batch)

    def candidates(
        self,
        ctx: QueryContext,
        threshold: float | None,
        k: int,
        restrict: Filter,
        dense: Callable[[Vector, int], list[SearchHit]],
    ) -> tuple[Vector, list[SearchHit]]:
        """The question's vector, and up to ``max(k, CANDIDATES)`` chunks, best first: the dense search
        ``dense(vector, n)`` and the lexical search of the question, both within ``restrict``, fused by the
        store's method, then the readable ones that pass the threshold (on the cosine, which is every fused
        hit's score). The caller cuts to ``k``.

        The lexical search needs no vector, so its first round runs beside the question's embedding, on a
        thread of its own when one is free (``Overlap``)."""
        store = ctx.store
        method = store.fusion
        want = max(k, self._candidates)
        first = first_fetch(want)
        early = (
            self._overlap.start(self.index.lexical, store.id, ctx.question, first, restrict)
            if runs_lexical(method)
            else None
        )
        vector = self.embed(ctx)

        def batch(n: int) -> _Batch:
            nonlocal early
            dense_hits: list[SearchHit] = []
            lexical_hits: list[SearchHit] = []
            if runs_dense(method):
                dense_hits = dense(vector, n)
                ctx.clock.lap("search")
            if runs_lexical(method):
                if early is not None and n == first:
                    lexical_hits, took_ms = early.result()
                    ctx.clock.lap("lexical_wait")
                    ctx.clock.add("lexical", took_ms)
                else:
                    lexical_hits = self.index.lexical(store.id, ctx.question, n, restrict)
                    ctx.clock.lap("lexical")
                early = None
            # Every chunk at or above the threshold is in a deep enough dense list, so only the dense list
            # widens for the threshold; the lexical list widens only past unreadable hits.
            fused = fuse(method, dense_hits, lexical_hits, vector, store.lexical_weight)
            return _Batch(fused, runs_dense(method) and _more(dense_hits, n, threshold), len(lexical_hits) >= n)

        return vector, self._widened(ctx, threshold, want, batch)

    def rerank(self, ctx: QueryContext, vector: Vector, hits: list[SearchHit]) -> tuple[list[SearchHit], str | None]:
        """The readable, thresholded candidates in the reranker's order (scores stay the cosines), and a warning
        when the reranker could not order them (the fused order is kept)."""
        return self._reranking.rerank(ctx, vector, hits)

    def _widened(
        self, ctx: QueryContext, threshold: float | None, k: int, run: Callable[[int], _Batch]
    ) -> list[SearchHit]:
        """The first ``k`` readable hits of ``run`` that pass the threshold.

        The index's ACL copy may be stale (a revocation not yet re-indexed), so
        the search fetches more than ``k`` and widens while the authoritative
        check (or the threshold) dropped hits and more may exist.
        """
        fetch = first_fetch(k)
        while True:
            found = run(fetch)
            hits = found.hits
            readable = self._checker.readable(ctx.store.id, ctx.principals, {h.chunk.document_id for h in hits})
            ctx.clock.lap("access")
            passed = [
                h for h in hits if h.chunk.document_id in readable and (threshold is None or h.score >= threshold)
            ]
            dropped = len(readable) < len({h.chunk.document_id for h in hits})
            if len(passed) >= k or not (found.more or (found.deeper and dropped)) or fetch >= MAX_FETCH:
                return passed[:k]
            fetch = min(fetch * 4, MAX_FETCH)

    def whole_document(self, store: Store, document_id: str, score: float) -> SearchHit:
        """The document's whole extracted text as one hit (``<id>#all``); ``score`` NaN = unknown."""
        document = self._catalog.get_document(store.id, document_id)
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

    def whole_budget(self) -> int:
        """Tokens whole documents may take: the generator's context less room for the prompt."""
        return max(self._context_tokens() - PROMPT_RESERVE_TOKENS, 0)

    def fits(self, store: Store, texts: Sequence[str]) -> bool:
        """Whether whole documents, together, fit the generator's context with room for the prompt."""
        budget = self.whole_budget()
        characters = sum(len(t) for t in texts)
        if characters <= budget:  # never more tokens than characters
            return True
        if characters > budget * 8:
            return False
        tokenizer = self._embedder_for(store.embedding_model).tokenizer
        used = 0
        for text in texts:
            used += len(tokenizer.token_spans(text))
            if used > budget:
                return False
        return True
