"""Rate limits shared by replicas (``limits.rate.storage_uri: redis://…``), against a real Redis.

Two replicas are two applications, each behind its own gRPC and HTTP servers on loopback, with limiters of
their own that share only the store. The machine's Redis (``DOCQA_TEST_REDIS_URL``, default
``redis://127.0.0.1:6379/0``) holds the budgets, each test under a key prefix of its own that is removed at
teardown; without it those cases skip, saying why. The outage cases need no Redis (a closed port, a socket that
never answers) or start a ``redis-server`` of their own to stop and restart.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
import redis

from acl.errors import RateLimited
from service.api.grpc.stubs import Stubs, load
from service.bootstrap import App
from service.config import RateLimit, RateLimits
from service.security.shared_rate_limit import SharedRateLimiter, check, limiter_for
from tests.integration.server_world import QUESTION, STORE, Served, bearer, build_world, on_servers, token

REDIS_URL = os.environ.get("DOCQA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
#: Three calls, then none for 300 s: no budget comes back while a test runs.
SLOW = {"requests_per_second": 0.01, "burst": 3}
ASK = "query Ask($store: String!, $q: String!) { vectorQuery(storeId: $store, question: $q, level: 0.0) { answer } }"


@dataclass
class Store:
    url: str
    prefix: str
    client: redis.Redis

    def stored_keys(self) -> list[str]:
        return sorted(key.decode() for key in self.client.scan_iter(f"{self.prefix}:*"))


@pytest.fixture
def store() -> Iterator[Store]:
    client = redis.from_url(REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError as exc:
        client.close()
        pytest.skip(f"Redis is not reachable at {REDIS_URL} ({type(exc).__name__}): set DOCQA_TEST_REDIS_URL")
    shared = Store(REDIS_URL, f"docqa-test-{uuid.uuid4().hex[:12]}", client)
    yield shared
    for key in shared.stored_keys():
        client.delete(key)
    client.close()


@pytest.fixture(scope="module")
def stubs() -> Stubs:
    return load()


@contextmanager
def replicas(tmp_path: Path, rate: dict[str, Any], count: int = 2) -> Iterator[list[tuple[App, Served]]]:
    """``count`` replicas of one release (the same signing key and limits): applications of their own, each
    behind its own gRPC and HTTP servers."""
    with ExitStack() as stack:
        running = []
        for n in range(count):
            app = build_world(tmp_path / f"replica-{n}", limits={"rate": rate})
            stack.callback(app.close)
            running.append((app, stack.enter_context(on_servers(app))))
        yield running


def _list_stores(stubs: Stubs, served: Served, metadata: Any) -> grpc.StatusCode:
    """ListStores on a replica: OK, or the status it was refused with."""
    with grpc.insecure_channel(served.channel_target) as channel:
        admin = stubs.admin_grpc.AdminServiceStub(channel)
        try:
            admin.ListStores(stubs.admin.ListStoresRequest(), metadata=metadata, timeout=10)
        except grpc.RpcError as exc:
            return exc.code()
    return grpc.StatusCode.OK


def _refusal(stubs: Stubs, served: Served, metadata: Any) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    with grpc.insecure_channel(served.channel_target) as channel:
        query = stubs.query_grpc.QueryServiceStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            query.VectorQuery(stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION), metadata=metadata)
    return info.value.code(), info.value.details(), dict(info.value.trailing_metadata())


def _ask(served: Served, app: App, user: str) -> httpx.Response:
    headers = {"authorization": f"Bearer {token(app, user)}"}
    variables = {"store": STORE, "q": QUESTION}
    return httpx.post(served.graphql_url, json={"query": ASK, "variables": variables}, headers=headers, timeout=30)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# one budget across replicas -------------------------------------------------------------
def test_in_memory_each_replica_admits_its_own_burst(tmp_path: Path, stubs: Stubs) -> None:
    """What sharing fixes: with memory:// (the default) two replicas admit twice the burst."""
    with replicas(tmp_path, {"grpc": SLOW}) as [(a, on_a), (_, on_b)]:
        alice = bearer(a, "alice")
        codes = [_list_stores(stubs, served, alice) for served in (on_a, on_b) * 4]
    assert codes == [grpc.StatusCode.OK] * 6 + [grpc.StatusCode.RESOURCE_EXHAUSTED] * 2


def test_two_replicas_share_one_grpc_budget(tmp_path: Path, stubs: Stubs, store: Store) -> None:
    rate = {"grpc": SLOW, "storage_uri": store.url, "key_prefix": store.prefix}
    with replicas(tmp_path, rate) as [(a, on_a), (_, on_b)]:
        alice = bearer(a, "alice")  # the release's one signing key: valid on every replica
        codes = [_list_stores(stubs, served, alice) for served in (on_a, on_b, on_a, on_b)]
        assert codes == [grpc.StatusCode.OK] * 3 + [grpc.StatusCode.RESOURCE_EXHAUSTED]
        code, details, trailers = _refusal(stubs, on_a, alice)
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "rate limit exceeded" in details
        assert 250 <= int(trailers["retry-after"]) <= 300  # when the shared window lets alice in again
        assert _list_stores(stubs, on_b, bearer(a, "bob")) == grpc.StatusCode.OK  # bob has a budget of his own
        exposition = on_a.services.metrics.exposition().decode()
        assert 'docqa_requests_total{code="RESOURCE_EXHAUSTED",interface="grpc",method="VectorQuery"} 1.0' in exposition
        assert 'docqa_rate_limit_store_failures_total{interface="grpc"} 0.0' in exposition
    keys = store.stored_keys()
    assert len(keys) == 2 and all(":rate.grpc/user:" in key for key in keys)
    assert not any("alice" in key or "bob" in key for key in keys)  # callers' ids are hashed


def test_two_replicas_share_one_graphql_budget(tmp_path: Path, store: Store) -> None:
    rate = {"graphql": {"requests_per_second": 0.01, "burst": 2}, "storage_uri": store.url, "key_prefix": store.prefix}
    with replicas(tmp_path, rate) as [(a, on_a), (b, on_b)]:
        assert [_ask(on_a, a, "alice").status_code, _ask(on_b, b, "alice").status_code] == [200, 200]
        refused = _ask(on_a, a, "alice")
        assert refused.status_code == 429 and 150 <= int(refused.headers["retry-after"]) <= 200
        [error] = refused.json()["errors"]
        assert error["extensions"]["code"] == "RATE_LIMITED" and "rate limit exceeded" in error["message"]
        assert _ask(on_b, b, "alice").status_code == 429
        assert _ask(on_b, b, "bob").status_code == 200
        assert len(a.repository.audit_records("alice", 10)) + len(b.repository.audit_records("alice", 10)) == 2


# the store unreachable -------------------------------------------------------------------
def test_an_unreachable_store_leaves_each_replica_its_own_buckets(tmp_path: Path, stubs: Stubs) -> None:
    """on_store_error: local (the default): the limit still holds, per replica, and each call is counted."""
    rate = {"grpc": SLOW, "storage_uri": f"redis://127.0.0.1:{_closed_port()}/0"}
    with replicas(tmp_path, rate, count=1) as [(a, on_a)]:
        alice = bearer(a, "alice")
        codes = [_list_stores(stubs, on_a, alice) for _ in range(4)]
        assert codes == [grpc.StatusCode.OK] * 3 + [grpc.StatusCode.RESOURCE_EXHAUSTED]
        code, details, trailers = _refusal(stubs, on_a, alice)
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "rate limit exceeded" in details
        assert int(trailers["retry-after"]) >= 1
        exposition = on_a.services.metrics.exposition().decode()
        assert 'docqa_rate_limit_store_failures_total{interface="grpc"} 5.0' in exposition


def test_closed_refuses_every_call_while_the_store_is_away(tmp_path: Path, stubs: Stubs) -> None:
    rate = {
        "grpc": SLOW,
        "graphql": SLOW,
        "storage_uri": f"redis://127.0.0.1:{_closed_port()}/0",
        "on_store_error": "closed",
        "store_retry_s": 30,
    }
    with replicas(tmp_path, rate, count=1) as [(a, on_a)]:
        code, details, trailers = _refusal(stubs, on_a, bearer(a, "alice"))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "rate limit cannot be checked now" in details
        assert 25 <= int(trailers["retry-after"]) <= 30  # when the store is asked again
        refused = _ask(on_a, a, "alice")
        assert refused.status_code == 503 and 25 <= int(refused.headers["retry-after"]) <= 30
        [error] = refused.json()["errors"]
        assert error["extensions"]["code"] == "RESOURCE_EXHAUSTED"
        assert a.repository.audit_records("alice", 10) == []  # nothing ran
        exposition = on_a.services.metrics.exposition().decode()
        assert 'docqa_rate_limit_store_failures_total{interface="graphql"} 1.0' in exposition


def test_a_store_that_never_answers_costs_one_timeout_per_retry_period() -> None:
    with socket.socket() as silent:  # accepts connections (the backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        rates = RateLimits(
            grpc=RateLimit(**SLOW),
            storage_uri=f"redis://127.0.0.1:{silent.getsockname()[1]}/0",
            store_timeout_s=0.2,
            store_retry_s=60,
        )
        limiter = limiter_for(rates, "grpc")
        assert isinstance(limiter, SharedRateLimiter)
        started = time.perf_counter()
        limiter.check("user:alice")
        first = time.perf_counter() - started
        started = time.perf_counter()
        for _ in range(2):
            limiter.check("user:alice")
        later = time.perf_counter() - started
    assert 0.15 <= first < 1.0  # store_timeout_s, tried once
    assert later < 0.3  # not a timeout each (0.4 s): within store_retry_s the replica's buckets decide at once
    with pytest.raises(RateLimited):
        limiter.check("user:alice")  # the fourth call: the local bucket's burst of 3 is spent


# the store away, then back ----------------------------------------------------------------
@contextmanager
def redis_server(port: int, folder: Path) -> Iterator[None]:
    """A redis-server of the test's own on ``port`` (nothing kept on disk)."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not os.access(binary, os.X_OK):
        pytest.skip("redis-server is not installed (Debian's redis-server package)")
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    process = subprocess.Popen([*command, "--dir", str(folder)], stdout=subprocess.DEVNULL)
    try:
        client = redis.Redis(port=port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.fail("redis-server did not start")
                time.sleep(0.05)
        client.close()
        yield
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_shared_again_once_the_store_is_back(tmp_path: Path) -> None:
    port = _closed_port()
    failures: list[int] = []
    rates = RateLimits(
        grpc=RateLimit(requests_per_second=0.01, burst=2),
        storage_uri=f"redis://127.0.0.1:{port}/0",
        store_timeout_s=0.5,
        store_retry_s=0,
    )
    a, b = (limiter_for(rates, "grpc", lambda: failures.append(1)) for _ in range(2))
    assert a is not None and b is not None

    def admitted(limiter: Any, key: str) -> bool:
        try:
            limiter.check(key)
        except RateLimited:
            return False
        return True

    with redis_server(port, tmp_path):
        assert [admitted(x, "user:alice") for x in (a, b, a)] == [True, True, False]  # one budget of 2
    assert [admitted(x, "user:carol") for x in (a, b, a, b)] == [True, True, True, True]  # each replica's own 2
    assert len(failures) == 4
    with redis_server(port, tmp_path):
        assert [admitted(x, "user:dave") for x in (a, b, a, b)] == [True, True, False, False]  # shared again
    assert len(failures) == 4


def test_doctor_says_whether_the_store_answers_and_never_its_password(store: Store) -> None:
    assert check(RateLimits(storage_uri=store.url)) == [
        ("rate-limit store", True, f"{store.url} answers: one budget per caller across replicas")
    ]
    away = RateLimits(storage_uri=f"redis://:s3cret@127.0.0.1:{_closed_port()}/0", on_store_error="closed")
    [(name, ok, detail)] = check(away)
    assert name == "rate-limit store" and not ok
    assert "does not answer: every call is refused (on_store_error: closed)" in detail
    assert "s3cret" not in detail and detail.startswith("redis://127.0.0.1:")
    assert check(RateLimits()) == [
        ("rate-limit store", True, "memory:// (each replica counts its callers' calls on its own)")
    ]
