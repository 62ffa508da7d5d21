"""Bounded work over real servers on 127.0.0.1: streams stop when their caller goes away, a bounded stream
pool, and per-caller rate limits over gRPC and GraphQL (HTTP 429).

The streaming tests answer with the real ibm-watsonx-ai SDK against the stand-in watsonx server, which paces
its tokens and records how many it sent and whether the client hung up.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

from service.api.graphql.context import GraphQLServices
from service.api.grpc.server import GrpcServer, services_for, start_grpc
from service.api.grpc.stubs import Stubs, load
from service.api.http import start_http
from service.bootstrap import App
from service.generation.port import Completion, Generator
from service.generation.prompt import Prompt
from service.generation.watsonx import WatsonxGenerator
from service.observability.metrics import Metrics
from tests.integration.server_world import QUESTION, STORE, bearer, build_world, token
from tests.integration.test_watsonx import (  # noqa: F401  (fixtures: the stand-in over TLS, the SDK's environment)
    API_KEY,
    MODEL,
    PROJECT,
    USER,
    _sdk_environment,
    certificate,
    config_for,
    server,
)
from tests.integration.watsonx_standin import StandIn

#: Tokens the stand-in's answer has, and the most it may send once the client has gone.
WORDS = 200
AFTER_CANCEL = 10


@pytest.fixture(scope="module")
def stubs() -> Stubs:
    return load()


def _serve(app: App, metrics: Metrics | None = None) -> tuple[GrpcServer, grpc.Channel]:
    grpc_server = start_grpc(services_for(app, metrics or Metrics()), "127.0.0.1", 0)
    return grpc_server, grpc.insecure_channel(f"127.0.0.1:{grpc_server.port}")


def _request(stubs: Stubs) -> Any:
    return stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION, level=0.0)


# streams that stop ---------------------------------------------------------------
@pytest.fixture
def slow_model(
    server: StandIn,  # noqa: F811
    certificate: tuple[Path, Path],  # noqa: F811
    tmp_path: Path,
    stubs: Stubs,
) -> Iterator[tuple[App, grpc.Channel, StandIn]]:
    """A gRPC server answering with watsonx (the stand-in), whose streamed answer takes a while."""
    server.clear()
    server.users = {USER: API_KEY}
    server.projects = {PROJECT}
    server.models = {MODEL: 8192}
    server.reply = " ".join(f"word{n}" for n in range(WORDS))
    generator = WatsonxGenerator(config_for(server, certificate, max_new_tokens=2 * WORDS, timeout_s=10.0))
    app = build_world(tmp_path, generator=generator)
    grpc_server, channel = _serve(app)
    # Connect first (authorize, project, model specs), so that a test's deadline is spent streaming.
    service = stubs.query_grpc.QueryServiceStub(channel)
    service.VectorQuery(_request(stubs), metadata=bearer(app, "alice"), timeout=30)
    server.stream_delay_s = 0.1
    server.clear()
    yield app, channel, server
    server.stream_delay_s = 0.0
    channel.close()
    grpc_server.stop(0)
    app.close()


def _outcomes(app: App) -> list[str]:
    return [r.outcome for r in app.repository.audit_records("alice", 10)]


def test_a_cancelled_stream_stops_reading_from_the_model(slow_model: Any, stubs: Stubs) -> None:
    app, channel, standin = slow_model
    service = stubs.query_grpc.QueryServiceStub(channel)
    call = service.StreamVectorQuery(_request(stubs), metadata=bearer(app, "alice"), timeout=60)
    first = next(call)
    assert first.WhichOneof("event") == "text" and first.text == "word0 "
    call.cancel()
    (stream,) = standin.streams
    assert stream.finished.wait(30), "the stand-in is still streaming to nobody"
    assert stream.closed_by_client  # the connection to the model was closed ...
    assert stream.sent <= 1 + AFTER_CANCEL < stream.total  # ... within a few tokens of the cancel
    for _ in range(200):  # the worker records the outcome once it stopped
        if "CANCELLED" in _outcomes(app):
            break
        threading.Event().wait(0.05)
    assert _outcomes(app)[0] == "CANCELLED"


def test_a_stream_past_its_deadline_stops_reading_from_the_model(slow_model: Any, stubs: Stubs) -> None:
    app, channel, standin = slow_model
    service = stubs.query_grpc.QueryServiceStub(channel)
    with pytest.raises(grpc.RpcError) as info:
        list(service.StreamVectorQuery(_request(stubs), metadata=bearer(app, "alice"), timeout=2.0))
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    (stream,) = standin.streams
    assert stream.finished.wait(30), "the stand-in is still streaming to nobody"
    assert stream.closed_by_client and 0 < stream.sent < stream.total


# the stream pool -----------------------------------------------------------------
class GatedGenerator(Generator):
    """Streams one word, then waits for the test to open the gate."""

    def __init__(self) -> None:
        self.model_id = "gated"
        self.context_tokens = 8192
        self.gate = threading.Event()

    def generate(self, prompt: Prompt) -> Completion:
        return Completion(text="The answer [1].", model_id=self.model_id)

    def stream(self, prompt: Prompt) -> Iterator[str]:
        yield "The "
        self.gate.wait(30)
        yield "answer [1]."


def test_streams_beyond_the_pool_are_refused_at_once(tmp_path: Path, stubs: Stubs) -> None:
    generator = GatedGenerator()
    app = build_world(tmp_path, generator=generator, limits={"max_streams": 1})
    metrics = Metrics()
    grpc_server, channel = _serve(app, metrics)
    try:
        service = stubs.query_grpc.QueryServiceStub(channel)
        metadata = bearer(app, "alice")
        first = service.StreamVectorQuery(_request(stubs), metadata=metadata, timeout=60)
        assert next(first).text == "The "  # the one worker is busy with this answer
        with pytest.raises(grpc.RpcError) as info:
            list(service.StreamVectorQuery(_request(stubs), metadata=bearer(app, "bob"), timeout=60))
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert ("retry-after", "1") in info.value.trailing_metadata()
        # Unary answers do not wait for the stream pool.
        assert service.VectorQuery(_request(stubs), metadata=metadata, timeout=60).answer
        generator.gate.set()
        events = list(first)
        assert events[-1].WhichOneof("event") == "done"
        # Its worker is free again once the client has seen the end of the first stream.
        again = list(service.StreamVectorQuery(_request(stubs), metadata=metadata, timeout=60))
        assert again[-1].WhichOneof("event") == "done"
        exposition = metrics.exposition().decode()
        refused = 'docqa_requests_total{code="RESOURCE_EXHAUSTED",interface="grpc",method="StreamVectorQuery"} 1.0'
        assert refused in exposition
    finally:
        channel.close()
        grpc_server.stop(0)
        app.close()


# rate limits -------------------------------------------------------------------------
#: Three calls at once, then one per 100 s: no refill while a test runs.
SLOW_RATE = {"requests_per_second": 0.01, "burst": 3}


def test_grpc_rate_limit_per_caller(tmp_path: Path, stubs: Stubs) -> None:
    app = build_world(tmp_path, limits={"rate": {"grpc": SLOW_RATE}})
    metrics = Metrics()
    grpc_server, channel = _serve(app, metrics)
    try:
        admin = stubs.admin_grpc.AdminServiceStub(channel)
        query = stubs.query_grpc.QueryServiceStub(channel)
        alice = bearer(app, "alice")
        for _ in range(3):
            admin.ListStores(stubs.admin.ListStoresRequest(), metadata=alice, timeout=10)
        refused = []
        for store in (STORE, "no-such-store"):  # over the limit, an unknown store looks the same as a real one
            with pytest.raises(grpc.RpcError) as info:
                query.VectorQuery(
                    stubs.query.VectorQueryRequest(store_id=store, question=QUESTION), metadata=alice, timeout=10
                )
            refused.append((info.value.code(), info.value.details(), dict(info.value.trailing_metadata())))
        assert refused[0] == refused[1]
        code, details, trailers = refused[0]
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "rate limit" in details
        assert int(trailers["retry-after"]) >= 1
        # bob has a bucket of his own; callers without a token share their address's.
        assert admin.ListStores(stubs.admin.ListStoresRequest(), metadata=bearer(app, "bob"), timeout=10).stores
        codes = []
        for _ in range(4):
            with pytest.raises(grpc.RpcError) as info:
                admin.ListStores(stubs.admin.ListStoresRequest(), timeout=10)
            codes.append(info.value.code())
        assert codes == [grpc.StatusCode.UNAUTHENTICATED] * 3 + [grpc.StatusCode.RESOURCE_EXHAUSTED]
        exposition = metrics.exposition().decode()
        assert 'docqa_requests_total{code="RESOURCE_EXHAUSTED",interface="grpc",method="VectorQuery"} 2.0' in exposition
        assert app.repository.audit_records("alice", 10) == []  # refused before any query ran
    finally:
        channel.close()
        grpc_server.stop(0)
        app.close()


ASK = "query Ask($store: String!, $q: String!) { vectorQuery(storeId: $store, question: $q, level: 0.0) { answer } }"


def test_graphql_rate_limit_is_http_429_with_a_typed_error(tmp_path: Path) -> None:
    app = build_world(tmp_path, limits={"rate": {"graphql": {"requests_per_second": 0.01, "burst": 2}}})
    services = services_for(app, Metrics())
    http = start_http(GraphQLServices(app, services.authenticator, services.queries, services.metrics), "127.0.0.1", 0)
    url = f"http://127.0.0.1:{http.port}/graphql"

    def post(headers: dict[str, str]) -> httpx.Response:
        return httpx.post(url, json={"query": ASK, "variables": {"store": STORE, "q": QUESTION}}, headers=headers)

    try:
        alice = {"authorization": f"Bearer {token(app, 'alice')}"}
        for _ in range(2):
            reply = post(alice)
            assert reply.status_code == 200 and reply.json()["data"]["vectorQuery"]["answer"]
        refused = post(alice)
        assert refused.status_code == 429
        assert int(refused.headers["retry-after"]) >= 1
        body = refused.json()
        assert "data" not in body  # nothing ran
        [error] = body["errors"]
        assert error["extensions"]["code"] == "RATE_LIMITED" and "rate limit" in error["message"]
        assert post({"authorization": f"Bearer {token(app, 'bob')}"}).status_code == 200
        # Callers without a valid token share their address's bucket.
        statuses = [post({"authorization": "Bearer not-a-token"}).status_code for _ in range(3)]
        assert statuses == [200, 200, 429]
        exposition = services.metrics.exposition().decode()
        assert 'docqa_requests_total{code="RESOURCE_EXHAUSTED",interface="graphql",method="request"} 2.0' in exposition
        assert app.repository.audit_records("alice", 10)[0].outcome == "OK"
        assert len(app.repository.audit_records("alice", 10)) == 2  # the refused request never reached a query
    finally:
        http.stop()
        app.close()
