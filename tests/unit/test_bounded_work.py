"""Bounded work: the per-caller token bucket (on an injected clock), cancellation, and a stream that stops."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from acl.errors import Cancelled, ConfigurationError, DeadlineExceeded, RateLimited
from acl.model import Acl
from service.api.errors import mapping_for
from service.api.grpc.context import _address
from service.config import RateLimit, load_settings
from service.domain.queries import Caller, VectorQuery
from service.generation.prompt import Prompt
from service.query.cancellation import Cancellation
from service.query.engine import QueryEngine
from service.security.rate_limit import RateLimiter, peer_key
from tests.fakes_service import RecordingGenerator
from tests.unit.engine_world import STORE, make_world


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# the token bucket ------------------------------------------------------------------
def test_a_burst_is_admitted_then_the_next_call_waits_for_one_refill() -> None:
    clock = Clock()
    limiter = RateLimiter(2.0, 3, clock=clock)
    assert [limiter.wait_s("user:alice") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.wait_s("user:alice") == pytest.approx(0.5)  # one call per 1/rate seconds
    assert limiter.wait_s("user:bob") == 0.0  # each caller has a bucket of its own
    clock.now += 0.5
    assert limiter.wait_s("user:alice") == 0.0
    assert limiter.wait_s("user:alice") > 0


def test_an_idle_bucket_refills_only_to_its_capacity() -> None:
    clock = Clock()
    limiter = RateLimiter(10.0, 2, clock=clock)
    for _ in range(2):
        limiter.check("k")
    clock.now += 3600
    limiter.check("k")
    limiter.check("k")
    with pytest.raises(RateLimited) as info:
        limiter.check("k")
    assert info.value.retry_after_s == pytest.approx(0.1)
    assert "retry after 1 s" in info.value.message
    mapping = mapping_for(info.value)
    assert (mapping.grpc_status, mapping.graphql_code) == ("RESOURCE_EXHAUSTED", "RATE_LIMITED")


def test_memory_is_bounded_and_forgetting_a_full_bucket_loses_nothing() -> None:
    clock = Clock()
    limiter = RateLimiter(1.0, 2, max_keys=10, clock=clock)
    for n in range(1000):  # a stream of new callers (e.g. addresses) never grows past max_keys
        limiter.wait_s(f"peer:{n}")
    assert len(limiter) == 10
    limiter.wait_s("user:alice")
    limiter.wait_s("user:alice")
    clock.now += 2  # alice's bucket is full again: the same as no bucket
    limiter.wait_s("user:bob")
    assert len(limiter) == 10 + 1  # the addresses' table (swept on its next use) and bob's; alice's is forgotten
    assert [limiter.wait_s("user:alice") for _ in range(3)][-1] > 0  # a full bucket again, not more


def test_configured_limits() -> None:
    assert RateLimiter.from_config(RateLimit(), 10) is None  # 0 = off
    limiter = RateLimiter.from_config(RateLimit(requests_per_second=2.5), 10)
    assert limiter is not None and limiter.capacity == 3  # burst 0 = the rate rounded up
    with pytest.raises(ConfigurationError, match=r"limits\.rate\.grpc.*burst needs requests_per_second"):
        load_settings(None, limits={"rate": {"grpc": {"burst": 5}}})
    with pytest.raises(ConfigurationError, match=r"limits\.max_streams"):
        load_settings(None, limits={"max_streams": 0})
    with pytest.raises(ConfigurationError, match=r"max_streams must not exceed server\.grpc_workers"):
        load_settings(None, limits={"max_streams": 9}, server={"grpc_workers": 8})


# cancellation ------------------------------------------------------------------------
def test_cancellation_by_the_caller_or_by_the_deadline() -> None:
    clock = Clock()
    open_ended = Cancellation.within(None, clock)
    clock.now += 10**6
    open_ended.check()
    timed = Cancellation.within(2.0, clock)
    timed.check()
    clock.now += 2.0
    with pytest.raises(DeadlineExceeded):
        timed.check()
    cancelled = Cancellation.within(60.0, clock)
    cancelled.cancel()
    with pytest.raises(Cancelled):
        cancelled.check()


class EndlessGenerator(RecordingGenerator):
    """Streams as long as it is read, counting the pieces it produced and whether it was closed."""

    produced = 0
    closed = False

    def stream(self, prompt: Prompt) -> Iterator[str]:
        self.prompts.append(prompt)
        try:
            while True:
                self.produced += 1
                yield f"word{self.produced} "
        finally:
            self.closed = True


def _engine_with(generator: RecordingGenerator) -> QueryEngine:
    world = make_world()
    world.add("q3.md", ["Revenue in the third quarter was 48 million euros."], Acl.of(["group:everyone"]))
    return QueryEngine(
        repository=world.repo, index=world.index, embedder_for=lambda _: world.embedder, generator=generator
    )


def test_a_cancelled_stream_stops_the_generator_at_the_next_piece() -> None:
    generator = EndlessGenerator()
    engine = _engine_with(generator)
    cancel = Cancellation()
    received: list[str] = []

    def on_text(piece: str) -> None:
        received.append(piece)
        if len(received) == 2:
            cancel.cancel()  # as the gRPC layer does when its client goes away

    with pytest.raises(Cancelled):
        engine.ask(Caller("alice"), VectorQuery(STORE, "revenue third quarter", level=0.0), on_text, cancel)
    assert received == ["word1 ", "word2 "]
    assert generator.produced == 3 and generator.closed  # read one more, then closed


def test_no_generation_starts_for_a_caller_already_gone() -> None:
    generator = EndlessGenerator()
    engine = _engine_with(generator)
    cancel = Cancellation()
    cancel.cancel()
    with pytest.raises(Cancelled):
        engine.ask(Caller("alice"), VectorQuery(STORE, "revenue third quarter", level=0.0), lambda _: None, cancel)
    assert generator.prompts == [] and generator.produced == 0


def test_a_flood_of_addresses_never_resets_a_users_bucket() -> None:
    clock = Clock()
    limiter = RateLimiter(1.0, 2, max_keys=10, clock=clock)
    limiter.wait_s("user:mallory")
    limiter.wait_s("user:mallory")  # spent
    for n in range(1000):  # new addresses, cheap to come by, fill their own table only
        limiter.wait_s(peer_key(f"10.0.{n // 256}.{n % 256}"))
    assert limiter.wait_s("user:mallory") > 0  # still spent: the flood handed mallory no new bucket


@pytest.mark.parametrize(
    ("address", "key"),
    [
        ("10.0.0.7", "peer:10.0.0.7"),
        ("[2001:db8:1:2:aaaa::1]", "peer:2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff:ffff:ffff:ffff", "peer:2001:db8:1:2::/64"),
        ("::ffff:10.0.0.7", "peer:10.0.0.7"),
        ("fe80::1%eth0", "peer:fe80::/64"),
        ("unknown", "peer:unknown"),
    ],
)
def test_an_address_is_keyed_by_the_block_one_host_holds(address: str, key: str) -> None:
    assert peer_key(address) == key


def test_a_grpc_peer_loses_its_scheme_and_port() -> None:
    assert _address("ipv4:10.0.0.7:51234") == "10.0.0.7"
    assert _address("ipv6:[2001:db8::7]:51234") == "[2001:db8::7]"
    assert _address("unix:/run/docqa.sock") == "unix:/run/docqa.sock"
