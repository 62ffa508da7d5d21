"""Work that can run beside a question's embedding, on a few threads, and only when one is free.

The lexical (BM25) search needs the question's words, not its vector, so it need not wait for the
encoder. ONNX Runtime, faiss and numpy release the interpreter lock while they compute, so on two
cores the two overlap (in-process on a 100k-chunk store: embed and BM25 6.1 ms one after the other,
3.3 ms side by side). Under load every core is busy anyway and there is nothing to gain, so a search
that finds no thread free runs its lexical round inline, as before, instead of queueing for one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

#: Threads for work beside the embedding (a handful: the point is latency, not throughput).
THREADS = 4


class Overlap:
    """A small pool that takes a call only when it has a thread free for it."""

    def __init__(self, threads: int = THREADS) -> None:
        self._threads = threads
        self._free = threading.BoundedSemaphore(threads)
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def start(self, call: Callable[..., T], *args: Any) -> Future[tuple[T, float]] | None:
        """``call(*args)`` started on a free thread: its future gives the result and how long it took (ms).
        None when every thread is busy (the caller runs the work itself)."""
        if not self._free.acquire(blocking=False):
            return None
        job = _Job()
        try:
            return self._executor().submit(self._timed, job, call, *args)
        except RuntimeError:
            # Shut down, or no thread could be started: the work may be queued all the same. Whoever claims
            # it first owns the slot, so it never runs on the pool once its caller was told to run it.
            if job.claim(_ABANDONED):
                self._free.release()
            return None

    def _timed(self, job: _Job, call: Callable[..., T], *args: Any) -> tuple[T, float]:
        if not job.claim(_RUNNING):
            raise RuntimeError("abandoned: its caller ran it")  # nobody waits on this future
        started = time.perf_counter()
        try:
            return call(*args), (time.perf_counter() - started) * 1000
        finally:
            self._free.release()  # before the future is done: whoever waited on it may start the next

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:  # created on first use: no thread for a process that never searches
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="docqa-overlap")
            return self._pool


_RUNNING, _ABANDONED = "running", "abandoned"


class _Job:
    """Who got to a queued call first: the pool thread that runs it, or its caller giving it up."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: str | None = None

    def claim(self, state: str) -> bool:
        with self._lock:
            if self._state is not None:
                return False
            self._state = state
            return True
