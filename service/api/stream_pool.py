"""The server's stream pool: where streaming answers are generated, over gRPC and GraphQL alike.

A bounded pool of ``limits.max_streams`` worker threads, with admission decided up front: when every
worker is busy a new stream is refused with RESOURCE_EXHAUSTED at once, never queued (a queue would only
hold callers past their deadlines while the work they wait for piles up). One pool per server, shared by
both protocols, so the bound is per server; its own threads, so streams never hold up other requests.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from acl.errors import ResourceExhausted, Unavailable

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
