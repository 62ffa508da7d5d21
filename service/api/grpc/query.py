"""``docqa.v1.QueryService``: the three query classes, unary and server-streaming."""

from __future__ import annotations

import re
from collections.abc import Iterator

import grpc

from acl.errors import InvalidArgument
from service.api.grpc.context import Services, call_cancellation, check_deadline, rpc
from service.api.grpc.filters import query_filter
from service.api.grpc.streaming import streamed_answer
from service.api.grpc.stubs import common_pb2, query_pb2, query_pb2_grpc
from service.domain.queries import (
    Answer,
    DocumentQuery,
    MultiDocumentQuery,
    Query,
    SourceChunk,
    SourceDocument,
    VectorQuery,
)

#: Streamed answer pieces: a word with the spaces after it.
_PIECE = re.compile(r"\S+\s*|\s+")

#: The three query requests (the fields they share are typed alike in each).
QueryRequest = query_pb2.VectorQueryRequest | query_pb2.MultiDocumentQueryRequest | query_pb2.DocumentQueryRequest


def _level(request: QueryRequest) -> float | None:
    return request.level if request.HasField("level") else None


def _conversation(request: QueryRequest) -> str | None:
    return request.conversation_id if request.HasField("conversation_id") else None


def _max_chunks(request: query_pb2.VectorQueryRequest | query_pb2.MultiDocumentQueryRequest) -> int | None:
    return request.max_chunks if request.HasField("max_chunks") else None


def _llm(request: QueryRequest) -> bool:
    return bool(request.perform_llm_query) if request.HasField("perform_llm_query") else True


def vector_query(request: query_pb2.VectorQueryRequest) -> VectorQuery:
    return VectorQuery(
        request.store_id,
        request.question,
        _level(request),
        _max_chunks(request),
        _llm(request),
        query_filter(request),
        conversation_id=_conversation(request),
    )


def multi_document_query(request: query_pb2.MultiDocumentQueryRequest) -> MultiDocumentQuery:
    if len(request.document_ids) == 0:
        raise InvalidArgument("at least one document id is required")
    return MultiDocumentQuery(
        request.store_id,
        request.question,
        tuple(request.document_ids),
        _level(request),
        _max_chunks(request),
        _llm(request),
        query_filter(request),
        conversation_id=_conversation(request),
    )


def document_query(request: query_pb2.DocumentQueryRequest) -> DocumentQuery:
    if not request.document_id:
        raise InvalidArgument("document_id is required")
    return DocumentQuery(
        request.store_id,
        request.question,
        request.document_id,
        _level(request),
        _llm(request),
        query_filter(request),
        conversation_id=_conversation(request),
    )


def chunk_message(services: Services, chunk: SourceChunk) -> common_pb2.SourceChunk:
    # The one presentation of a source chunk (as GraphQL and the CLI's JSON); proto3 optionals stay unset for None.
    fields = {name: value for name, value in chunk.to_dict().items() if value is not None}
    return common_pb2.SourceChunk(**fields)


def document_message(services: Services, document: SourceDocument) -> query_pb2.SourceDocument:
    # The one presentation of a document's sources, its chunks as chunk_message presents them.
    fields = {name: value for name, value in document.to_dict().items() if value is not None}
    fields["chunks"] = [chunk_message(services, c) for c in document.chunks]
    return query_pb2.SourceDocument(**fields)


def answer_message(services: Services, answer: Answer) -> query_pb2.QueryResponse:
    message = query_pb2.QueryResponse(
        query_id=answer.query_id,
        query_class=answer.query_class,
        chunks=[chunk_message(services, c) for c in answer.chunks],
        documents=[document_message(services, d) for d in answer.documents],
        no_relevant_document=answer.no_relevant_document,
        retry_without_threshold_allowed=answer.retry_without_threshold_allowed,
        llm_called=answer.llm_called,
        input_tokens=answer.input_tokens,
        output_tokens=answer.output_tokens,
        timings_ms=dict(answer.timings_ms),
        warnings=list(answer.warnings),
    )
    for name in (
        "answer",
        "threshold",
        "level",
        "model_id",
        "generation_error",
        "conversation_id",
        "rewritten_question",
    ):
        value = getattr(answer, name)
        if value is not None:
            setattr(message, name, value)
    return message


class QueryServicer(query_pb2_grpc.QueryServiceServicer):
    """Parses, asks the engine through the audit layer, and answers."""

    def __init__(self, services: Services) -> None:
        self.services = services

    def _ask(self, query: Query, context: grpc.ServicerContext) -> Answer:
        identity = self.services.identity(context)
        check_deadline(context)
        # The work stops when the call ends (cancelled, or past its deadline): audited so, not kept as answered.
        return self.services.queries.ask(identity, query, "grpc", cancel=call_cancellation(context))

    def _stream(self, query: Query, context: grpc.ServicerContext) -> Iterator[query_pb2.QueryEvent]:
        """Answer text first, as the generator produces it, then each scored source, each document's
        sources, then the whole result.

        The answer is generated in the bounded stream pool (``service.api.grpc.streaming``)
        and stops when the client cancels or its deadline passes.
        """
        identity = self.services.identity(context)
        check_deadline(context)
        event = query_pb2.QueryEvent
        streamed = False
        answer: Answer | None = None
        for item in streamed_answer(self.services.streams, self.services.queries, identity, query, context):
            if isinstance(item, Answer):
                answer = item
            else:
                streamed = True
                yield event(text=item)
        assert answer is not None  # streamed_answer ends with the answer or raises
        if not streamed:  # no generation (nothing relevant, no LLM, or the LLM failed): the statement whole
            for piece in _PIECE.findall(answer.answer or ""):
                yield event(text=piece)
        check_deadline(context)
        for chunk in answer.chunks:
            yield event(source=chunk_message(self.services, chunk))
        for document in answer.documents:
            yield event(document=document_message(self.services, document))
        yield event(done=answer_message(self.services, answer))

    @rpc
    def VectorQuery(
        self, request: query_pb2.VectorQueryRequest, context: grpc.ServicerContext
    ) -> query_pb2.QueryResponse:
        return answer_message(self.services, self._ask(vector_query(request), context))

    @rpc
    def MultiDocumentQuery(
        self, request: query_pb2.MultiDocumentQueryRequest, context: grpc.ServicerContext
    ) -> query_pb2.QueryResponse:
        return answer_message(self.services, self._ask(multi_document_query(request), context))

    @rpc
    def DocumentQuery(
        self, request: query_pb2.DocumentQueryRequest, context: grpc.ServicerContext
    ) -> query_pb2.QueryResponse:
        return answer_message(self.services, self._ask(document_query(request), context))

    @rpc
    def StreamVectorQuery(
        self, request: query_pb2.VectorQueryRequest, context: grpc.ServicerContext
    ) -> Iterator[query_pb2.QueryEvent]:
        yield from self._stream(vector_query(request), context)

    @rpc
    def StreamMultiDocumentQuery(
        self, request: query_pb2.MultiDocumentQueryRequest, context: grpc.ServicerContext
    ) -> Iterator[query_pb2.QueryEvent]:
        yield from self._stream(multi_document_query(request), context)

    @rpc
    def StreamDocumentQuery(
        self, request: query_pb2.DocumentQueryRequest, context: grpc.ServicerContext
    ) -> Iterator[query_pb2.QueryEvent]:
        yield from self._stream(document_query(request), context)
