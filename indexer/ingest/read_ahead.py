"""An iterator run in a background thread, a bounded amount of work ahead of the one consuming it.

The ingest pipeline reads, parses and chunks the next files here while the
embedder (which releases the GIL) encodes the current batch. What the producer
holds is bounded by weight (chunks, not items), so a folder of large documents
cannot fill memory. Items reach the consumer in the source's order; an
exception the source raises reaches the consumer after the items before it,
where a plain iteration would have raised it; and leaving the ``with`` block
(done, an error, KeyboardInterrupt) stops the thread and waits for it.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")


class _ReadAhead(Generic[T]):
    def __init__(self, source: Iterable[T], limit: int, weight: Callable[[T], int], name: str) -> None:
        self._source = source
        self._limit = limit
        self._weight = weight
        self._ready: deque[tuple[T, int]] = deque()
        self._held = 0
        self._finished = False
        self._stopped = False
        self._error: BaseException | None = None
        self._changed = threading.Condition()
        # A daemon, so that an interpreter leaving on an error never waits for a file being parsed.
        self._thread = threading.Thread(target=self._produce, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _produce(self) -> None:
        try:
            for item in self._source:
                cost = max(1, self._weight(item))
                with self._changed:
                    # One item always fits, however heavy: the limit bounds what waits, it never stalls the run.
                    while self._ready and self._held + cost > self._limit and not self._stopped:
                        self._changed.wait()
                    if self._stopped:
                        return
                    self._ready.append((item, cost))
                    self._held += cost
                    self._changed.notify_all()
        except BaseException as exc:  # handed to the consumer, which raises it where iteration would have
            with self._changed:
                self._error = exc
        finally:
            with self._changed:
                self._finished = True
                self._changed.notify_all()

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        with self._changed:
            while not self._ready and not self._finished:
                self._changed.wait()
            if self._ready:
                item, cost = self._ready.popleft()
                self._held -= cost
                self._changed.notify_all()
                return item
            error, self._error = self._error, None
        if error is not None:
            raise error
        raise StopIteration

    def stop(self) -> None:
        """Tell the producer to stop after the item in hand, drop what waits, and wait for the thread."""
        with self._changed:
            self._stopped = True
            self._ready.clear()
            self._held = 0
            self._changed.notify_all()
        self._thread.join()


@contextmanager
def read_ahead(
    source: Iterable[T], *, limit: int, weight: Callable[[T], int], name: str = "docqa-read-ahead"
) -> Iterator[Iterator[T]]:
    """``source``'s items, produced in a background thread at most ``limit`` (by ``weight``) ahead.

    ``limit`` 0 iterates ``source`` in the caller's thread, as a plain loop
    would. The thread has ended when the ``with`` block is left, however it is left.
    """
    if limit <= 0:
        yield iter(source)
        return
    ahead = _ReadAhead(source, limit, weight, name)
    ahead.start()
    try:
        yield ahead
    finally:
        ahead.stop()
