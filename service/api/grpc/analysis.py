"""``docqa.v1.AnalysisService``: summaries and comparisons, unary and server-streaming, audited like queries."""

from __future__ import annotations

import queue
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from service.api.grpc.context import Services, call_cancellation, check_deadline, rpc
from service.api.grpc.query import chunk_message, document_message
from service.api.grpc.stubs import analysis_pb2, analysis_pb2_grpc
from service.domain.analysis import Comparison, ComparisonRequest, Summary, SummaryRequest
from service.query.cancellation import Cancellation
from service.usecases.audited_analysis import AuditedAnalysis

T = TypeVar("T", Summary, Comparison)
M = TypeVar("M", bound=Message)
_PIECE = re.compile(r"\S+\s*|\s+")
_LENGTHS = {0: None, 1: "short", 2: "medium", 3: "long"}


def summary_request(request: analysis_pb2.SummarizeDocumentRequest) -> SummaryRequest:
    # An unknown enum number reaches the engine as itself and is refused there (INVALID_ARGUMENT).
    return SummaryRequest(request.store_id, request.document_id, _LENGTHS.get(request.length, str(request.length)))


def comparison_request(request: analysis_pb2.CompareDocumentsRequest) -> ComparisonRequest:
    question = request.question if request.HasField("question") else None
    return ComparisonRequest(request.store_id, tuple(request.document_ids), question)


def _optional(message: M, values: dict[str, Any]) -> M:
    for name, value in values.items():
        if value is not None:
            setattr(message, name, value)
    return message


def summary_message(services: Services, summary: Summary) -> analysis_pb2.SummaryResponse:
    sections = [
        _optional(
            analysis_pb2.SummarySection(
                citation=s.citation,
                heading_path=list(s.heading_path),
                chunk_ids=list(s.chunk_ids),
                pages=list(s.pages),
                anchor=s.anchor,
                summary=s.summary,
                cited=s.cited,
            ),
            {"link": s.link},
        )
        for s in summary.sections
    ]
    message = analysis_pb2.SummaryResponse(
        query_id=summary.query_id,
        document_id=summary.document_id,
        title=summary.title,
        length=summary.length,
        summary=summary.summary,
        extractive=summary.extractive,
        method=summary.method,
        sections=sections,
        sections_covered=summary.sections_covered,
        sources=[chunk_message(services, c) for c in summary.sources],
        documents=[document_message(services, d) for d in summary.documents],
        llm_called=summary.llm_called,
        input_tokens=summary.input_tokens,
        output_tokens=summary.output_tokens,
        timings_ms=dict(summary.timings_ms),
        warnings=list(summary.warnings),
    )
    return _optional(message, {"model_id": summary.model_id, "generation_error": summary.generation_error})


def comparison_message(services: Services, comparison: Comparison) -> analysis_pb2.ComparisonResponse:
    topics = [
        _optional(
            analysis_pb2.ComparisonTopic(
                label=t.label,
                entries=[
                    analysis_pb2.TopicEntry(
                        document_id=e.document_id,
                        citation=e.citation,
                        chunk=chunk_message(services, e.chunk),
                        similarity=e.similarity,
                        statement=e.statement,
                    )
                    for e in t.entries
                ],
            ),
            {"only_in": t.only_in, "relevance": t.relevance},
        )
        for t in comparison.topics
    ]
    message = analysis_pb2.ComparisonResponse(
        query_id=comparison.query_id,
        document_ids=list(comparison.document_ids),
        topics=topics,
        comparison=comparison.comparison,
        extractive=comparison.extractive,
        sources=[chunk_message(services, c) for c in comparison.sources],
        documents=[document_message(services, d) for d in comparison.documents],
        llm_called=comparison.llm_called,
        input_tokens=comparison.input_tokens,
        output_tokens=comparison.output_tokens,
        timings_ms=dict(comparison.timings_ms),
        warnings=list(comparison.warnings),
    )
    return _optional(
        message,
        {
            "question": comparison.question,
            "model_id": comparison.model_id,
            "generation_error": comparison.generation_error,
        },
    )


def streamed(
    services: Services,
    context: grpc.ServicerContext,
    work: Callable[[Callable[[str], None], Cancellation], T],
) -> Iterator[str | T]:
    """Text pieces as the generator produces them, then the result, from the bounded stream pool; stops once
    the call ends (as ``service.api.grpc.streaming.streamed_answer`` does for queries)."""
    cancel = Cancellation.within(context.time_remaining())
    events: queue.Queue[tuple[str, Any]] = queue.Queue()

    def call_ended() -> None:
        cancel.cancel()
        events.put(("ended", None))

    if not context.add_callback(call_ended):
        call_ended()
    cancel.check()
    future = services.streams.submit(lambda: work(lambda t: events.put(("text", t)), cancel))
    future.add_done_callback(lambda done: events.put(("done", done)))
    while True:
        kind, item = events.get()
        if kind == "done":
            result: T = item.result()
            cancel.check()
            yield result
            return
        cancel.check()
        if kind == "text":
            yield item


class AnalysisServicer(analysis_pb2_grpc.AnalysisServiceServicer):
    """Parses, asks the engine through the audit layer, and answers."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.analysis = AuditedAnalysis(services.queries)

    def _stream(
        self,
        context: grpc.ServicerContext,
        work: Callable[[Callable[[str], None], Cancellation], T],
        text_of: Callable[[T], str],
        event: Callable[..., M],
        done: Callable[[T], Message],
    ) -> Iterator[M]:
        check_deadline(context)
        result: T | None = None
        pieces = False
        for item in streamed(self.services, context, work):
            if isinstance(item, str):
                pieces = True
                yield event(text=item)
            else:
                result = item
        assert result is not None  # streamed ends with the result or raises
        if not pieces:  # nothing was generated piece by piece (extractive): the text whole, word by word
            for piece in _PIECE.findall(text_of(result)):
                yield event(text=piece)
        check_deadline(context)
        yield event(done=done(result))

    @rpc
    def SummarizeDocument(
        self, request: analysis_pb2.SummarizeDocumentRequest, context: grpc.ServicerContext
    ) -> analysis_pb2.SummaryResponse:
        identity = self.services.identity(context)
        check_deadline(context)
        summary = self.analysis.summarize(identity, summary_request(request), "grpc", cancel=call_cancellation(context))
        return summary_message(self.services, summary)

    @rpc
    def CompareDocuments(
        self, request: analysis_pb2.CompareDocumentsRequest, context: grpc.ServicerContext
    ) -> analysis_pb2.ComparisonResponse:
        identity = self.services.identity(context)
        check_deadline(context)
        comparison = self.analysis.compare(
            identity, comparison_request(request), "grpc", cancel=call_cancellation(context)
        )
        return comparison_message(self.services, comparison)

    @rpc
    def StreamSummarizeDocument(
        self, request: analysis_pb2.SummarizeDocumentRequest, context: grpc.ServicerContext
    ) -> Iterator[analysis_pb2.SummaryEvent]:
        identity = self.services.identity(context)
        parsed = summary_request(request)
        yield from self._stream(
            context,
            lambda on_text, cancel: self.analysis.summarize(identity, parsed, "grpc", on_text, cancel),
            lambda s: s.summary,
            analysis_pb2.SummaryEvent,
            lambda s: summary_message(self.services, s),
        )

    @rpc
    def StreamCompareDocuments(
        self, request: analysis_pb2.CompareDocumentsRequest, context: grpc.ServicerContext
    ) -> Iterator[analysis_pb2.ComparisonEvent]:
        identity = self.services.identity(context)
        parsed = comparison_request(request)
        yield from self._stream(
            context,
            lambda on_text, cancel: self.analysis.compare(identity, parsed, "grpc", on_text, cancel),
            lambda c: c.comparison,
            analysis_pb2.ComparisonEvent,
            lambda c: comparison_message(self.services, c),
        )
