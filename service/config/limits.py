"""How much work a server takes on at once, and how fast each caller may call."""

from __future__ import annotations

import math
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, model_validator

from service.config.base import _Section


class RateLimit(_Section):
    """A limit per caller: ``burst`` calls at once, ``requests_per_second`` on average (a token bucket refilled
    call by call in memory; in a shared store, ``burst`` calls in any ``burst / requests_per_second`` seconds)."""

    #: Calls per second each caller may make on average; 0 = no limit.
    requests_per_second: float = Field(0.0, ge=0, le=1_000_000)
    #: Calls a caller may make at once (the bucket's size); 0 = requests_per_second rounded up.
    burst: int = Field(0, ge=0, le=1_000_000)

    @model_validator(mode="after")
    def _burst_needs_a_rate(self) -> RateLimit:
        if self.burst and not self.requests_per_second:
            raise ValueError("burst needs requests_per_second (0 turns the limit off)")
        return self

    @property
    def enabled(self) -> bool:
        return self.requests_per_second > 0

    @property
    def capacity(self) -> int:
        """The bucket's size: ``burst``, or the rate rounded up (at least 1)."""
        return self.burst or max(1, math.ceil(self.requests_per_second))


#: Stores a shared rate limit may be kept in (``memory://`` = this process only).
RATE_LIMIT_STORES = ("memory", "redis", "rediss", "redis+unix")


class RateLimits(_Section):
    """Per-caller rate limits of each interface, counted in this process or in a store every replica shares."""

    grpc: RateLimit = RateLimit()
    graphql: RateLimit = RateLimit()
    #: Callers remembered per interface (bounds memory); buckets idle long enough to be full go first.
    max_callers: int = Field(100_000, ge=1, le=10_000_000)
    #: Where calls are counted: ``memory://`` (each replica its own token buckets, so N replicas admit N times
    #: the rate) or a Redis every replica shares (``redis://[:password@]host:6379/0``, ``rediss://``,
    #: ``redis+unix://``), where each limit is ``burst`` calls in any ``burst / requests_per_second`` seconds.
    #: It may hold a password: set it with DOCQA_LIMITS__RATE__STORAGE_URI, not in the file.
    storage_uri: str = Field("memory://", repr=False, max_length=2048)
    #: Prefix of the shared store's keys: releases sharing one Redis keep their budgets apart.
    key_prefix: str = Field("docqa", pattern=r"^[A-Za-z0-9_.:-]{1,64}$")
    #: When the shared store cannot be reached: ``local`` = this replica's own buckets decide (the limit holds
    #: per replica, as with memory://); ``closed`` = every call is refused (gRPC RESOURCE_EXHAUSTED, GraphQL HTTP
    #: 503) with a retry hint until it answers.
    on_store_error: Literal["local", "closed"] = "local"
    #: Seconds a call waits for the shared store (to connect, then to answer) before it counts as unreachable.
    store_timeout_s: float = Field(0.25, gt=0, le=10)
    #: Seconds after a failure before the store is asked again; meanwhile ``on_store_error`` decides at once.
    store_retry_s: float = Field(5.0, ge=0, le=300)

    @property
    def shared(self) -> bool:
        """True when the limits are counted in a store every replica shares."""
        return not self.storage_uri.startswith("memory://")

    @model_validator(mode="after")
    def _a_store_that_can_keep_them(self) -> RateLimits:
        scheme = urlsplit(self.storage_uri).scheme
        if scheme not in RATE_LIMIT_STORES or (scheme == "memory" and self.storage_uri != "memory://"):
            raise ValueError(f"storage_uri: use memory:// or {', '.join(s + '://...' for s in RATE_LIMIT_STORES[1:])}")
        for name, limit in (("grpc", self.grpc), ("graphql", self.graphql)):
            window = limit.capacity / limit.requests_per_second if limit.enabled else 1.0
            if self.shared and (window < 1 or abs(window - round(window)) > 1e-6 * window):
                raise ValueError(
                    f"{name}: a shared store counts burst calls in any burst / requests_per_second seconds, which "
                    f"must be whole seconds (here {limit.capacity} / {limit.requests_per_second:g} = {window:g})"
                    + _whole_window_burst(limit.requests_per_second, window)
                )
        return self


def _whole_window_burst(rate: float, window: float) -> str:
    """A hint: the smallest burst at least the asked one whose window (burst / rate) is whole seconds."""
    for seconds in range(max(1, math.ceil(window)), max(1, math.ceil(window)) + 1000):
        if round(rate * seconds) >= 1 and abs(rate * seconds - round(rate * seconds)) < 1e-6:
            return f"; e.g. burst {round(rate * seconds)} ({seconds} s)"
    return ""


class LimitsConfig(_Section):
    """How much work a server takes on at once, and how fast each caller may call."""

    #: Streaming answers (gRPC ``Stream*`` calls) generated at once; one more is refused RESOURCE_EXHAUSTED.
    max_streams: int = Field(8, ge=1, le=1024)
    rate: RateLimits = RateLimits()
