"""Bytes that are not a request message: INVALID_ARGUMENT on every method, counted, no ERROR and no traceback.

Sent as raw bytes (identity serializers) to a real gRPC server on 127.0.0.1:
unary, server-streaming and client-streaming DocQA methods, and the standard
health and reflection services the server also carries.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from service.api.grpc.server import GrpcServer, services_for, start_grpc
from service.api.grpc.stubs import load
from service.bootstrap import App
from service.observability.metrics import Metrics
from tests.integration.server_world import QUESTION, STORE, SlowGenerator, bearer, build_world

JUNK = b"\xff\xff\xff"
#: Field 1 (store_id, a string) holding bytes that are not UTF-8: protobuf refuses to parse it.
NOT_UTF8 = b"\x0a\x02\xff\xfe"


def _raw(data: bytes) -> bytes:
    return data


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, GrpcServer, grpc.Channel, Metrics]]:
    app = build_world(tmp_path_factory.mktemp("grpc-junk"), generator=SlowGenerator())
    metrics = Metrics()
    server = start_grpc(services_for(app, metrics), "127.0.0.1", 0)
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    yield app, server, channel, metrics
    channel.close()
    server.stop(0)
    app.close()


def _count(metrics: Metrics, method: str, code: str = "INVALID_ARGUMENT") -> float:
    value = metrics.registry.get_sample_value(
        "docqa_requests_total", {"interface": "grpc", "method": method, "code": code}
    )
    return value or 0.0


def _call(channel: grpc.Channel, kind: str, path: str, data: bytes, metadata: Any) -> Any:
    options = {"request_serializer": _raw, "response_deserializer": _raw}
    if kind == "unary_unary":
        return channel.unary_unary(path, **options)(data, timeout=10, metadata=metadata)
    if kind == "unary_stream":
        return list(channel.unary_stream(path, **options)(data, timeout=10, metadata=metadata))
    if kind == "stream_unary":
        return channel.stream_unary(path, **options)(iter([data]), timeout=10, metadata=metadata)
    return list(channel.stream_stream(path, **options)(iter([data]), timeout=10, metadata=metadata))


METHODS = [
    ("unary_unary", "/docqa.v1.QueryService/VectorQuery", "docqa.v1.VectorQueryRequest"),
    ("unary_stream", "/docqa.v1.QueryService/StreamVectorQuery", "docqa.v1.VectorQueryRequest"),
    ("unary_unary", "/docqa.v1.AdminService/SetStoreSettings", "docqa.v1.SetStoreSettingsRequest"),
    ("stream_unary", "/docqa.v1.IndexingService/BulkUpsert", "docqa.v1.UpsertDocumentRequest"),
    ("unary_unary", "/grpc.health.v1.Health/Check", "grpc.health.v1.HealthCheckRequest"),
    ("unary_stream", "/grpc.health.v1.Health/Watch", "grpc.health.v1.HealthCheckRequest"),
    (
        "stream_stream",
        "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
        "grpc.reflection.v1alpha.ServerReflectionRequest",
    ),
]


@pytest.mark.parametrize(("kind", "path", "message"), METHODS, ids=[m[1].rsplit("/", 1)[-1] for m in METHODS])
@pytest.mark.parametrize("data", [JUNK, NOT_UTF8], ids=["junk", "not-utf8"])
def test_malformed_request_is_invalid_argument_counted_and_quiet(
    world: Any, caplog: pytest.LogCaptureFixture, kind: str, path: str, message: str, data: bytes
) -> None:
    app, _, channel, metrics = world
    method = path.rsplit("/", 1)[-1]
    before = _count(metrics, method)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(grpc.RpcError) as info:
        # An admin's token, so the client-streaming BulkUpsert reaches its first message.
        _call(channel, kind, path, data, bearer(app, "cms-plugin", admin=True))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == f"malformed request: the message is not a valid {message}"
    assert _count(metrics, method) == before + 1
    assert _count(metrics, method, "INTERNAL") == 0
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert not loud, [f"{r.name} {r.levelname} {r.getMessage()}" for r in loud]
    assert [r.levelno for r in caplog.records if r.getMessage().startswith("malformed request to ")] == [logging.DEBUG]


def test_the_server_still_answers_well_formed_requests(world: Any) -> None:
    app, _, channel, _ = world
    stubs = load()
    health = health_pb2_grpc.HealthStub(channel)
    assert health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10).status == 1  # SERVING
    watch = health.Watch(health_pb2.HealthCheckRequest(service=""), timeout=10)
    assert next(watch).status == 1
    watch.cancel()
    query = stubs.query_grpc.QueryServiceStub(channel)
    request = stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION, level=0.0)
    assert query.VectorQuery(request, metadata=bearer(app, "alice"), timeout=10).chunks
    events = list(query.StreamVectorQuery(request, metadata=bearer(app, "alice"), timeout=10))
    assert events[-1].HasField("done")
    # A valid message sent as raw bytes goes through the same tolerant parser: parsed, then refused for want of a token.
    with pytest.raises(grpc.RpcError) as info:
        _call(channel, "unary_unary", "/docqa.v1.QueryService/VectorQuery", request.SerializeToString(), None)
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
