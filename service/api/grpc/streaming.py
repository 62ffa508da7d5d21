"""Streaming answers over gRPC: a stream that stops when its caller goes away.

A streaming answer is generated in a worker thread of the server's stream pool
(``service.api.stream_pool``, shared with GraphQL's ``askStream``) that hands
text pieces to the servicer over a queue, so each piece reaches the client
while the generator is still working.

When the client cancels, or its deadline passes, gRPC ends the call and runs
its callbacks: the query's ``Cancellation`` is set, the servicer returns at
once, and the worker stops at the next piece the language model sends — the
generator's stream is closed, so the connection to the model is dropped and
it stops generating (and being paid) for nobody. The worker's slot is free
again as soon as it stops.
"""

from __future__ import annotations

import queue
from collections.abc import Iterator
from typing import Any

import grpc

from service.api.stream_pool import StreamPool
from service.domain.queries import Answer, Query
from service.query.cancellation import Cancellation
from service.security.tokens import Identity
from service.usecases.audit import AuditedQueries


def streamed_answer(
    pool: StreamPool,
    queries: AuditedQueries,
    identity: Identity,
    query: Query,
    context: grpc.ServicerContext,
) -> Iterator[str | Answer]:
    """Text pieces as the generator produces them, then the answer; stops as soon as the call ends.

    Raises Cancelled or DeadlineExceeded once the client went away or its
    deadline passed (the worker stops at the next piece), ResourceExhausted
    when every worker is busy, and whatever the query itself raised.
    """
    cancel = Cancellation.within(context.time_remaining())
    events: queue.Queue[tuple[str, Any]] = queue.Queue()

    def call_ended() -> None:  # gRPC runs this when the call ends, however it ends
        cancel.cancel()
        events.put(("ended", None))

    if not context.add_callback(call_ended):
        call_ended()  # already over
    cancel.check()
    future = pool.submit(lambda: queries.ask(identity, query, "grpc", lambda t: events.put(("text", t)), cancel))
    future.add_done_callback(lambda done: events.put(("done", done)))
    while True:
        kind, item = events.get()
        if kind == "done":
            answer: Answer = item.result()  # re-raises the worker's error here, to be mapped
            cancel.check()
            yield answer
            return
        cancel.check()  # "ended": the client went away or the deadline passed
        if kind == "text":
            yield item
