"""Injected faults of the fake's HTTP server: the next N requests to a path answer an error status, hang, or
lose their connection in the middle of the reply.

``fake.fail("/_bulk", drop=True, times=2)`` cuts the replies of the next two bulk requests half-way (the bulk
was applied: the client cannot know, and must retry it idempotently); ``fake.fail(status=429, times=10**6)``
rejects everything until ``fake.heal()``; ``fake.fail(delay_s=30)`` holds a request (its client times out),
then answers it. A status fault applies nothing. Faults act on the HTTP server only, not on
``connection_class()``'s in-process calls.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from tests.fakes_opensearch.errors import OpenSearchError

#: What a node answers with each status when it is overloaded or unavailable (``type``, ``reason``).
_ERRORS = {
    429: ("rejected_execution_exception", "rejected execution of coordinating operation [fake fault: overloaded]"),
    502: ("bad_gateway", "fake fault: a proxy in front of the cluster failed"),
    503: ("cluster_block_exception", "blocked by: [SERVICE_UNAVAILABLE/2/no cluster-manager];"),
    504: ("timeout_exception", "fake fault: the request timed out in the cluster"),
}


@dataclass
class Fault:
    """What happens to the next ``times`` requests whose path contains ``path`` ("" for every request)."""

    path: str
    times: int
    #: Answer this status (with an OpenSearch-shaped error and ``headers``) and apply nothing.
    status: int | None = None
    #: Wait this long first (then answer, unless ``status``): a client with a shorter timeout has hung up.
    delay_s: float = 0.0
    #: Apply the request, then send half of the reply's body and close the connection.
    drop: bool = False
    headers: dict[str, str] = field(default_factory=dict)

    def error(self) -> dict[str, Any]:
        status = self.status or 500
        type_, reason = _ERRORS.get(status, ("fake_fault_exception", f"fake fault: HTTP {status}"))
        return OpenSearchError(status, type_, reason).body()


class Faults:
    """The pending faults of one fake, thread-safe; the first that matches a request is used up by it."""

    def __init__(self) -> None:
        self._pending: list[Fault] = []
        self._lock = threading.Lock()
        #: Set on ``heal()`` and on close: a request held by a delay is let go at once.
        self.released = threading.Event()

    def add(self, fault: Fault) -> None:
        if fault.times < 1 or fault.delay_s < 0:
            raise ValueError("a fault needs times >= 1 and delay_s >= 0")
        if fault.status is not None and not 400 <= fault.status <= 599:
            raise ValueError("a fault's status must be an HTTP error status (4xx or 5xx)")
        with self._lock:
            self.released.clear()
            self._pending.append(fault)

    def take(self, path: str) -> Fault | None:
        with self._lock:
            for fault in self._pending:
                if fault.path in path and fault.times > 0:
                    fault.times -= 1
                    return fault
            return None

    def heal(self) -> None:
        """No fault any more; requests held by a delay are answered now."""
        with self._lock:
            self._pending.clear()
            self.released.set()
