"""Concurrent questions embedded in one encoder call: a micro-batcher in front of ``Embedder.embed_query``.

A server answers many callers at once, each with one short question. One encoder call for a batch of
16 questions costs little more than for one, so callers that arrive together share it. The batcher is
an ``Embedder`` itself (a decorator of the port): ``embed_query`` queues the question and waits for
its own vector; one worker thread takes what is queued — the first question, then whatever arrives
within ``max_wait_s`` or until ``max_batch`` are queued — and makes one ``embed_documents`` call.
While the encoder is busy, new questions queue up and form the next batch, so under load batches
grow by themselves and an idle server adds at most ``max_wait_s`` to a question.

Bounded: at most ``max_queue`` questions wait; a caller that finds the queue full waits up to
``queue_timeout_s`` for room and is then refused with ``ResourceExhausted`` (never an unbounded queue).
``embed_documents`` (indexing) passes straight through.
"""

from __future__ import annotations

import queue
import threading
import time
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
    done: threading.Event = field(default_factory=threading.Event)
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
        self._queue_timeout_s = queue_timeout_s
        self._queue: queue.Queue[_Request | None] = queue.Queue(maxsize=max_queue)
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()
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

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> Vector:
        """The vector of ``text``, computed in one encoder call with the questions queued beside it."""
        self._start()
        request = _Request(text)
        try:
            self._queue.put(request, timeout=self._queue_timeout_s)
        except queue.Full:
            raise ResourceExhausted(
                "too many questions are waiting to be embedded; try again shortly", retry_after_s=1.0
            ) from None
        request.done.wait()
        if request.error is not None:
            raise request.error
        assert request.vector is not None
        return request.vector

    def close(self) -> None:
        """Stop the worker once the questions queued so far are answered."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            worker = self._worker
        if worker is not None:
            self._queue.put(None)
            worker.join()
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()

    def _start(self) -> None:
        with self._lock:
            if self._closed:
                raise Unavailable("the question embedder is closed")
            if self._worker is None:  # created on first use: no thread at import or construction
                self._worker = threading.Thread(target=self._run, name="docqa-query-batcher", daemon=True)
                self._worker.start()

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            stop = self._collect(batch)
            self._embed(batch)
            if stop:
                return

    def _collect(self, batch: list[_Request]) -> bool:
        """Add to ``batch`` what arrives within the wait or is queued already; True when asked to stop."""
        deadline = time.monotonic() + self._max_wait_s
        while len(batch) < self._max_batch:
            remaining = deadline - time.monotonic()
            try:
                item = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
            except queue.Empty:
                return False
            if item is None:
                return True
            batch.append(item)
        return False

    def _embed(self, batch: list[_Request]) -> None:
        try:
            vectors = self._inner.embed_documents([r.text for r in batch])
            if len(vectors) != len(batch):
                raise Unavailable(f"the embedder returned {len(vectors)} vectors for {len(batch)} questions")
        except BaseException as exc:  # every waiting caller learns of the failure, none hangs
            for request in batch:
                request.error = exc
                request.done.set()
            return
        self.batches += 1
        self.questions += len(batch)
        for request, vector in zip(batch, vectors, strict=True):
            request.vector = np.ascontiguousarray(vector, dtype=np.float32)
            request.done.set()
