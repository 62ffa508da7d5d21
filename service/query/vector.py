"""VectorQuery: the whole store, approximate kNN and BM25 with the caller's ACL filter inside both, fused."""

from __future__ import annotations

from collections import Counter

from indexer.index import SearchHit
from service.domain.limits import Limits
from service.domain.queries import VectorQuery
from service.query.answerability import unspoken
from service.query.context import QueryContext, Scope
from service.query.guarded import Within
from service.query.retrieval import Retrieval


def vector_scope(retrieval: Retrieval, limits: Limits, ctx: QueryContext, query: VectorQuery) -> Scope:
    """The top chunks of the store the caller may read that pass the threshold, at most the store's
    ``max_chunks_per_document`` of any one document."""
    k = limits.chunk_count(query.max_chunks, ctx.store.max_chunks)
    effective, threshold = ctx.thresholds()
    vector, candidates = retrieval.candidates(ctx, threshold, k, Within(None, query.filters), exact=False)
    ranked, warning = retrieval.rerank(ctx, vector, candidates)
    missing = unspoken(ctx.question, ranked)
    warnings = (warning,) if warning else ()
    sources = per_document(ranked, ctx.store.max_chunks_per_document)[:k]
    return Scope(sources, threshold, effective, one_document=False, warnings=warnings, unmentioned=missing)


def per_document(ranked: list[SearchHit], cap: int) -> list[SearchHit]:
    """``ranked`` in its order without the chunks past the first ``cap`` of each document (0: all of them).

    Applied to readable chunks that passed the threshold, before the cut to k, so a capped document's
    place goes to the next chunk of another one."""
    if cap <= 0:
        return ranked
    seen: Counter[str] = Counter()
    kept = []
    for hit in ranked:
        seen[hit.chunk.document_id] += 1
        if seen[hit.chunk.document_id] <= cap:
            kept.append(hit)
    return kept
