"""The web console's document picker and relevancy preview as GraphQL types; what they list and score is
decided by the use case (``service.usecases.console``).
"""

from __future__ import annotations

import strawberry

from service.api.graphql.results import Chunk
from service.bootstrap import App
from service.security.tokens import Identity
from service.usecases import console
from service.usecases.audit import AuditedQueries


@strawberry.type(description="A document the caller may read (for choosing what to ask about).")
class DocumentInfo:
    document_id: str
    title: str
    source_uri: str = strawberry.field(description="The indexed URI; only http(s) is shown to remote callers.")
    content_type: str | None = strawberry.field(description="Its media type, where its name tells.")
    link: str | None = strawberry.field(description="Where to open it (http(s)); null when nowhere.")
    chunks: int


@strawberry.type(description="A chunk of the preview and the highest level at which it still passes.")
class PreviewChunk:
    chunk: Chunk
    max_passing_level: float = strawberry.field(
        description="The chunk passes at level L when L is 0 or at most this (its relevance on the store's scale)."
    )


@strawberry.type(
    description="A sample question's top chunks with no threshold, scored on the store's scale: a chunk passes "
    "at level L when L == 0 or L <= maxPassingLevel; the threshold at L is minThreshold + L × (maxThreshold − "
    "minThreshold)."
)
class RelevancyPreview:
    store_id: str
    level: float = strawberry.field(description="The store's level now.")
    min_threshold: float
    max_threshold: float
    chunks: list[PreviewChunk]
    notice: str | None = strawberry.field(
        default=None,
        description="Why there are no chunks to judge, when it is not the question: the admin may read none of "
        "the store's documents.",
    )


def readable_documents(
    app: App, identity: Identity, store_id: str, search: str | None, first: int | None
) -> list[DocumentInfo]:
    """The documents of ``store_id`` the caller may read whose id or title holds ``search``, by title."""
    return [
        DocumentInfo(
            document_id=d.document_id,
            title=d.title,
            source_uri=d.source_uri,
            content_type=d.content_type,
            link=d.link,
            chunks=d.chunks,
        )
        for d in console.readable_documents(app, identity, store_id, search, first)
    ]


def relevancy_preview(
    app: App, queries: AuditedQueries, identity: Identity, store_id: str, question: str, k: int | None
) -> RelevancyPreview:
    """The top ``k`` chunks the admin may read for ``question``, with no threshold (admin only)."""
    preview = console.relevancy_preview(app, queries, identity, store_id, question, k)
    return RelevancyPreview(
        store_id=preview.store_id,
        level=preview.level,
        min_threshold=preview.min_threshold,
        max_threshold=preview.max_threshold,
        chunks=[PreviewChunk(chunk=Chunk.of(c), max_passing_level=c.relevance or 0.0) for c in preview.chunks],
        notice=preview.notice,
    )
