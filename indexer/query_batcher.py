"""Concurrent questions embedded in one encoder call: a micro-batcher in front of ``Embedder.embed_query``.

A server answers many callers at once, each with one short question. One encoder call for a batch of
16 questions costs little more than for one, so callers that arrive together share it. The batcher is
an ``Embedder`` itself (a decorator of the port): ``embed_query`` queues the question and waits for
its own vector. There is no worker thread: a caller that finds the encoder idle runs it itself (the
leader) for the first question, what arrives within ``max_wait_s`` or until ``max_batch`` are queued,
in one ``embed_documents`` call; questions that arrive while the encoder is busy queue up, and when the
call returns the oldest of them leads the next batch. So under load batches grow by themselves, and a
lone question on an idle server is embedded on its own thread, with no hand-over to another thread
(measured in-process on a 100k-chunk store: 1.5 ms of a 14 ms question with a worker thread).

Bounded: at most ``max_queue`` questions wait; a caller that finds the queue full waits up to
``queue_timeout_s`` for room and is then refused with ``ResourceExhausted`` (never an unbounded queue).
``embed_documents`` (indexing) passes straight through.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from acl.errors import ResourceExhausted, Unavailable
from indexer.embedder import Embedder, Tokenizer
from indexer.index.port import Vector

if TYPE_CHECKING:
    import numpy.typing as npt


@dataclass(eq=False)
class _Request:
    text: str
    #: Set when the vector (or the error) is there, or when this caller is to lead the next batch.
    wake: threading.Event = field(default_factory=threading.Event)
    lead: bool = False
    finished: bool = False
    vector: Vector | None = None
    error: BaseException | None = None


class BatchingEmbedder(Embedder):
    """``inner`` with concurrent ``embed_query`` calls batched into one ``embed_documents`` call."""

    def __init__(
        self,
        inner: Embedder,
        *,
        max_batch: int = 32,
        max_wait_s: float = 0.0,
        max_queue: int = 256,
        queue_timeout_s: float = 1.0,
    ) -> None:
        if max_batch < 1 or max_queue < 1 or max_wait_s < 0 or queue_timeout_s < 0:
            raise ValueError("max_batch and max_queue must be ≥ 1, max_wait_s and queue_timeout_s ≥ 0")
        self._inner = inner
        self.model_name = inner.model_name
        self.dimension = inner.dimension
        self.max_tokens = inner.max_tokens
        self._max_batch = max_batch
        self._max_wait_s = max_wait_s
        self._max_queue = max_queue
        self._queue_timeout_s = queue_timeout_s
        self._changed = threading.Condition()
        #: Questions not yet in an encoder call, oldest first; a batch's leader is always the oldest.
        self._waiting: deque[_Request] = deque()
        self._running = False  # a leader holds the encoder (invariant: not running → nothing waiting)
        self._gathering = False  # the leader waits (max_wait_s) for its batch to fill
        self._closed = False
        #: Encoder calls made for questions, and questions embedded (for tests and benchmarks).
        self.batches = 0
        self.questions = 0

    @property
    def inner(self) -> Embedder:
        return self._inner

    @property
    def tokenizer(self) -> Tokenizer:
        return self._inner.tokenizer

    def waiting(self) -> int:
        """Questions queued for the encoder (not yet in a call)."""
        with self._changed:
            return len(self._waiting)

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> Vector:
        """The vector of ``text``, computed in one encoder call with the questions queued beside it."""
        request = _Request(text)
        with self._changed:
            self._refuse_if_closed()
            if self._queued() >= self._max_queue and not self._changed.wait_for(
                lambda: self._queued() < self._max_queue or self._closed, timeout=self._queue_timeout_s
            ):
                raise ResourceExhausted(
                    "too many questions are waiting to be embedded; try again shortly", retry_after_s=1.0
                )
            self._refuse_if_closed()
            self._waiting.append(request)
            if self._running:
                self._changed.notify_all()  # a leader gathering within max_wait_s sees the arrival
            else:
                self._running = request.lead = True
        while not request.finished:
            if request.lead:
                request.lead = False
                self._lead()
            else:
                request.wake.wait()
                request.wake.clear()
        if request.error is not None:
            raise request.error
        assert request.vector is not None
        return request.vector

    def close(self) -> None:
        """Refuse new questions; return once those queued so far are answered, then close the encoder."""
        with self._changed:
            if self._closed:
                return
            self._closed = True
            self._changed.notify_all()
            self._changed.wait_for(lambda: not self._running)
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()

    def _queued(self) -> int:
        """Questions that count against ``max_queue``: those waiting for the encoder to come free, not those a
        gathering leader will take into its batch."""
        waiting = len(self._waiting)
        return waiting - min(waiting, self._max_batch) if self._gathering else waiting

    def _refuse_if_closed(self) -> None:
        if self._closed:
            raise Unavailable("the question embedder is closed")

    def _lead(self) -> None:
        """Run one batch from the oldest waiting question (this caller's), then hand the encoder on."""
        with self._changed:
            deadline = time.monotonic() + self._max_wait_s
            self._gathering = True
            while len(self._waiting) < self._max_batch and (remaining := deadline - time.monotonic()) > 0:
                self._changed.wait(remaining)
            self._gathering = False
            batch = [self._waiting.popleft() for _ in range(min(self._max_batch, len(self._waiting)))]
            self._changed.notify_all()  # room in the queue
        try:
            self._embed(batch)
        finally:
            with self._changed:
                if self._waiting:
                    following = self._waiting[0]
                    following.lead = True
                    following.wake.set()
                else:
                    self._running = False
                    self._changed.notify_all()  # close() may be waiting for the encoder

    def _embed(self, batch: list[_Request]) -> None:
        try:
            vectors = self._inner.embed_documents([r.text for r in batch])
            if len(vectors) != len(batch):
                raise Unavailable(f"the embedder returned {len(vectors)} vectors for {len(batch)} questions")
        except BaseException as exc:  # every waiting caller learns of the failure, none hangs
            for request in batch:
                request.error = exc
                request.finished = True
                request.wake.set()
            return
        self.batches += 1
        self.questions += len(batch)
        for request, vector in zip(batch, vectors, strict=True):
            request.vector = np.ascontiguousarray(vector, dtype=np.float32)
            request.finished = True
            request.wake.set()
