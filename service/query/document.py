"""DocumentQuery: one document, sent whole while it fits the generator's context; else searched."""

from __future__ import annotations

import math

from indexer.index import SearchHit
from service.domain.filters import MetadataFilter
from service.domain.limits import Limits
from service.query.answerability import unspoken
from service.query.context import QueryContext, Scope
from service.query.guarded import Within
from service.query.multi_document import multi_document_scope
from service.query.retrieval import Retrieval


def document_scope(
    retrieval: Retrieval, limits: Limits, ctx: QueryContext, document_id: str, filters: MetadataFilter | None = None
) -> Scope:
    """The whole text as one chunk (no threshold), scored by its best chunk; NotFound if unreadable.

    With ``filters`` that the document does not match, no chunk at all (whether or not it exists is
    already settled: an unreadable document is NotFound first)."""
    retrieval.readable_or_not_found(ctx, [document_id])
    whole = retrieval.whole_document(ctx, document_id, math.nan)
    if not retrieval.fits(ctx.store, [whole.chunk.text]):
        return multi_document_scope(retrieval, limits, ctx, [document_id], None, filters)
    vector = retrieval.embed(ctx)
    reads = retrieval.reads(ctx)
    [best] = reads.checked(reads.exhaustive(vector, 1, Within((document_id,), filters))).lists
    ctx.clock.lap("search")
    if not best and filters is not None and not filters.is_empty:
        return Scope([], None, None, one_document=True)
    if best:
        whole = SearchHit(whole.chunk, best[0].score)
    return Scope([whole], None, None, one_document=True, unmentioned=unspoken(ctx.question, [whole]))
