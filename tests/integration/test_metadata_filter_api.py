"""Metadata filters over GraphQL and gRPC, and the indexing API's metadata, on real servers over loopback.

Both interfaces: each filter narrows what comes back, never widens access (an unreadable document stays out
whatever the filter), a named document that does not match gives no chunk (not NOT_FOUND), and bad input
(from after to, a malformed date, a bad metadata key, a glob too long, an unknown field) is a typed error
that changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import pytest

from acl.model import Acl
from indexer.index.attributes import parse_instant
from service.api.grpc.stubs import Stubs, load
from service.bootstrap import App
from tests.integration.server_world import STORE, Served, SlowGenerator, bearer, build_world, on_servers, token

QUESTION = "How many days of paid vacation leave?"

GQL = """query Ask($store: String!, $q: String!, $filter: QueryFilter, $ids: [String!]!, $id: String!) {
  vectorQuery(storeId: $store, question: $q, level: 0, filter: $filter) { chunks { documentId } }
  multiDocumentQuery(storeId: $store, question: $q, documentIds: $ids, level: 0, filter: $filter) {
    noRelevantDocument chunks { documentId }
  }
  documentQuery(storeId: $store, question: $q, documentId: $id, filter: $filter) {
    noRelevantDocument chunks { documentId }
  }
}"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, Served]]:
    app = build_world(tmp_path_factory.mktemp("filters"), generator=SlowGenerator())
    ingestor = app.ingestor(STORE)
    for document_id, metadata, modified, allow in (
        ("hr/leave.md", {"dept": "hr"}, "2024-01-15T00:00:00Z", ["group:everyone"]),
        ("hr/secret-leave.md", {"dept": "hr"}, "2024-02-01T00:00:00Z", ["group:hr"]),
        ("it/leave.html", {"dept": "it"}, None, ["group:everyone"]),
    ):
        ingestor.upsert_bytes(
            document_id,
            b"Paid vacation leave is 25 days per year for everyone.",
            "text/html" if document_id.endswith(".html") else "text/markdown",
            acl=Acl.of(allow),
            title=f"Leave {document_id}",
            metadata=metadata,
            modified=None if modified is None else parse_instant(modified),
        )
    with on_servers(app) as served:
        yield app, served
    app.close()


@pytest.fixture(scope="module")
def stubs() -> Stubs:
    return load()


def _graphql(world: tuple[App, Served], filter_: dict[str, Any] | None, user: str = "bob", **more: Any) -> Any:
    app, served = world
    variables = {"store": STORE, "q": QUESTION, "filter": filter_, "ids": ["hr/leave.md", "it/leave.html"]}
    variables["id"] = "hr/leave.md"
    variables.update(more)
    reply = httpx.post(
        served.graphql_url,
        json={"query": GQL, "variables": variables},
        headers={"authorization": f"Bearer {token(app, user)}"},
        timeout=30,
    )
    assert reply.status_code == 200, reply.text
    return reply.json()


def _documents(result: Any) -> set[str]:
    return {c["documentId"] for c in result["chunks"]}


@pytest.mark.parametrize(
    ("filter_", "vector", "multi", "one"),
    [
        (None, None, {"hr/leave.md", "it/leave.html"}, True),
        ({"pathPrefix": "hr/"}, {"hr/leave.md"}, {"hr/leave.md"}, True),
        ({"pathGlob": "*.html"}, {"it/leave.html"}, {"it/leave.html"}, False),
        ({"contentTypes": ["text/html"]}, {"it/leave.html"}, {"it/leave.html"}, False),
        ({"titleContains": "LEAVE HR/"}, {"hr/leave.md"}, {"hr/leave.md"}, True),
        ({"modifiedFrom": "2024-01-15", "modifiedTo": "2024-12-31"}, {"hr/leave.md"}, {"hr/leave.md"}, True),
        ({"metadata": [{"key": "dept", "values": ["it", "legal"]}]}, {"it/leave.html"}, {"it/leave.html"}, False),
        ({"indexedFrom": "2000-01-01", "pathPrefix": "hr/"}, {"hr/leave.md"}, {"hr/leave.md"}, True),
        ({"metadata": [{"key": "dept", "values": ["nope"]}]}, set(), set(), False),
    ],
)
def test_graphql_filters_narrow_every_query_class(
    world: tuple[App, Served], filter_: Any, vector: set[str] | None, multi: set[str], one: bool
) -> None:
    body = _graphql(world, filter_)
    assert "errors" not in body, body
    data = body["data"]
    found = _documents(data["vectorQuery"])
    assert "hr/secret-leave.md" not in found and "executive-pay" not in found  # bob may not read them
    if vector is not None:
        assert found == vector
    assert _documents(data["multiDocumentQuery"]) == multi
    assert data["multiDocumentQuery"]["noRelevantDocument"] == (not multi)
    assert (not data["documentQuery"]["noRelevantDocument"], bool(data["documentQuery"]["chunks"])) == (one, one)


def test_graphql_filter_never_widens_access(world: tuple[App, Served]) -> None:
    body = _graphql(world, {"pathPrefix": "hr/secret"}, ids=["hr/leave.md"])
    assert _documents(body["data"]["vectorQuery"]) == set()
    alice = _graphql(world, {"pathPrefix": "hr/secret"}, user="alice", ids=["hr/leave.md"])
    assert _documents(alice["data"]["vectorQuery"]) == {"hr/secret-leave.md"}  # alice is in group hr
    hidden = _graphql(world, {"pathPrefix": "hr/"}, id="hr/secret-leave.md", ids=["hr/secret-leave.md"])
    assert {e["extensions"]["code"] for e in hidden["errors"]} == {"NOT_FOUND"}  # as if absent


@pytest.mark.parametrize(
    ("filter_", "code"),
    [
        ({"modifiedFrom": "2024-02-01", "modifiedTo": "2024-01-01"}, "BAD_USER_INPUT"),
        ({"indexedTo": "31/12/2024"}, "BAD_USER_INPUT"),
        ({"pathGlob": "*" * 300}, "BAD_USER_INPUT"),
        ({"pathPrefix": ""}, "BAD_USER_INPUT"),
        ({"contentTypes": ["html"]}, "BAD_USER_INPUT"),
        ({"metadata": [{"key": "Dept", "values": ["hr"]}]}, "BAD_USER_INPUT"),
        ({"owner": "bob"}, "BAD_USER_INPUT"),  # an unknown field: the input type rules it out
    ],
)
def test_graphql_bad_filters_are_typed_errors(world: tuple[App, Served], filter_: Any, code: str) -> None:
    body = _graphql(world, filter_)
    assert body.get("data") is None or all(v is None for v in body["data"].values())
    assert {e["extensions"]["code"] for e in body["errors"]} <= {code, "GRAPHQL_VALIDATION_FAILED"}


def _grpc_filter(stubs: Stubs, **fields: Any) -> Any:
    conditions = [stubs.common.MetadataCondition(key=k, values=v) for k, v in fields.pop("metadata", {}).items()]
    return stubs.common.QueryFilter(metadata=conditions, **fields)


def test_grpc_filters_narrow_and_bad_ones_are_invalid_argument(world: tuple[App, Served], stubs: Stubs) -> None:
    app, served = world
    with grpc.insecure_channel(served.channel_target) as channel:
        query = stubs.query_grpc.QueryServiceStub(channel)
        metadata = bearer(app, "bob")

        def vector(**fields: Any) -> set[str]:
            request = stubs.query.VectorQueryRequest(
                store_id=STORE, question=QUESTION, level=0.0, filter=_grpc_filter(stubs, **fields)
            )
            return {c.document_id for c in query.VectorQuery(request, metadata=metadata, timeout=30).chunks}

        assert vector(path_prefix="hr/") == {"hr/leave.md"}
        assert vector(content_types=["text/html"], metadata={"dept": ["it"]}) == {"it/leave.html"}
        assert vector(title_contains="secret") == set()  # bob may not read it: the filter does not widen
        assert vector() >= {"hr/leave.md", "it/leave.html"}  # an empty filter is no filter
        document = stubs.query.DocumentQueryRequest(
            store_id=STORE, question=QUESTION, document_id="hr/leave.md", filter=_grpc_filter(stubs, path_glob="*.pdf")
        )
        reply = query.DocumentQuery(document, metadata=metadata, timeout=30)
        assert reply.no_relevant_document and not reply.chunks
        multi = stubs.query.MultiDocumentQueryRequest(
            store_id=STORE,
            question=QUESTION,
            document_ids=["hr/leave.md", "it/leave.html"],
            filter=_grpc_filter(stubs, modified_from="2024-01-01"),
        )
        assert {c.document_id for c in query.MultiDocumentQuery(multi, metadata=metadata, timeout=30).chunks} == {
            "hr/leave.md"
        }
        for bad in (
            {"modified_from": "2024-02-01", "modified_to": "2024-01-01"},
            {"indexed_from": "not a date"},
            {"path_glob": "x" * 257},
            {"path_prefix": ""},
            {"metadata": {"BAD": ["x"]}},
        ):
            request = stubs.query.VectorQueryRequest(
                store_id=STORE, question=QUESTION, filter=_grpc_filter(stubs, **bad)
            )
            with pytest.raises(grpc.RpcError) as info:
                query.VectorQuery(request, metadata=metadata, timeout=30)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, bad


def test_grpc_upsert_metadata_is_validated_and_a_change_reindexes(world: tuple[App, Served], stubs: Stubs) -> None:
    app, served = world
    with grpc.insecure_channel(served.channel_target) as channel:
        indexing = stubs.indexing_grpc.IndexingServiceStub(channel)
        admin = bearer(app, "root", admin=True)

        def push(**fields: Any) -> Any:
            request = stubs.indexing.UpsertDocumentRequest(
                store_id=STORE,
                document_id="pushed.txt",
                text="Paid vacation leave can be carried over.",
                acl=stubs.common.Acl(allow=["group:everyone"]),
                **fields,
            )
            return indexing.UpsertDocument(request, metadata=admin, timeout=30)

        assert push(metadata={"dept": "ops"}, modified="2024-03-01T10:00:00+01:00").outcome == "indexed"
        assert push(metadata={"dept": "ops"}, modified="2024-03-01T09:00:00Z").outcome == "unchanged"  # same instant
        assert push(metadata={"dept": "sales"}, modified="2024-03-01T09:00:00Z").outcome == "indexed"
        for bad in ({"metadata": {"Bad-Key": "x"}}, {"metadata": {"k": "v" * 257}}, {"modified": "soon"}):
            with pytest.raises(grpc.RpcError) as info:
                push(**bad)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.RpcError) as info:
            request = stubs.indexing.UpsertDocumentRequest(
                store_id="brand-new", document_id="d", text="t", acl=stubs.common.Acl(allow=["group:everyone"]),
                create_store=True, metadata={"BAD": "x"},
            )  # fmt: skip
            indexing.UpsertDocument(request, metadata=admin, timeout=30)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert app.repository.get_store("brand-new") is None  # bad input changed nothing
    body = _graphql(world, {"metadata": [{"key": "dept", "values": ["sales"]}]})
    assert _documents(body["data"]["vectorQuery"]) == {"pushed.txt"}
