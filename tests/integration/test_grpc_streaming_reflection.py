"""Streaming order, IndexingService, health, and a generic client that knows the API only by reflection."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pool, message_factory
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from service.api.grpc.server import GrpcServer
from service.api.grpc.stubs import Stubs, load
from service.bootstrap import App
from tests.integration.server_world import QUESTION, STORE, bearer, serve_grpc


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, GrpcServer, grpc.Channel]]:
    yield from serve_grpc(tmp_path_factory.mktemp("grpc-stream"))


@pytest.fixture(scope="module")
def stubs() -> Stubs:
    return load()


def test_stream_sends_text_then_sources_then_documents_then_done(world: Any, stubs: Stubs) -> None:
    app, _, channel = world
    service = stubs.query_grpc.QueryServiceStub(channel)
    request = stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION, level=0.0)
    events = list(service.StreamVectorQuery(request, metadata=bearer(app, "alice"), timeout=10))
    kinds = [e.WhichOneof("event") for e in events]
    first_source, first_document = kinds.index("source"), kinds.index("document")
    assert kinds[0] == "text" and kinds.count("text") > 1
    assert set(kinds[:first_source]) == {"text"} and set(kinds[first_source:first_document]) == {"source"}
    assert set(kinds[first_document:-1]) == {"document"} and kinds[-1] == "done"
    done = events[-1].done
    assert "".join(e.text for e in events if e.WhichOneof("event") == "text") == done.answer
    assert [e.source.chunk_id for e in events if e.WhichOneof("event") == "source"] == [c.chunk_id for c in done.chunks]
    assert {c.document_id for c in done.chunks} == {"handbook", "executive-pay"}
    assert [e.document for e in events if e.WhichOneof("event") == "document"] == list(done.documents)
    assert app.generator.streamed >= 1  # the pieces came from the generator's own stream


def test_stream_errors_are_status_codes(world: Any, stubs: Stubs) -> None:
    app, _, channel = world
    service = stubs.query_grpc.QueryServiceStub(channel)
    with pytest.raises(grpc.RpcError) as info:
        list(
            service.StreamDocumentQuery(
                stubs.query.DocumentQueryRequest(store_id=STORE, question=QUESTION, document_id="bob-notes"),
                metadata=bearer(app, "alice"),
            )
        )
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as info:
        list(
            service.StreamMultiDocumentQuery(
                stubs.query.MultiDocumentQueryRequest(store_id=STORE, question=QUESTION, document_ids=["handbook"])
            )
        )
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_indexing_service(world: Any, stubs: Stubs) -> None:
    app, _, channel = world
    indexing = stubs.indexing_grpc.IndexingServiceStub(channel)
    query = stubs.query_grpc.QueryServiceStub(channel)
    acl = stubs.common.Acl
    up = stubs.indexing.UpsertDocumentRequest
    doc = up(
        store_id=STORE,
        document_id="pushed",
        text="Parking permits cost 40 euros per month.",
        title="Parking",
        source_uri="https://cms.example/parking",
        acl=acl(allow=["user:carol"]),
    )
    with pytest.raises(grpc.RpcError) as info:
        indexing.UpsertDocument(doc, metadata=bearer(app, "carol"))
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    admin = bearer(app, "cms-plugin", admin=True)
    assert indexing.UpsertDocument(doc, metadata=admin).outcome == "indexed"
    assert indexing.UpsertDocument(doc, metadata=admin).outcome == "unchanged"
    ask = stubs.query.DocumentQueryRequest(store_id=STORE, question="parking permit cost", document_id="pushed")
    assert query.DocumentQuery(ask, metadata=bearer(app, "carol")).chunks[0].document_id == "pushed"
    with pytest.raises(grpc.RpcError) as info:
        query.DocumentQuery(ask, metadata=bearer(app, "bob"))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    state = indexing.SetDocumentAcl(
        stubs.indexing.SetDocumentAclRequest(store_id=STORE, document_id="pushed", acl=acl(allow=["user:bob"])),
        metadata=admin,
    )
    assert list(state.acl.allow) == ["user:bob"] and state.source == "admin" and state.store_id == STORE
    assert state.changed_by == "grpc:cms-plugin" and state.changed_at
    assert list(state.source_acl.allow) == ["user:carol"]
    assert query.DocumentQuery(ask, metadata=bearer(app, "bob")).chunks
    # The content system pushes the document again with its own ACL: the admin's override stays in force.
    repush = up(store_id=STORE, document_id="pushed", text=doc.text, acl=acl(allow=["user:carol", "user:dan"]))
    assert indexing.UpsertDocument(repush, metadata=admin).outcome == "acl_updated"
    assert query.DocumentQuery(ask, metadata=bearer(app, "bob")).chunks
    with pytest.raises(grpc.RpcError) as info:
        query.DocumentQuery(ask, metadata=bearer(app, "carol"))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    where = stubs.indexing.GetDocumentAclRequest(store_id=STORE, document_id="pushed")
    shown = indexing.GetDocumentAcl(where, metadata=admin)
    assert shown.source == "admin" and list(shown.source_acl.allow) == ["user:carol", "user:dan"]
    with pytest.raises(grpc.RpcError) as info:
        indexing.GetDocumentAcl(where, metadata=bearer(app, "carol"))
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    reset = indexing.ResetDocumentAcl(stubs.indexing.ResetDocumentAclRequest(document_id="pushed"), metadata=admin)
    assert reset.source == "api" and list(reset.acl.allow) == ["user:carol", "user:dan"] and not reset.changed_by
    assert query.DocumentQuery(ask, metadata=bearer(app, "carol")).chunks
    with pytest.raises(grpc.RpcError) as info:
        query.DocumentQuery(ask, metadata=bearer(app, "bob"))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    html = up(
        store_id=STORE,
        document_id="pushed-html",
        data=b"<html><body><h1>Bikes</h1><p>Bike racks.</p></body></html>",
        content_type="text/html",
        acl=acl(allow=["group:everyone"]),
    )
    bad_acl = up(store_id=STORE, document_id="bad", text="x", acl=acl(allow=["nobody"]))
    no_type = up(store_id=STORE, document_id="no-type", data=b"x", acl=acl(allow=["group:everyone"]))
    bulk = indexing.BulkUpsert(iter([html, bad_acl, no_type]), metadata=admin)
    assert [(r.document_id, r.ok, r.outcome) for r in bulk.results] == [
        ("pushed-html", True, "indexed"),
        ("bad", False, "INVALID_ARGUMENT"),
        ("no-type", False, "INVALID_ARGUMENT"),
    ]
    indexing.DeleteDocument(stubs.indexing.DeleteDocumentRequest(store_id=STORE, document_id="pushed"), metadata=admin)
    with pytest.raises(grpc.RpcError) as info:
        query.DocumentQuery(ask, metadata=bearer(app, "bob"))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as info:
        indexing.DeleteDocument(
            stubs.indexing.DeleteDocumentRequest(store_id=STORE, document_id="pushed"), metadata=admin
        )
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_upsert_into_an_unknown_store_is_not_found_unless_asked_to_create_it(world: Any, stubs: Stubs) -> None:
    app, _, channel = world
    indexing = stubs.indexing_grpc.IndexingServiceStub(channel)
    admin = bearer(app, "cms-plugin", admin=True)
    acl = stubs.common.Acl(allow=["group:everyone"])
    up = stubs.indexing.UpsertDocumentRequest

    def code(request: Any) -> grpc.StatusCode:
        with pytest.raises(grpc.RpcError) as info:
            indexing.UpsertDocument(request, metadata=admin)
        return info.value.code()  # type: ignore[no-any-return]

    assert code(up(store_id="acmee", document_id="d", text="Typo.", acl=acl)) == grpc.StatusCode.NOT_FOUND
    assert app.repository.get_store("acmee") is None
    assert code(up(store_id="acme\n", document_id="d", text="x", acl=acl, create_store=True)) == (
        grpc.StatusCode.INVALID_ARGUMENT
    )
    bad_principal = stubs.common.Acl(allow=["user:alice\n"])
    assert code(up(store_id=STORE, document_id="d", text="x", acl=bad_principal)) == grpc.StatusCode.INVALID_ARGUMENT
    made = indexing.UpsertDocument(
        up(store_id="fresh", document_id="d", text="A new store.", acl=acl, create_store=True), metadata=admin
    )
    assert made.outcome == "indexed" and app.repository.get_store("fresh") is not None
    again = up(store_id="fresh", document_id="d2", text="Into an existing store.", acl=acl)
    assert indexing.UpsertDocument(again, metadata=admin).outcome == "indexed"


def test_health_service(world: Any) -> None:
    _, _, channel = world
    health = health_pb2_grpc.HealthStub(channel)
    for name in ("", "docqa.v1.QueryService", "docqa.v1.AdminService", "docqa.v1.IndexingService"):
        reply = health.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_generic_reflection_client(world: Any) -> None:
    """Discover the services by reflection alone and call one, with no generated code involved."""
    app, _, channel = world
    database = ProtoReflectionDescriptorDatabase(channel)
    names = set(database.get_services())
    assert {
        "docqa.v1.QueryService",
        "docqa.v1.AdminService",
        "docqa.v1.IndexingService",
        "grpc.health.v1.Health",
    } <= names
    pool = descriptor_pool.DescriptorPool(database)
    method = pool.FindServiceByName("docqa.v1.QueryService").methods_by_name["VectorQuery"]
    request_class = message_factory.GetMessageClass(method.input_type)
    response_class = message_factory.GetMessageClass(method.output_type)
    call = channel.unary_unary(
        "/docqa.v1.QueryService/VectorQuery",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=response_class.FromString,
    )
    reply = call(request_class(store_id=STORE, question=QUESTION, level=0.0), metadata=bearer(app, "bob"), timeout=10)
    found = {c.document_id for c in reply.chunks}
    assert {"handbook", "bob-notes"} <= found and "executive-pay" not in found
    assert "retry_without_threshold_allowed" in response_class.DESCRIPTOR.fields_by_name
