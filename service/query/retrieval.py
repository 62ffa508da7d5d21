"""The common search path: embed, search with the ACL inside, check access, threshold, widen."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from acl.checker import AccessChecker
from acl.errors import NotFound
from indexer.embedder import Embedder
from indexer.index import ChunkRecord, Index, SearchHit
from indexer.index.port import Vector
from service.domain.store import Store
from service.persistence.ports import DocumentCatalog
from service.query.context import QueryContext

#: Tokens kept free for the template, the question and the answer when a
#: whole document is sent.
PROMPT_RESERVE_TOKENS = 512


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
    ) -> None:
        self.index = index
        self._catalog = catalog
        self._checker = checker
        self._embedder_for = embedder_for
        self._context_tokens = context_tokens

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
        """Search, drop unreadable documents, apply the threshold, keep the top ``k``.

        The index's ACL copy may be stale (a revocation not yet re-indexed), so
        the search fetches more than ``k`` and widens while the authoritative
        check drops hits and more may exist.
        """
        fetch = min(max(2 * k, k + 8), 10_000) if k < 10_000 else k
        while True:
            hits = run(fetch)
            ctx.clock.lap("search")
            readable = self._checker.readable(ctx.store.id, ctx.principals, {h.chunk.document_id for h in hits})
            ctx.clock.lap("access")
            passed = [
                h for h in hits if h.chunk.document_id in readable and (threshold is None or h.score >= threshold)
            ]
            below = threshold is not None and bool(hits) and hits[-1].score < threshold
            if len(passed) >= k or len(hits) < fetch or below or fetch >= 10_000:
                return passed[:k]
            fetch = min(fetch * 4, 10_000)

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
