"""An outside directory's answers, cached (how the sources combine: ``acl.directory.MergedMemberships``).

An outside directory is read per principal when a caller's principals are expanded, through a cache
(``CachedSource``) that keeps a principal's groups for ``directory.cache_ttl_s``. When the directory cannot
be reached, groups older than the TTL are used only within ``directory.stale_grace_s`` (0 by default);
past it the caller gets ``Unavailable``: fail closed.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from acl.directory import GroupSource
from acl.errors import Unavailable


class CachedSource:
    """A ``GroupSource`` read through a bounded cache with a TTL (least recently used forgotten)."""

    def __init__(
        self,
        source: GroupSource,
        ttl_s: float,
        max_entries: int,
        grace_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = source.name
        self._source = source
        self._ttl = ttl_s
        self._max = max_entries
        self._grace = grace_s
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[float, frozenset[str]]] = OrderedDict()

    def parents(self, principal: str) -> frozenset[str]:
        now = self._clock()
        with self._lock:
            held = self._entries.get(principal)
            if held is not None and now - held[0] < self._ttl:
                self._entries.move_to_end(principal)
                return held[1]
        try:
            groups = self._source.parents(principal)
        except Unavailable:
            if held is not None and now - held[0] < self._ttl + self._grace:
                return held[1]  # the admin's grace period: stale, but within what they allowed
            raise
        with self._lock:
            self._entries[principal] = (now, groups)
            self._entries.move_to_end(principal)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
        return groups

    def check(self) -> list[str]:
        """The source's own check (``docqa doctor``, ``/readyz``); none for a source without one."""
        check = getattr(self._source, "check", None)
        return list(check()) if check is not None else []

    def close(self) -> None:
        close = getattr(self._source, "close", None)
        if close is not None:
            close()

    def forget(self) -> None:
        """Drop every cached answer (tests, and an admin who wants a change in the directory now)."""
        with self._lock:
            self._entries.clear()
