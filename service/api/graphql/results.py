"""What the query operations return in GraphQL: chunks, their documents, timings and the query result.

One presentation of the domain's ``Answer`` (``QueryResult.of``), shared by the queries, the streamed
answer (``askStream``), the analyses and the admin's relevancy preview.
"""

from __future__ import annotations

import strawberry

from service.domain.queries import Answer, SourceChunk
from service.domain.queries import SourceDocument as SourceDocumentRecord


@strawberry.type(description="A chunk an answer is based on, with its raw score and 0-1 relevance.")
class Chunk:
    document_id: str
    chunk_id: str
    title: str
    source_uri: str
    text: str
    heading_path: list[str]
    score: float | None
    relevance: float | None
    start: int
    end: int
    pages: list[int] = strawberry.field(description="1-based PDF pages the chunk spans; empty without pages.")
    anchor: str = strawberry.field(description="The HTML id of the chunk's section; empty when none.")
    link: str | None = strawberry.field(description="Where to open the chunk (http(s)); null when nowhere.")

    @staticmethod
    def of(chunk: SourceChunk) -> Chunk:
        # The one presentation of a source chunk, shared with gRPC and the CLI's JSON.
        return Chunk(**chunk.to_dict())


@strawberry.type(description="An answer's sources from one document, its chunks in rank order.")
class SourceDocument:
    document_id: str
    title: str
    source_uri: str
    link: str | None = strawberry.field(description="Where to open the document (http(s)); null when nowhere.")
    best_score: float | None
    best_relevance: float | None
    pages: list[int] = strawberry.field(description="The pages its chunks span, sorted.")
    chunks: list[Chunk]

    @staticmethod
    def of(document: SourceDocumentRecord) -> SourceDocument:
        fields = document.to_dict()
        fields["chunks"] = [Chunk.of(c) for c in document.chunks]
        return SourceDocument(**fields)


@strawberry.type(description="Milliseconds one step of a query took.")
class Timing:
    name: str
    ms: float


@strawberry.type(description="What every query class returns (the same shape as gRPC's QueryResponse).")
class QueryResult:
    query_id: str
    query_class: str
    answer: str | None
    chunks: list[Chunk]
    threshold: float | None
    level: float | None
    no_relevant_document: bool
    retry_without_threshold_allowed: bool
    model_id: str | None
    llm_called: bool
    input_tokens: int
    output_tokens: int
    generation_error: str | None
    timings_ms: list[Timing]
    documents: list[SourceDocument] = strawberry.field(
        description="The chunks grouped per document, in the rank order of each document's first chunk."
    )
    warnings: list[str] = strawberry.field(
        description="What a reader should know about this answer: citations of sources that do not exist were "
        "removed, sentences cite no source, the reranker was unavailable (sources in retrieval order)."
    )
    conversation_id: str | None = strawberry.field(
        default=None, description="The conversation this answer is a turn of (a new one when none was named)."
    )
    rewritten_question: str | None = strawberry.field(
        default=None, description="What was searched: the follow-up rewritten from the conversation's earlier turns."
    )

    @staticmethod
    def of(answer: Answer) -> QueryResult:
        return QueryResult(
            query_id=answer.query_id,
            query_class=answer.query_class,
            answer=answer.answer,
            chunks=[Chunk.of(c) for c in answer.chunks],
            threshold=answer.threshold,
            level=answer.level,
            no_relevant_document=answer.no_relevant_document,
            retry_without_threshold_allowed=answer.retry_without_threshold_allowed,
            model_id=answer.model_id,
            llm_called=answer.llm_called,
            input_tokens=answer.input_tokens,
            output_tokens=answer.output_tokens,
            generation_error=answer.generation_error,
            timings_ms=[Timing(name=k, ms=v) for k, v in answer.timings_ms.items()],
            documents=[SourceDocument.of(d) for d in answer.documents],
            warnings=list(answer.warnings),
            conversation_id=answer.conversation_id,
            rewritten_question=answer.rewritten_question,
        )
