"""Prometheus metrics of the servers, in a registry of their own (one per application).

Nothing here counts what a caller could not read: no metric of chunks or documents dropped by the access
check, by caller or in total (a count over time would tell a scraper how much of a store is hidden from
whom). Request outcomes are counted by interface, method and status code only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


@dataclass
class Metrics:
    """Request counts, latencies per query class, LLM latency."""

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
        self.rate_limit_store_failures = Counter(
            "docqa_rate_limit_store_failures",
            "Calls whose rate limit the shared store could not decide (limits.rate.on_store_error decided), "
            "by interface.",
            ["interface"],
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
