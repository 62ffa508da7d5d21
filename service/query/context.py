"""What one query carries along its path: the store, the question, the caller's principals, a clock."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from indexer.index import SearchHit
from service.domain.store import Store
from service.domain.threshold import Threshold


class Clock:
    """Milliseconds per step of a query (``embed``, ``search``, ``lexical``, ``access``, ``generate``, ``total``).

    ``lexical`` may have run beside ``embed``; ``lexical_wait`` is then what the query waited for it after its
    dense search."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._start = time.perf_counter()
        self._mark = self._start

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.add(name, (now - self._mark) * 1000)
        self._mark = now

    def add(self, name: str, ms: float) -> None:
        """Count ``ms`` to step ``name``: ``lap`` does for the query's own steps; work done beside the query's
        thread is added directly (it overlapped other steps: the timings then add up to more than the total)."""
        self.timings[name] = self.timings.get(name, 0.0) + ms

    def total(self) -> dict[str, float]:
        self.timings["total"] = (time.perf_counter() - self._start) * 1000
        return self.timings


@dataclass(frozen=True, slots=True)
class QueryContext:
    """A validated query: its store, question, level (None = the store's) and the caller's principals."""

    store: Store
    question: str
    level: float | None
    principals: frozenset[str]
    clock: Clock = field(default_factory=Clock)
    #: The authoritative access decisions made so far for this query (document id → readable): each document
    #: is asked about once per query, however many reads need it (``service.query.guarded``).
    decided: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    def thresholds(self) -> tuple[float, float | None]:
        """The level in force and its score threshold (None: no threshold)."""
        effective = self.store.level if self.level is None else self.level
        return effective, Threshold(self.store.min_threshold, self.store.max_threshold).score_for(effective)


@dataclass(slots=True)
class Scope:
    """What a query class hands the common tail of the path."""

    hits: list[SearchHit]
    threshold: float | None
    level: float | None
    one_document: bool
    #: What the answer should say about how its sources were found (e.g. the reranker was unavailable).
    warnings: tuple[str, ...] = ()
    #: Distinctive terms of the question (a name, a version, an identifier) that nothing the caller can read in
    #: this scope mentions: the question is about something else, so it is not answered from these sources.
    unmentioned: tuple[str, ...] = ()
