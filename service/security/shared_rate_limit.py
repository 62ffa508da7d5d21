"""Rate limits every replica shares: calls counted in Redis by the ``limits`` library.

With ``limits.rate.storage_uri: redis://…`` every replica asks the same store, so
a caller has one budget however many replicas its calls reach. A limit is
``limits``' moving window: at most ``burst`` calls in any ``burst /
requests_per_second`` seconds, decided by one atomic Lua script in Redis over a
list of at most ``burst`` timestamps per caller that expires with its window.
That is the in-process token bucket's burst and average rate; the budget comes
back a window at a time instead of a call at a time. Timestamps are each
replica's wall clock, so the replicas' clocks are kept in step (NTP).

Why Redis and not the settings database: the limit is checked on every call
before anything else, and refusing a flood is its purpose; in PostgreSQL each
check would be a write (and a WAL record) on the database that holds the ACLs,
queued on one row lock per busy caller. Redis answers in a fraction of a
millisecond, keeps nothing on disk it does not need, and ``limits`` (Flask-Limiter's
and slowapi's storage layer) already has the atomic scripts.

When the store cannot be reached (refused, no answer within
``store_timeout_s``, any Redis error), ``on_store_error`` decides the call:
``local`` lets this replica's own token buckets decide (the limit still holds,
per replica, as with ``memory://``), ``closed`` refuses it RESOURCE_EXHAUSTED
with a retry hint. For ``store_retry_s`` after a failure the store is not asked
again, so an outage costs no timeout per call. Every call decided without the
store is counted (``docqa_rate_limit_store_failures_total``); the outage is
logged when it starts and when it ends.

Callers' keys are hashed before they reach the store: no user id or network
address is written into Redis, and a long ``sub`` makes no long key.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from acl.errors import RateLimited, ResourceExhausted
from service.config import RateLimit, RateLimits
from service.security.rate_limit import Limiter, RateLimiter

if TYPE_CHECKING:
    from limits import RateLimitItem
    from limits.storage import RedisStorage
    from limits.strategies import MovingWindowRateLimiter

log = logging.getLogger("docqa.rate_limit")


def _nothing() -> None:
    return None


def limiter_for(
    rates: RateLimits, interface: Literal["grpc", "graphql"], on_unshared: Callable[[], None] = _nothing
) -> Limiter | None:
    """The limiter ``limits.rate`` asks for on ``interface``: None when it is off, this process's token
    buckets with ``memory://``, else the shared store's (``on_unshared`` is called for each call decided
    without it)."""
    limit: RateLimit = getattr(rates, interface)
    local = RateLimiter.from_config(limit, rates.max_callers)
    if local is None or not rates.shared:
        return local
    return SharedRateLimiter(limit, interface, rates, fallback=local, on_unshared=on_unshared)


class SharedRateLimiter(Limiter):
    """``limit`` counted in the shared store of ``rates.storage_uri``; ``fallback`` decides while it is down."""

    remote = True

    def __init__(
        self,
        limit: RateLimit,
        interface: str,
        rates: RateLimits,
        *,
        fallback: Limiter,
        on_unshared: Callable[[], None] = _nothing,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        from limits import RateLimitItemPerSecond
        from limits.strategies import MovingWindowRateLimiter

        if not limit.enabled or not rates.shared:
            raise ValueError("a shared rate limiter needs an enabled limit and a shared storage_uri")
        window = round(limit.capacity / limit.requests_per_second)  # whole seconds: RateLimits checks it
        self._item: RateLimitItem = RateLimitItemPerSecond(limit.capacity, window, namespace=f"rate.{interface}")
        self._strategy: MovingWindowRateLimiter = MovingWindowRateLimiter(_storage(rates))
        self._fallback = fallback
        self._closed = rates.on_store_error == "closed"
        self._retry_s = rates.store_retry_s
        self._on_unshared = on_unshared
        self._clock = clock
        self._lock = threading.Lock()
        self._down_until = -math.inf
        self._down = False

    def check(self, key: str) -> None:
        if self._clock() < self._down_until:
            self._unshared(key)
            return
        from limits.errors import StorageError

        hashed = _hashed(key)
        try:
            if self._strategy.hit(self._item, hashed):
                self._answered()
                return
            reset = self._strategy.get_window_stats(self._item, hashed).reset_time
        except StorageError as exc:
            self._failed(exc.storage_error)
            self._unshared(key)
            return
        self._answered()
        wait = max(0.0, reset - time.time())
        raise RateLimited(f"rate limit exceeded: retry after {max(1, math.ceil(wait))} s", retry_after_s=wait)

    def _unshared(self, key: str) -> None:
        """Decide a call without the store, as ``on_store_error`` says."""
        self._on_unshared()
        if self._closed:
            wait = max(1.0, self._down_until - self._clock())
            raise ResourceExhausted(
                f"the rate limit cannot be checked now: retry after {math.ceil(wait)} s", retry_after_s=wait
            )
        self._fallback.check(key)

    def _failed(self, error: Exception) -> None:
        with self._lock:
            self._down_until = self._clock() + self._retry_s
            if not self._down:
                self._down = True
                log.warning(
                    "rate-limit store unreachable (%s: %s); %s, asking it again every %g s",
                    type(error).__name__,
                    error,
                    "calls are refused" if self._closed else "this replica's own buckets decide",
                    self._retry_s,
                )

    def _answered(self) -> None:
        if self._down:
            with self._lock:
                if self._down:
                    self._down = False
                    log.info("rate-limit store answers again; the shared limits hold")


def check(rates: RateLimits) -> list[tuple[str, bool, str]]:
    """``docqa doctor``'s line: where calls are counted, and whether a shared store answers (no password shown)."""
    if not rates.shared:
        return [("rate-limit store", True, "memory:// (each replica counts its callers' calls on its own)")]
    parts = urlsplit(rates.storage_uri)
    shown = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
    storage = _storage(rates)
    try:
        answers = storage.check()
    finally:
        storage.storage.close()  # the redis client and its pool
    if answers:
        return [("rate-limit store", True, f"{shown} answers: one budget per caller across replicas")]
    fallback = "each replica's own buckets decide" if rates.on_store_error == "local" else "every call is refused"
    return [
        ("rate-limit store", False, f"{shown} does not answer: {fallback} (on_store_error: {rates.on_store_error})")
    ]


def _storage(rates: RateLimits) -> RedisStorage:
    """The shared store of ``rates``, connected on first use: one try, at most ``store_timeout_s`` each way."""
    from limits.storage import RedisStorage
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return RedisStorage(
        rates.storage_uri,
        key_prefix=rates.key_prefix,
        wrap_exceptions=True,
        socket_timeout=rates.store_timeout_s,
        socket_connect_timeout=rates.store_timeout_s,
        # One try, whatever the client's default: a retry would double the wait of every call while it is away.
        retry=Retry(NoBackoff(), 0),  # type: ignore[arg-type]
    )


def _hashed(key: str) -> str:
    """``key`` as the store sees it: its kind (``user``, ``peer``) and a digest of the rest."""
    kind, _, rest = key.partition(":")
    return f"{kind}:{hashlib.blake2b(rest.encode('utf-8', 'surrogatepass'), digest_size=16).hexdigest()}"
