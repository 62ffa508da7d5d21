"""``askStream``: an answer over GraphQL as it is generated (a subscription; the web console reads it as
server-sent events from ``POST /graphql`` with ``Accept: text/event-stream``).

The query runs in a worker thread through the same audited engine as every other query, so the caller's
access is applied before the generator sees a chunk; each piece of answer text is an event, the last event
is the whole result (its sources included). The worker is one of the server's stream pool, shared with
gRPC's streaming calls: at most ``limits.max_streams`` answers stream at once per server, whatever the
protocol, and one more is refused RESOURCE_EXHAUSTED at once; other requests never wait for a stream's
thread. When the client goes away the subscription is closed, the query's ``Cancellation`` is set, and the
worker stops at the next piece.

Errors leave as ``GraphQLError``s that already carry the public message and ``extensions.code`` of the
one error table: a subscription's events do not pass through the schema's error extension.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from typing import Any

import strawberry

from acl.errors import DocQAError, InvalidArgument
from graphql import GraphQLError
from service.api.errors import bounded_message, for_remote_caller, mapping_for, public_message
from service.api.graphql.context import RequestContext
from service.api.graphql.results import QueryResult
from service.domain.filters import MetadataFilter
from service.domain.queries import DocumentQuery, MultiDocumentQuery, Query, VectorQuery
from service.query.cancellation import Cancellation

log = logging.getLogger("docqa.graphql")


@strawberry.type(description="One event of a streamed answer: a piece of its text, or (last) the whole result.")
class AnswerEvent:
    text: str | None = strawberry.field(description="The next piece of the answer's text (null in the last event).")
    result: QueryResult | None = strawberry.field(description="The whole result, sources included (last event).")


def stream_query(
    store_id: str,
    question: str,
    document_ids: list[str] | None,
    document_id: str | None,
    level: float | None,
    max_chunks: int | None,
    perform_llm_query: bool,
    filters: MetadataFilter | None,
    conversation_id: str | None,
) -> Query:
    """The query class the arguments name: one document, chosen documents, or (neither) the whole store."""
    if document_id is not None and document_ids is not None:
        raise InvalidArgument("name either documentId (one document) or documentIds (chosen documents), not both")
    if document_id is not None:
        if max_chunks is not None:
            raise InvalidArgument("maxChunks does not apply to a one-document question")
        return DocumentQuery(store_id, question, document_id, level, perform_llm_query, filters, conversation_id)
    if document_ids is not None:
        ids = tuple(document_ids)
        return MultiDocumentQuery(
            store_id, question, ids, level, max_chunks, perform_llm_query, filters, conversation_id
        )
    return VectorQuery(store_id, question, level, max_chunks, perform_llm_query, filters, conversation_id)


async def answer_events(context: RequestContext, build: Any) -> AsyncGenerator[AnswerEvent, None]:
    """The events of one streamed answer; ``build`` makes the query (it may raise InvalidArgument)."""
    services = context.services
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    cancel = Cancellation()

    def on_text(piece: str) -> None:
        loop.call_soon_threadsafe(events.put_nowait, ("text", piece))

    try:
        query: Query = build()
        identity = await asyncio.to_thread(context.identity)
        submitted = services.stream_pool.submit(
            lambda: services.queries.ask(identity, query, "graphql", on_text, cancel)
        )
    except Exception as exc:
        raise _public(context, exc) from None
    worker = asyncio.wrap_future(submitted, loop=loop)
    worker.add_done_callback(lambda done: events.put_nowait(("done", _retrieved(done))))
    try:
        while True:
            kind, item = await events.get()
            if kind == "text":
                yield AnswerEvent(text=item, result=None)
                continue
            try:
                answer = item.result()
            except Exception as exc:
                raise _public(context, exc) from None
            services.metrics.requests.labels("graphql", "askStream", "OK").inc()
            yield AnswerEvent(text=None, result=QueryResult.of(answer))
            return
    finally:
        cancel.cancel()  # the client went away (or the answer is done): the worker stops at its next piece


def _retrieved(done: asyncio.Future[Any]) -> asyncio.Future[Any]:
    """``done``, its error marked as seen: a stream its client left never reads it (the log would cry)."""
    if not done.cancelled():
        done.exception()
    return done


def _public(context: RequestContext, exc: Exception) -> GraphQLError:
    """``exc`` as the caller may see it: the public message and the error table's code."""
    if not isinstance(exc, DocQAError):
        log.error("internal error in askStream", exc_info=exc)
    error = for_remote_caller(exc)
    mapping = mapping_for(error)
    context.services.metrics.requests.labels("graphql", "askStream", mapping.grpc_status).inc()
    return GraphQLError(bounded_message(public_message(error)), extensions={"code": mapping.graphql_code})
