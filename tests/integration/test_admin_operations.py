"""Every operation of every transport is declared admin or open here, and every admin one refuses a non-admin.

The GraphQL fields (queries, mutations, subscriptions) are read from the strawberry schema, the gRPC methods
from the generated stubs' service descriptors. An operation in neither table fails the test, so a new admin
operation cannot ship without its refusal being run. Each admin operation is called by alice (a signed-in
user without the admin role) against real servers on loopback: it must answer FORBIDDEN (GraphQL) or
PERMISSION_DENIED (gRPC), and the settings database (stores, documents, ACLs and overrides, memberships,
tombstones, the audit trail) must be exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import grpc
import httpx
import pytest

from graphql import build_schema as parse_sdl
from service.api.graphql.schema import build_schema
from service.api.grpc.stubs import Stubs, load
from service.bootstrap import App
from service.domain.authorization import NEEDS_ADMIN
from tests.integration.server_world import STORE, Served, SlowGenerator, bearer, build_world, on_servers, token

pytestmark = pytest.mark.integration

#: GraphQL operations that need the admin role: a request that would change (or reveal) something.
GRAPHQL_ADMIN: dict[str, str] = {
    "relevancyPreview": f'query {{ relevancyPreview(storeId: "{STORE}", question: "vacation") {{ storeId }} }}',
    "documentAcl": 'query { documentAcl(documentId: "executive-pay") { source } }',
    "explainAccess": 'query { explainAccess(userId: "alice", documentId: "executive-pay") { readable } }',
    "feedback": f'query {{ feedback(storeId: "{STORE}") {{ pageInfo {{ hasNextPage }} }} }}',
    "auditEntries": 'query { auditEntries(userId: "bob") { queryId } }',
    "setRelevancyLevel": f'mutation {{ setRelevancyLevel(storeId: "{STORE}", level: 0.9) {{ id }} }}',
    "updateStoreSettings": (
        f'mutation {{ updateStoreSettings(storeId: "{STORE}", settings: {{level: 0.9, maxChunks: 2}}) {{ id }} }}'
    ),
    "calibrateStore": f'mutation {{ calibrateStore(storeId: "{STORE}", apply: true) {{ applied }} }}',
    "startAdaptation": f'mutation {{ startAdaptation(storeId: "{STORE}") {{ state }} }}',
    "adaptation": f'query {{ adaptation(storeId: "{STORE}") {{ state }} }}',
    "setDocumentAcl": (
        'mutation { setDocumentAcl(documentId: "executive-pay", allow: ["group:everyone"]) { source } }'
    ),
    "resetDocumentAcl": 'mutation { resetDocumentAcl(documentId: "bob-notes") { source } }',
    "addGroupMember": 'mutation { addGroupMember(group: "hr", member: "user:mallory") }',
    "removeGroupMember": 'mutation { removeGroupMember(group: "hr", member: "user:alice") }',
    "resetGroupMember": 'mutation { resetGroupMember(group: "hr", member: "user:alice") }',
}
#: GraphQL operations open to every signed-in caller, and why that is safe.
GRAPHQL_OPEN: dict[str, str] = {
    "vectorQuery": "the caller's own rights, inside the search",
    "multiDocumentQuery": "the caller's own rights, inside the search",
    "documentQuery": "the caller's own rights, inside the search",
    "summarizeDocument": "a document the caller may read, else NOT_FOUND",
    "compareDocuments": "documents the caller may read, else NOT_FOUND",
    "stores": "only stores where the caller may read a document",
    "store": "NOT_FOUND where the caller may read nothing",
    "storeSettingFields": "the settings' declarations (type, bounds, description): no store's data",
    "documents": "only documents the caller may read",
    "history": "the caller's own entries",
    "conversation": "the caller's own conversations",
    "deleteHistoryEntry": "the caller's own entries",
    "deleteConversation": "the caller's own conversations",
    "rateAnswer": "the caller's own answers",
    "askStream": "the caller's own rights, as the three queries",
}

Request = Callable[[Stubs], Any]


def _upsert(stubs: Stubs) -> Any:
    return stubs.indexing.UpsertDocumentRequest(
        store_id=STORE,
        document_id="planted",
        text="Planted by someone without the admin role.",
        acl=stubs.common.Acl(allow=["group:everyone"]),
    )


#: gRPC methods that need the admin role, each with a request that would change (or reveal) something.
GRPC_ADMIN: dict[str, Request] = {
    "docqa.v1.AdminService/SetStoreSettings": lambda s: s.admin.SetStoreSettingsRequest(store_id=STORE, level=0.9),
    "docqa.v1.AdminService/ListAuditEntries": lambda s: s.admin.ListAuditEntriesRequest(user_id="bob"),
    "docqa.v1.AdminService/AddGroupMember": lambda s: s.admin.GroupMemberRequest(group="hr", member="user:mallory"),
    "docqa.v1.AdminService/RemoveGroupMember": lambda s: s.admin.GroupMemberRequest(group="hr", member="user:alice"),
    "docqa.v1.AdminService/ResetGroupMember": lambda s: s.admin.GroupMemberRequest(group="hr", member="user:alice"),
    "docqa.v1.AdminService/CalibrateStore": lambda s: s.admin.CalibrateStoreRequest(store_id=STORE, apply=True),
    "docqa.v1.AdminService/StartAdaptation": lambda s: s.admin.StartAdaptationRequest(store_id=STORE),
    "docqa.v1.AdminService/GetAdaptation": lambda s: s.admin.GetAdaptationRequest(store_id=STORE),
    "docqa.v1.AdminService/ExplainAccess": lambda s: s.admin.ExplainAccessRequest(
        user_id="alice", document_id="executive-pay"
    ),
    "docqa.v1.IndexingService/UpsertDocument": _upsert,
    "docqa.v1.IndexingService/BulkUpsert": lambda s: iter([_upsert(s)]),
    "docqa.v1.IndexingService/DeleteDocument": lambda s: s.indexing.DeleteDocumentRequest(
        store_id=STORE, document_id="handbook"
    ),
    "docqa.v1.IndexingService/SetDocumentAcl": lambda s: s.indexing.SetDocumentAclRequest(
        document_id="executive-pay", acl=s.common.Acl(allow=["group:everyone"])
    ),
    "docqa.v1.IndexingService/GetDocumentAcl": lambda s: s.indexing.GetDocumentAclRequest(document_id="executive-pay"),
    "docqa.v1.IndexingService/ResetDocumentAcl": lambda s: s.indexing.ResetDocumentAclRequest(document_id="bob-notes"),
    "docqa.v1.HistoryService/ListFeedback": lambda s: s.history.ListFeedbackRequest(store_id=STORE),
}
_OWN_RIGHTS = "the caller's own rights, inside the search"
#: gRPC methods open to every signed-in caller, and why that is safe.
GRPC_OPEN: dict[str, str] = {
    "docqa.v1.QueryService/VectorQuery": _OWN_RIGHTS,
    "docqa.v1.QueryService/MultiDocumentQuery": _OWN_RIGHTS,
    "docqa.v1.QueryService/DocumentQuery": _OWN_RIGHTS,
    "docqa.v1.QueryService/StreamVectorQuery": _OWN_RIGHTS,
    "docqa.v1.QueryService/StreamMultiDocumentQuery": _OWN_RIGHTS,
    "docqa.v1.QueryService/StreamDocumentQuery": _OWN_RIGHTS,
    "docqa.v1.AnalysisService/SummarizeDocument": "a document the caller may read, else NOT_FOUND",
    "docqa.v1.AnalysisService/StreamSummarizeDocument": "a document the caller may read, else NOT_FOUND",
    "docqa.v1.AnalysisService/CompareDocuments": "documents the caller may read, else NOT_FOUND",
    "docqa.v1.AnalysisService/StreamCompareDocuments": "documents the caller may read, else NOT_FOUND",
    "docqa.v1.AdminService/GetStoreSettings": "NOT_FOUND where the caller may read nothing; no admin-only field",
    "docqa.v1.AdminService/ListStores": "only stores where the caller may read a document",
    "docqa.v1.HistoryService/ListHistory": "the caller's own entries",
    "docqa.v1.HistoryService/GetConversation": "the caller's own conversations",
    "docqa.v1.HistoryService/DeleteHistoryEntry": "the caller's own entries",
    "docqa.v1.HistoryService/DeleteConversation": "the caller's own conversations",
    "docqa.v1.HistoryService/RateAnswer": "the caller's own answers",
}


def graphql_operations() -> set[str]:
    """Every field of the schema's Query, Mutation and Subscription types."""
    schema = parse_sdl(build_schema().as_str())
    roots = (schema.query_type, schema.mutation_type, schema.subscription_type)
    return {name for root in roots if root is not None for name in root.fields}


def _modules(stubs: Stubs) -> list[tuple[Any, Any]]:
    return [
        (stubs.query, stubs.query_grpc),
        (stubs.indexing, stubs.indexing_grpc),
        (stubs.admin, stubs.admin_grpc),
        (stubs.analysis, stubs.analysis_grpc),
        (stubs.history, stubs.history_grpc),
    ]


def grpc_methods(stubs: Stubs) -> dict[str, tuple[Any, Any]]:
    """Every method of every DocQA service, ``Service/Method`` → (method descriptor, its ``_pb2_grpc`` module)."""
    return {
        f"{service.full_name}/{method.name}": (method, grpc_module)
        for messages, grpc_module in _modules(stubs)
        for service in messages.DESCRIPTOR.services_by_name.values()
        for method in service.methods
    }


@pytest.fixture(scope="module")
def stubs() -> Stubs:
    return load()


def test_every_graphql_operation_is_declared_once() -> None:
    operations = graphql_operations()
    assert not set(GRAPHQL_ADMIN) & set(GRAPHQL_OPEN)
    assert operations - set(GRAPHQL_ADMIN) - set(GRAPHQL_OPEN) == set(), "declare these admin or open"
    assert set(GRAPHQL_ADMIN) | set(GRAPHQL_OPEN) == operations, "the tables name operations that are gone"


def test_every_grpc_method_is_declared_once(stubs: Stubs) -> None:
    methods = set(grpc_methods(stubs))
    assert not set(GRPC_ADMIN) & set(GRPC_OPEN)
    assert methods - set(GRPC_ADMIN) - set(GRPC_OPEN) == set(), "declare these admin or open"
    assert set(GRPC_ADMIN) | set(GRPC_OPEN) == methods, "the tables name methods that are gone"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, Served]]:
    """The server world, plus an admin override (on bob-notes) that a reset would drop."""
    app = build_world(tmp_path_factory.mktemp("admin-operations"), generator=SlowGenerator())
    app.admin.set_acl("bob-notes", ["user:bob", "user:carol"], [], "test", STORE)
    with on_servers(app) as served:
        yield app, served
    app.close()


def snapshot(app: App) -> dict[str, Any]:
    """Everything an admin operation could change in the settings database, and the adaptations started."""
    repo = app.repository
    stores = repo.list_stores()
    documents = {s.id: sorted((d.id, d.content_hash, d.chunk_count) for d in repo.list_documents(s.id)) for s in stores}
    return {
        "stores": stores,
        "documents": documents,
        "acls": {s: dict(repo.acls(s, [d for d, _, _ in docs])) for s, docs in documents.items()},
        "overrides": {s: dict(repo.acl_overrides(s, [d for d, _, _ in docs])) for s, docs in documents.items()},
        "memberships": repo.membership_records(),
        "tombstones": repo.tombstones(),
        "audit": [r.query_id for r in repo.audit_records(None, 1000, None, None)],
        "adaptations": [app.adapt_jobs.status(s.id) for s in stores],
    }


@pytest.mark.parametrize("operation", sorted(GRAPHQL_ADMIN))
def test_graphql_admin_operation_refuses_a_non_admin(world: tuple[App, Served], operation: str) -> None:
    app, served = world
    before = snapshot(app)
    reply = httpx.post(
        served.graphql_url,
        json={"query": GRAPHQL_ADMIN[operation]},
        headers={"authorization": f"Bearer {token(app, 'alice')}"},
        timeout=30,
    )
    body = reply.json()
    assert body.get("data") is None or body["data"].get(operation) is None, body
    [error] = body["errors"]
    assert error["extensions"]["code"] == "FORBIDDEN", error
    assert error["message"] == NEEDS_ADMIN
    assert snapshot(app) == before


@pytest.mark.parametrize("method", sorted(GRPC_ADMIN))
def test_grpc_admin_method_refuses_a_non_admin(world: tuple[App, Served], stubs: Stubs, method: str) -> None:
    app, served = world
    descriptor, grpc_module = grpc_methods(stubs)[method]
    before = snapshot(app)
    with grpc.insecure_channel(served.channel_target) as channel:
        stub = getattr(grpc_module, f"{descriptor.containing_service.name}Stub")(channel)
        call = getattr(stub, descriptor.name)
        with pytest.raises(grpc.RpcError) as refused:
            reply = call(GRPC_ADMIN[method](stubs), metadata=bearer(app, "alice"), timeout=30)
            if descriptor.server_streaming:
                list(reply)
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED, refused.value.details()
    assert refused.value.details() == NEEDS_ADMIN
    assert snapshot(app) == before


def test_the_refused_requests_are_ones_an_admin_may_make(world: tuple[App, Served], stubs: Stubs) -> None:
    """The tables' requests are well formed: an admin's reach the operation (so the refusals above are the
    role check, not a bad argument). Read-only ones only, so the world stays as it is."""
    app, served = world
    for operation in ("documentAcl", "explainAccess", "feedback", "auditEntries", "adaptation"):
        reply = httpx.post(
            served.graphql_url,
            json={"query": GRAPHQL_ADMIN[operation]},
            headers={"authorization": f"Bearer {token(app, 'root', admin=True)}"},
            timeout=30,
        ).json()
        assert "errors" not in reply, reply
    with grpc.insecure_channel(served.channel_target) as channel:
        for method in (
            "docqa.v1.IndexingService/GetDocumentAcl",
            "docqa.v1.HistoryService/ListFeedback",
            "docqa.v1.AdminService/GetAdaptation",
            "docqa.v1.AdminService/ExplainAccess",
        ):
            descriptor, grpc_module = grpc_methods(stubs)[method]
            stub = getattr(grpc_module, f"{descriptor.containing_service.name}Stub")(channel)
            getattr(stub, descriptor.name)(GRPC_ADMIN[method](stubs), metadata=bearer(app, "root", admin=True))


def test_refusal_is_decided_before_the_request_is_read(world: tuple[App, Served], stubs: Stubs) -> None:
    """A non-admin's malformed push is refused for the role, not for the input (nothing about it is judged)."""
    app, served = world
    with grpc.insecure_channel(served.channel_target) as channel:
        indexing = stubs.indexing_grpc.IndexingServiceStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            indexing.UpsertDocument(stubs.indexing.UpsertDocumentRequest(), metadata=bearer(app, "alice"), timeout=30)
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
