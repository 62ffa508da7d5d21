"""Whether the caller of a query still wants its answer: it may cancel, and its deadline may pass."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from acl.errors import Cancelled, DeadlineExceeded


class Cancellation:
    """Set by the transport when its caller goes away; read by the query between pieces of work.

    ``deadline`` is a time on ``clock`` (monotonic seconds) after which the
    answer is no longer wanted, or None. Thread-safe: one thread cancels, the
    query's thread checks.
    """

    def __init__(self, deadline: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._deadline = deadline
        self._clock = clock
        self._cancelled = threading.Event()

    @classmethod
    def within(cls, seconds: float | None, clock: Callable[[], float] = time.monotonic) -> Cancellation:
        """A cancellation whose deadline is ``seconds`` from now (None: no deadline)."""
        return cls(None if seconds is None else clock() + seconds, clock)

    def cancel(self) -> None:
        """The caller went away: the query stops at its next check."""
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    @property
    def expired(self) -> bool:
        return self._deadline is not None and self._clock() >= self._deadline

    def check(self) -> None:
        """Cancelled or DeadlineExceeded once the answer is no longer wanted; nothing otherwise."""
        if self.expired:  # first: a call that ends at its deadline is cancelled too
            raise DeadlineExceeded("the deadline passed before the answer was complete")
        if self._cancelled.is_set():
            raise Cancelled("the request was cancelled")
