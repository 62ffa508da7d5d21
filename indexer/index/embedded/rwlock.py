"""A small readers-writer lock: many concurrent readers or one writer, fair to both."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class RWLock:
    """Readers share, a writer is exclusive.

    Phase-fair: a waiting writer blocks new readers, and every reader that
    was waiting when a writer left goes before the next writer. So a writer
    that comes back at once (the HNSW graph extended slice by slice) cannot
    starve a query, nor a stream of queries a writer.

    Not reentrant: a thread holding the read side must not ask for the write
    side (it would wait for itself).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0
        self._readers_waiting = 0
        self._phase = 0  # writers that have left
        self._admitted = 0  # readers waiting when the last writer left, not yet in

    @property
    def readers_waiting(self) -> int:
        """Threads waiting for the shared side now."""
        with self._cond:
            return self._readers_waiting

    @property
    def writers_waiting(self) -> int:
        """Threads waiting for the exclusive side now."""
        with self._cond:
            return self._writers_waiting

    @contextmanager
    def read(self) -> Iterator[None]:
        """Hold the shared side for the ``with`` block."""
        with self._cond:
            phase = self._phase
            self._readers_waiting += 1
            try:
                while self._writer or (self._writers_waiting and phase == self._phase):
                    self._cond.wait()
            finally:
                self._readers_waiting -= 1
                if phase != self._phase:  # admitted when a writer left (or giving that up)
                    self._admitted -= 1
                    self._cond.notify_all()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if self._readers == 0:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        """Hold the exclusive side for the ``with`` block."""
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writer or self._readers or self._admitted:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._phase += 1
                self._admitted = self._readers_waiting
                self._cond.notify_all()
