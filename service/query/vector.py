"""VectorQuery: the whole store, approximate kNN and BM25 with the caller's ACL filter inside both, fused."""

from __future__ import annotations

from indexer.index import acl_filter
from service.domain.filters import restrict
from service.domain.limits import Limits
from service.domain.queries import VectorQuery
from service.query.answerability import unspoken
from service.query.context import QueryContext, Scope
from service.query.retrieval import Retrieval


def vector_scope(retrieval: Retrieval, limits: Limits, ctx: QueryContext, query: VectorQuery) -> Scope:
    """The top chunks of the store the caller may read that pass the threshold."""
    k = limits.chunk_count(query.max_chunks, ctx.store.max_chunks)
    effective, threshold = ctx.thresholds()
    store_id, allowed = ctx.store.id, restrict(acl_filter(ctx.principals), query.filters)
    vector, candidates = retrieval.candidates(
        ctx, threshold, k, allowed, lambda v, n: retrieval.index.knn(store_id, v, n, allowed)
    )
    ranked, warning = retrieval.rerank(ctx, vector, candidates)
    missing = unspoken(ctx.question, ranked)
    warnings = (warning,) if warning else ()
    return Scope(ranked[:k], threshold, effective, one_document=False, warnings=warnings, unmentioned=missing)
