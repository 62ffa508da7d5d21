"""Where rate limits are counted (``limits.rate.storage_uri``): the laptop's default stays this process's token
buckets, and a shared store's settings are checked at start-up. The store itself is tested against a real Redis
in tests/integration/test_shared_rate_limit.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from acl.errors import ConfigurationError
from service.config import RateLimit, RateLimits, load_settings
from service.security.rate_limit import RateLimiter
from service.security.shared_rate_limit import SharedRateLimiter, limiter_for

pytestmark = pytest.mark.usefixtures("clean_env")

SHARED = "redis://:s3cret@redis.docqa.svc:6379/0"


def test_the_default_is_this_process_buckets_as_before() -> None:
    rates = load_settings(None).limits.rate
    assert rates.storage_uri == "memory://" and not rates.shared and rates.on_store_error == "local"
    assert limiter_for(rates, "grpc") is None  # no rate, no limiter
    on = RateLimits(grpc=RateLimit(requests_per_second=2.5))  # any rate and burst in memory
    limiter = limiter_for(on, "grpc")
    assert type(limiter) is RateLimiter and limiter.capacity == 3 and not limiter.remote


def test_a_shared_store_gets_the_shared_limiter_built_without_connecting() -> None:
    rates = RateLimits(grpc=RateLimit(requests_per_second=20, burst=40), storage_uri=SHARED)
    limiter = limiter_for(rates, "grpc")
    assert isinstance(limiter, SharedRateLimiter) and limiter.remote
    assert limiter_for(rates, "graphql") is None  # graphql has no rate: off, store or not


@pytest.mark.parametrize(
    ("rate", "message"),
    [
        ({"requests_per_second": 2.5, "burst": 3}, r"3 / 2\.5 = 1\.2\); e\.g\. burst 5 \(2 s\)"),
        ({"requests_per_second": 100, "burst": 10}, r"10 / 100 = 0\.1\); e\.g\. burst 100 \(1 s\)"),
        ({"requests_per_second": 0.3}, r"1 / 0\.3 = 3\.33333\); e\.g\. burst 3 \(10 s\)"),
    ],
)
def test_a_shared_limit_needs_a_window_of_whole_seconds(rate: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigurationError, match=r"limits\.rate: .*graphql: a shared store counts burst calls"):
        load_settings(None, limits={"rate": {"graphql": rate, "storage_uri": SHARED}})
    with pytest.raises(ConfigurationError, match=message):
        load_settings(None, limits={"rate": {"graphql": rate, "storage_uri": SHARED}})
    load_settings(None, limits={"rate": {"graphql": rate}})  # in memory it is a token bucket: any rate
    whole = load_settings(
        None, limits={"rate": {"grpc": {"requests_per_second": 0.01, "burst": 3}, "storage_uri": SHARED}}
    )
    assert whole.limits.rate.shared


@pytest.mark.parametrize(
    "uri", ["memory://elsewhere", "memcached://cache:11211", "mongodb://db", "valkey://cache:6379", "redis-cache:6379"]
)
def test_a_store_that_cannot_keep_them_is_refused_naming_the_key(uri: str) -> None:
    with pytest.raises(ConfigurationError, match=r"limits\.rate: .*storage_uri: use memory:// or redis://"):
        load_settings(None, limits={"rate": {"storage_uri": uri}})


def test_the_store_password_comes_from_the_environment_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "docqa.yaml"
    config.write_text(f"limits:\n  rate:\n    storage_uri: {SHARED}\n")
    with pytest.raises(ConfigurationError, match=r"limits\.rate\.storage_uri: .*DOCQA_LIMITS__RATE__STORAGE_URI"):
        load_settings(config)
    config.write_text("limits:\n  rate:\n    storage_uri: redis://redis.docqa.svc:6379/0\n")  # no password: fine
    assert load_settings(config).limits.rate.shared
    monkeypatch.setenv("DOCQA_LIMITS__RATE__STORAGE_URI", SHARED)
    settings = load_settings(config)
    assert settings.limits.rate.storage_uri == SHARED and "s3cret" not in repr(settings)
