"""MultiDocumentQuery: exact kNN and BM25 within chosen documents (and the ACL), fused; -1 sends whole documents."""

from __future__ import annotations

from acl.errors import InvalidArgument
from service.domain.filters import MetadataFilter
from service.domain.limits import WHOLE_DOCUMENTS, Limits
from service.query.answerability import unspoken
from service.query.context import QueryContext, Scope
from service.query.guarded import Within
from service.query.retrieval import Retrieval


def multi_document_scope(
    retrieval: Retrieval,
    limits: Limits,
    ctx: QueryContext,
    document_ids: list[str],
    max_chunks: int | None,
    filters: MetadataFilter | None = None,
) -> Scope:
    """The top chunks of these documents (NotFound for any the caller may not read), or their whole texts;
    ``filters`` narrow both (a readable document that does not match them simply gives nothing)."""
    k = limits.chunk_count(max_chunks, ctx.store.max_chunks, allow_whole=True)
    retrieval.readable_or_not_found(ctx, document_ids)
    effective, threshold = ctx.thresholds()
    within = Within(tuple(document_ids), filters)
    one = len(document_ids) == 1
    if k != WHOLE_DOCUMENTS:
        vector, candidates = retrieval.candidates(ctx, threshold, k, within, exact=True)
        ranked, warning = retrieval.rerank(ctx, vector, candidates)
        missing = unspoken(ctx.question, ranked)
        warnings = (warning,) if warning else ()
        return Scope(ranked[:k], threshold, effective, one_document=one, warnings=warnings, unmentioned=missing)
    # Whole documents: rank each by its best chunk (one bounded request), send the full text.
    documents = len(set(document_ids))
    vector = retrieval.embed(ctx)
    best = retrieval.search(ctx, None, documents, lambda reads, n: reads.best_of_each(vector, n, within))
    ranked = []
    characters = 0
    for h in best:
        if threshold is not None and h.score < threshold:
            continue
        ranked.append(retrieval.whole_document(ctx, h.chunk.document_id, h.score))
        characters += len(ranked[-1].chunk.text)
        if retrieval.past_any_context(characters):  # refused before the rest are read (``fits`` says no below)
            break
    if not retrieval.fits(ctx.store, [h.chunk.text for h in ranked]):
        # Whole documents are bounded like one document is: by the model's context.
        raise InvalidArgument(
            f"the whole texts of these {documents} documents exceed the language model's context "
            f"budget of {retrieval.whole_budget()} tokens: ask for max_chunks between 1 and "
            f"{limits.max_k}, or name fewer documents"
        )
    return Scope(ranked, threshold, effective, one_document=one, unmentioned=unspoken(ctx.question, ranked))
