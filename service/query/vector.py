"""VectorQuery: the whole store, approximate kNN and BM25 with the caller's ACL filter inside both, fused."""

from __future__ import annotations

from service.domain.limits import Limits
from service.domain.queries import VectorQuery
from service.query.answerability import unspoken
from service.query.context import QueryContext, Scope
from service.query.guarded import Within
from service.query.retrieval import Retrieval


def vector_scope(retrieval: Retrieval, limits: Limits, ctx: QueryContext, query: VectorQuery) -> Scope:
    """The top chunks of the store the caller may read that pass the threshold."""
    k = limits.chunk_count(query.max_chunks, ctx.store.max_chunks)
    effective, threshold = ctx.thresholds()
    vector, candidates = retrieval.candidates(ctx, threshold, k, Within(None, query.filters), exact=False)
    ranked, warning = retrieval.rerank(ctx, vector, candidates)
    missing = unspoken(ctx.question, ranked)
    warnings = (warning,) if warning else ()
    return Scope(ranked[:k], threshold, effective, one_document=False, warnings=warnings, unmentioned=missing)
