"""The rerank step of a query: the reranker orders the readable candidates; the scores stay the cosines.

The relevancy threshold and ``relevance`` stay on the retrieval cosine, so a
reranker only changes the order. A reranker that cannot answer (or answers
something that is not an ordering of the candidates) leaves the retrieval
order in place, and the answer says so in a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from acl.errors import Unavailable
from indexer.index import SearchHit
from indexer.index.port import Vector
from service.query.context import QueryContext
from service.ranking.port import Reranker

log = logging.getLogger("docqa.query")

#: How the warning ends: what the caller gets instead.
FALLBACK = "sources are in retrieval order"


class Reranking:
    """Calls the configured reranker (None: none) on a query's candidates."""

    def __init__(self, reranker: Reranker | None) -> None:
        self.reranker = reranker

    def rerank(
        self, ctx: QueryContext, question_vector: Vector, hits: Sequence[SearchHit]
    ) -> tuple[list[SearchHit], str | None]:
        """``hits`` in the reranker's order with their own (cosine) scores, and a warning when it could not rank.

        ``hits`` must already have passed the authoritative access check: each of them reaches the reranker.
        Lays a ``rerank`` lap on the query's clock.
        """
        if self.reranker is None or len(hits) < 2:
            return list(hits), None
        try:
            reranker = self.reranker.for_store(ctx.store.id).for_model(ctx.store.embedding_model)
            ranked = reranker.rerank(ctx.question, question_vector, hits)
            order = [r.hit for r in ranked]
            if sorted(map(id, order)) != sorted(map(id, hits)):
                raise Unavailable("reranker unavailable: it did not return each candidate once")
        except Unavailable as exc:
            ctx.clock.lap("rerank")
            reason = (
                exc.message
                if exc.message.startswith("reranker unavailable")
                else f"reranker unavailable: {exc.message}"
            )
            log.warning("store %s: %s; keeping the retrieval order", ctx.store.id, reason)
            return list(hits), f"{reason}; {FALLBACK}"
        ctx.clock.lap("rerank")
        return order, reranker.notice
