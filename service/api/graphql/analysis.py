"""GraphQL types and resolvers of ``summarizeDocument`` and ``compareDocuments`` (schema.py delegates here).

The chunk, document and timing types are those of ``results``, shared with the queries.
"""

from __future__ import annotations

from enum import Enum

import strawberry

from service.api.graphql.results import Chunk, SourceDocument, Timing
from service.domain.analysis import Comparison, ComparisonRequest, Summary, SummaryRequest
from service.query.cancellation import Cancellation
from service.security.tokens import Identity
from service.usecases.audit import AuditedQueries
from service.usecases.audited_analysis import AuditedAnalysis


@strawberry.enum(description="How long a summary is: SHORT (at most 5 sentences), MEDIUM (12), LONG (30).")
class SummaryLength(Enum):
    SHORT = "short"
    MEDIUM = "medium"
    LONG = "long"


@strawberry.type(description="One section of a summarised document (cited as [citation]) and what was said of it.")
class SummarySection:
    citation: int
    heading_path: list[str]
    chunk_ids: list[str]
    pages: list[int]
    anchor: str
    link: str | None
    summary: str = strawberry.field(description="The section's own summary (empty when the whole text was sent).")
    cited: bool = strawberry.field(description="Whether the summary text cites this section.")


@strawberry.type(
    description="A document's summary. extractive: its sentences are quoted from the document, no language model "
    "wrote them; method: whole, map_reduce or extractive; sources: the chunks of the cited sections."
)
class SummaryResult:
    query_id: str
    document_id: str
    title: str
    length: str
    summary: str
    extractive: bool
    method: str
    sections: list[SummarySection]
    sections_covered: int
    sources: list[Chunk]
    documents: list[SourceDocument]
    model_id: str | None
    llm_called: bool
    input_tokens: int
    output_tokens: int
    timings_ms: list[Timing]
    warnings: list[str]
    generation_error: str | None


@strawberry.type(description="What one document says about a topic: its best chunk, cited as [citation].")
class TopicEntry:
    document_id: str
    citation: int
    chunk: Chunk
    similarity: float
    statement: str


@strawberry.type(description="A topic of the compared documents; onlyIn: the one document that covers it.")
class ComparisonTopic:
    label: str
    documents: list[str]
    entries: list[TopicEntry]
    only_in: str | None
    relevance: float | None = strawberry.field(description="Cosine of the topic to the question; null without one.")


@strawberry.type(
    description="Documents compared by topic; comparison cites every statement as [n], the n-th of sources. "
    "extractive: quoted statements, no language model wrote them."
)
class ComparisonResult:
    query_id: str
    document_ids: list[str]
    question: str | None
    topics: list[ComparisonTopic]
    comparison: str
    extractive: bool
    sources: list[Chunk]
    documents: list[SourceDocument]
    model_id: str | None
    llm_called: bool
    input_tokens: int
    output_tokens: int
    timings_ms: list[Timing]
    warnings: list[str]
    generation_error: str | None


def _presented(result: Summary | Comparison) -> dict[str, object]:

    return {
        "sources": [Chunk.of(c) for c in result.sources],
        "documents": [SourceDocument.of(d) for d in result.documents],
        "timings_ms": [Timing(name=k, ms=v) for k, v in result.timings_ms.items()],
    }


def summarize_document(
    queries: AuditedQueries,
    identity: Identity,
    store_id: str,
    document_id: str,
    length: SummaryLength | None,
    cancel: Cancellation | None = None,
) -> SummaryResult:
    request = SummaryRequest(store_id, document_id, None if length is None else length.value)
    summary = AuditedAnalysis(queries).summarize(identity, request, "graphql", cancel=cancel)
    fields = summary.to_dict()
    sections = [SummarySection(**s.to_dict()) for s in summary.sections]
    kept = {
        k: fields[k]
        for k in SummaryResult.__annotations__
        if k not in ("sections", "sources", "documents", "timings_ms")
    }
    return SummaryResult(**kept, sections=sections, **_presented(summary))  # type: ignore[arg-type]


def compare_documents(
    queries: AuditedQueries,
    identity: Identity,
    store_id: str,
    document_ids: list[str],
    question: str | None,
    cancel: Cancellation | None = None,
) -> ComparisonResult:
    request = ComparisonRequest(store_id, tuple(document_ids), question)
    comparison = AuditedAnalysis(queries).compare(identity, request, "graphql", cancel=cancel)
    topics = [
        ComparisonTopic(
            label=t.label,
            documents=[e.document_id for e in t.entries],
            entries=[
                TopicEntry(
                    document_id=e.document_id,
                    citation=e.citation,
                    chunk=Chunk.of(e.chunk),
                    similarity=e.similarity,
                    statement=e.statement,
                )
                for e in t.entries
            ],
            only_in=t.only_in,
            relevance=t.relevance,
        )
        for t in comparison.topics
    ]
    fields = comparison.to_dict()
    skip = ("topics", "sources", "documents", "timings_ms")
    kept = {k: fields[k] for k in ComparisonResult.__annotations__ if k not in skip}
    return ComparisonResult(**kept, topics=topics, **_presented(comparison))  # type: ignore[arg-type]
