"""Per-caller rate limits: one token bucket per caller and interface, in this process.

A caller may make ``capacity`` calls at once; the bucket then refills at
``rate`` calls per second. The buckets live in memory, so a limit holds per
replica (N replicas admit up to N times the rate): ``limits.rate.storage_uri:
memory://``, the default. A limit every replica shares is ``shared_rate_limit``'s;
it falls back on these buckets while its store is unreachable. Memory is bounded: a bucket
that has been idle long enough to be full again is the same as no bucket and is
forgotten, and at most ``max_keys`` buckets of each kind are kept (beyond that
the least recently used is forgotten first, which only ever lets a caller in,
never out). A key's kind is what comes before its first ``:`` (``user:alice``,
``peer:…``): each kind has a table of its own, so a flood of new network
addresses, which costs an attacker little, never pushes a verified user's
bucket out and hands that user a full one. Addresses are keyed by
``peer_key``: an IPv6 caller by its /64, the block one host is usually given.

The well-known libraries were weighed for this in-process case: ``token-bucket``
never forgets a key (an attacker's stream of peer addresses would grow it without
bound) and reads the clock itself; ``limits`` offers window strategies, not a
token bucket, and its memory storage is per process too; ``pyrate-limiter``
keeps a timestamp per request. The bucket is a few lines. Across replicas the
counting needs an atomic shared store, and there ``limits`` is used.
"""

from __future__ import annotations

import abc
import ipaddress
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from acl.errors import RateLimited
from service.config import RateLimit
from service.security.tokens import Identity


@dataclass(slots=True)
class _Bucket:
    tokens: float
    stamp: float


class Limiter(abc.ABC):
    """A rate limit by caller key: ``check`` admits a call or raises ResourceExhausted saying when to retry."""

    #: True when ``check`` waits on the network (an event loop runs it in a worker thread).
    remote: ClassVar[bool] = False

    @abc.abstractmethod
    def check(self, key: str) -> None:
        """Take one call from ``key``'s budget, or raise ResourceExhausted saying when to try again (RateLimited
        when the caller has spent its budget)."""

    def check_caller(self, identity: Identity | None, address: str) -> None:
        """``check`` the budget of a call: the verified user's; a caller without a valid token (or an
        anonymous one) shares the budget of its network ``address`` (``peer_key``)."""
        if identity is not None and identity.authenticated:
            self.check(f"user:{identity.user_id}")
        else:
            self.check(peer_key(address))


class RateLimiter(Limiter):
    """Token buckets by key in this process: ``capacity`` calls at once, then ``rate`` calls per second."""

    def __init__(
        self,
        rate: float,
        capacity: int,
        *,
        max_keys: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not rate > 0 or not math.isfinite(rate) or capacity < 1 or max_keys < 1:
            raise ValueError("a rate limiter needs rate > 0, capacity >= 1 and max_keys >= 1")
        self.rate = rate
        self.capacity = capacity
        self._max_keys = max_keys
        self._clock = clock
        self._tables: dict[str, OrderedDict[str, _Bucket]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: RateLimit, max_keys: int) -> RateLimiter | None:
        """The limiter a configured limit asks for; None when it is off."""
        if not config.enabled:
            return None
        return cls(config.requests_per_second, config.capacity, max_keys=max_keys)

    def __len__(self) -> int:
        return sum(len(table) for table in self._tables.values())

    def wait_s(self, key: str) -> float:
        """Take one call from ``key``'s bucket: 0.0 when admitted, else the seconds until a call would be."""
        with self._lock:
            now = self._clock()
            table = self._tables.setdefault(key.partition(":")[0], OrderedDict())
            bucket = table.pop(key, None)
            tokens = self.capacity if bucket is None else self._level(bucket, now)
            admitted = tokens >= 1.0
            if admitted:
                tokens -= 1.0
            table[key] = _Bucket(tokens, now)  # (re)inserted last: the most recently used
            self._forget(table, now)
            return 0.0 if admitted else (1.0 - tokens) / self.rate

    def check(self, key: str) -> None:
        """Take one call from ``key``'s bucket, or raise RateLimited saying when to try again."""
        wait = self.wait_s(key)
        if wait > 0:
            raise RateLimited(f"rate limit exceeded: retry after {math.ceil(wait)} s", retry_after_s=wait)

    def _level(self, bucket: _Bucket, now: float) -> float:
        return min(float(self.capacity), bucket.tokens + max(0.0, now - bucket.stamp) * self.rate)

    def _forget(self, table: OrderedDict[str, _Bucket], now: float) -> None:
        # Least recently used first: forget buckets that are full again (no state lost), and
        # past max_keys the oldest whatever its level.
        while table:
            key, oldest = next(iter(table.items()))
            if len(table) <= self._max_keys and self._level(oldest, now) < self.capacity:
                break
            del table[key]


def peer_key(address: str) -> str:
    """The rate-limit key of a caller known only by its network address (``peer:…``).

    An IPv6 address counts as its /64 (one host usually holds a whole /64, so
    keying single addresses would give it billions of buckets); an IPv4
    address as itself; anything else (a Unix socket) as written.
    """
    text = address.strip().removeprefix("[").removesuffix("]")
    try:
        ip = ipaddress.ip_address(text.partition("%")[0])
    except ValueError:
        return f"peer:{address}"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return f"peer:{ip.ipv4_mapped}"
        return f"peer:{ipaddress.IPv6Network((ip, 64), strict=False)}"
    return f"peer:{ip}"
