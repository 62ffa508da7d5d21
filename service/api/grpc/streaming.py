"""Streaming answers over gRPC: a bounded pool of workers, and a stream that stops when its caller goes away.

A streaming answer is generated in a worker thread that hands text pieces to
the servicer over a queue, so each piece reaches the client while the
generator is still working. The workers form a pool of ``limits.max_streams``
threads, and admission is decided up front: when every worker is busy the call
is refused with RESOURCE_EXHAUSTED at once, never queued (a queue would only
hold callers past their deadlines while the work they wait for piles up).

When the client cancels, or its deadline passes, gRPC ends the call and runs
its callbacks: the query's ``Cancellation`` is set, the servicer returns at
once, and the worker stops at the next piece the language model sends — the
generator's stream is closed, so the connection to the model is dropped and
it stops generating (and being paid) for nobody. The worker's slot is free
again as soon as it stops.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import grpc

from acl.errors import ResourceExhausted, Unavailable
from service.api.audit import AuditedQueries
from service.domain.queries import Answer, Query
from service.query.cancellation import Cancellation
from service.security.tokens import Identity

T = TypeVar("T")


class StreamPool:
    """At most ``size`` streaming answers are generated at once; one more is refused, never queued."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("a stream pool needs at least one worker")
        self.size = size
        self._slots = threading.BoundedSemaphore(size)
        self._executor = ThreadPoolExecutor(max_workers=size, thread_name_prefix="docqa-stream")

    def submit(self, work: Callable[[], T]) -> Future[T]:
        """Run ``work`` on a free worker; ResourceExhausted at once when there is none.

        The slot is given back before the future completes, so a caller that
        has seen the end of one stream may start the next.
        """
        if not self._slots.acquire(blocking=False):
            raise ResourceExhausted(
                f"the server is already generating {self.size} streaming answers; retry shortly", retry_after_s=1.0
            )

        def run() -> T:
            try:
                return work()
            finally:
                self._slots.release()

        try:
            return self._executor.submit(run)
        except RuntimeError:  # shut down
            self._slots.release()
            raise Unavailable("the server is shutting down") from None

    def shutdown(self) -> None:
        """Take no more work; running answers end with their calls (the server cancels them)."""
        self._executor.shutdown(wait=False, cancel_futures=True)


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
