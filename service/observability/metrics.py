"""Prometheus metrics of the servers, in a registry of their own (one per application)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from acl.checker import AccessChecker, PermissionSource
from acl.model import Acl
from indexer.index import ChunkRecord, Index, SearchHit, StoreSpec
from indexer.index.filters import Filter
from indexer.index.port import Vector

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


@dataclass
class Metrics:
    """Request counts, latencies per query class, chunks dropped by the access check, LLM latency."""

    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.requests = Counter(
            "docqa_requests",
            "Calls answered, by interface, method and outcome code.",
            ["interface", "method", "code"],
            registry=self.registry,
        )
        self.query_latency = Histogram(
            "docqa_query_latency_seconds",
            "Time to answer a query, by query class.",
            ["query_class"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.access_dropped = Counter(
            "docqa_access_dropped_chunks",
            "Search hits dropped by the authoritative access check (never reported to callers).",
            registry=self.registry,
        )
        self.llm_latency = Histogram(
            "docqa_llm_latency_seconds",
            "Time the language model took to answer.",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )

    def exposition(self) -> bytes:
        """The Prometheus text format of every metric."""
        return generate_latest(self.registry)


class _LastHits(threading.local):
    hits: tuple[SearchHit, ...] = ()


class MeteredIndex(Index):
    """Delegates to an index, remembering (per thread) the hits of the last search."""

    def __init__(self, inner: Index, last: _LastHits) -> None:
        self._inner = inner
        self._last = last

    def ensure(self, store: StoreSpec) -> None:
        self._inner.ensure(store)

    def upsert(self, store_id: str, chunks: Sequence[ChunkRecord]) -> None:
        self._inner.upsert(store_id, chunks)

    def delete_document(self, store_id: str, document_id: str) -> None:
        self._inner.delete_document(store_id, document_id)

    def set_document_acl(self, store_id: str, document_id: str, acl: Acl) -> None:
        self._inner.set_document_acl(store_id, document_id, acl)

    def knn(self, store_id: str, vector: Vector, k: int, filter: Filter) -> list[SearchHit]:
        hits = self._inner.knn(store_id, vector, k, filter)
        self._last.hits = tuple(hits)
        return hits

    def exact(self, store_id: str, vector: Vector, k: int, filter: Filter) -> list[SearchHit]:
        hits = self._inner.exact(store_id, vector, k, filter)
        self._last.hits = tuple(hits)
        return hits

    def count(self, store_id: str, filter: Filter | None = None) -> int:
        return self._inner.count(store_id, filter)

    def drop(self, store_id: str) -> None:
        self._inner.drop(store_id)


class MeteredChecker(AccessChecker):
    """The access check, counting the search hits it drops (for the metric only, never for callers)."""

    def __init__(self, source: PermissionSource, last: _LastHits, dropped: Counter) -> None:
        super().__init__(source)
        self._last = last
        self._dropped = dropped

    def readable(self, store_id: str, principals: frozenset[str], document_ids: Iterable[str]) -> frozenset[str]:
        wanted = set(document_ids)
        result = super().readable(store_id, principals, wanted)
        hits, self._last.hits = self._last.hits, ()
        if hits and {h.chunk.document_id for h in hits} == wanted:  # the check of the search just run
            dropped = sum(1 for h in hits if h.chunk.document_id not in result)
            if dropped:
                self._dropped.inc(dropped)
        return result


def metered(index: Index, source: PermissionSource, metrics: Metrics) -> tuple[Index, AccessChecker]:
    """An index and an access checker that together count the hits the access check drops."""
    last = _LastHits()
    return MeteredIndex(index, last), MeteredChecker(source, last, metrics.access_dropped)
