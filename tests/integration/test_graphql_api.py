"""The GraphQL API, health endpoints and /metrics over HTTP on loopback (a real uvicorn server)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from acl.model import Acl
from service.access.state import AccessState
from service.api.graphql.schema import build_schema
from service.api.http import HttpServer
from service.bootstrap import App
from tests.integration.server_world import (
    QUESTION,
    STORE,
    VAULT,
    SlowGenerator,
    add_vault,
    build_world,
    on_servers,
    token,
)

ASK = """query Ask($store: String!, $q: String!, $level: Float) {
  vectorQuery(storeId: $store, question: $q, level: $level) {
    queryId answer threshold noRelevantDocument retryWithoutThresholdAllowed
    chunks { documentId chunkId score relevance }
  }
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, HttpServer]]:
    app = build_world(tmp_path_factory.mktemp("graphql"), generator=SlowGenerator())
    with on_servers(app, with_grpc=False) as served:
        yield app, served.http
    app.close()


def _post(
    server: Any,
    query: str,
    variables: dict[str, Any] | None = None,
    user: str | None = None,
    admin: bool = False,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    app, http = server
    sent = dict(headers or {})
    if user is not None:
        sent["authorization"] = f"Bearer {token(app, user, admin=admin)}"
    reply = httpx.post(
        f"http://127.0.0.1:{http.port}/graphql",
        json={"query": query, "variables": variables or {}},
        headers=sent,
        timeout=10,
    )
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def _codes(body: dict[str, Any]) -> list[str]:
    return [e["extensions"]["code"] for e in body.get("errors", [])]


def test_users_get_their_own_sources(server: Any) -> None:
    variables = {"store": STORE, "q": QUESTION, "level": 0.0}
    alice = _post(server, ASK, variables, "alice")["data"]["vectorQuery"]
    bob = _post(server, ASK, variables, "bob")["data"]["vectorQuery"]
    assert {c["documentId"] for c in alice["chunks"]} == {"handbook", "executive-pay"}
    assert {c["documentId"] for c in bob["chunks"]} == {"handbook", "bob-notes"}
    assert alice["answer"] and alice["queryId"] and alice["chunks"][0]["relevance"] is not None


def test_multi_and_document_queries(server: Any) -> None:
    multi = _post(
        server,
        """query($s: String!, $q: String!) { multiDocumentQuery(storeId: $s, question: $q,
        documentIds: ["bob-notes"], level: 0.0) { chunks { documentId } } }""",
        {"s": STORE, "q": QUESTION},
        "bob",
    )
    assert multi["data"]["multiDocumentQuery"]["chunks"] == [{"documentId": "bob-notes"}]
    hidden = _post(
        server,
        """query($s: String!, $q: String!) { documentQuery(storeId: $s, question: $q,
        documentId: "bob-notes") { answer } }""",
        {"s": STORE, "q": QUESTION},
        "alice",
    )
    assert _codes(hidden) == ["NOT_FOUND"] and hidden["data"] is None


def test_error_codes(server: Any) -> None:
    variables = {"store": STORE, "q": QUESTION}
    assert _codes(_post(server, ASK, variables)) == ["UNAUTHENTICATED"]
    forged = _post(server, ASK, variables, headers={"authorization": "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0."})
    assert _codes(forged) == ["UNAUTHENTICATED"]
    assert _codes(_post(server, ASK, {**variables, "level": 7.0}, "alice")) == ["BAD_USER_INPUT"]
    assert _codes(_post(server, ASK, {**variables, "q": "q" * 4001}, "alice")) == ["BAD_USER_INPUT"]
    assert _codes(_post(server, ASK, {**variables, "store": "nope"}, "alice")) == ["NOT_FOUND"]
    assert _codes(_post(server, "{ nope }", None, "alice")) == ["GRAPHQL_VALIDATION_FAILED"]


def test_admin_only_mutations(server: Any) -> None:
    set_level = 'mutation { setRelevancyLevel(storeId: "acme", level: 0.4) { id level } }'
    denied = _post(server, set_level, None, "alice")
    assert _codes(denied) == ["FORBIDDEN"]
    done = _post(server, set_level, None, "root", admin=True)
    assert done["data"]["setRelevancyLevel"] == {"id": STORE, "level": 0.4}
    bad = _post(
        server, 'mutation { setRelevancyLevel(storeId: "acme", level: -1) { level } }', None, "root", admin=True
    )
    assert _codes(bad) == ["BAD_USER_INPUT"]
    other = _post(
        server,
        'mutation { updateStoreSettings(storeId: "acme", settings: {maxChunks: 6}) { maxChunks } }',
        None,
        "root",
        admin=True,
    )
    assert other["data"]["updateStoreSettings"]["maxChunks"] == 6
    stores = _post(server, "{ stores { id level maxChunks documents } }", None, "alice")
    # alice reads 2 of the 3 documents (not bob's notes): she is told of 2.
    assert stores["data"]["stores"] == [{"id": STORE, "level": 0.4, "maxChunks": 6, "documents": 2}]
    _post(
        server,
        'mutation { updateStoreSettings(storeId: "acme", settings: {maxChunks: 8, level: 0.5}) { id } }',
        None,
        "root",
        admin=True,
    )


STORES = "{ stores { id documents chunks embeddingModel llmModelId promptTemplate } }"


def test_store_listings_show_only_what_the_caller_may_read(server: Any) -> None:
    app, _ = server
    add_vault(app)
    chunks = {d.id: d.chunk_count for d in app.repository.list_documents(STORE)}
    hidden = {"embeddingModel": None, "llmModelId": None, "promptTemplate": None}
    alice = _post(server, STORES, None, "alice")["data"]["stores"]
    assert alice == [{"id": STORE, "documents": 2, "chunks": chunks["handbook"] + chunks["executive-pay"], **hidden}]
    bob = _post(server, STORES, None, "bob")["data"]["stores"]
    assert [(s["id"], s["documents"]) for s in bob] == [(STORE, 2), (VAULT, 1)]
    assert all(s["promptTemplate"] is None for s in bob)
    nobody = _post(server, STORES, None, "zed")["data"]["stores"]
    assert nobody == [{"id": STORE, "documents": 1, "chunks": chunks["handbook"], **hidden}]
    root = {s["id"]: s for s in _post(server, STORES, None, "root", admin=True)["data"]["stores"]}
    assert root[STORE]["documents"] == 3 and root[STORE]["chunks"] == sum(chunks.values())
    assert "{context}" in root[STORE]["promptTemplate"] and root[STORE]["embeddingModel"] and root[VAULT]
    one = "query One($id: String!) { store(storeId: $id) { id documents promptTemplate } }"
    assert _post(server, one, {"id": VAULT}, "bob")["data"]["store"] == {
        "id": VAULT,
        "documents": 1,
        "promptTemplate": None,
    }
    hidden_store = _post(server, one, {"id": VAULT}, "alice")
    unknown = _post(server, one, {"id": "nope"}, "alice")
    assert _codes(hidden_store) == _codes(unknown) == ["NOT_FOUND"]
    assert hidden_store["errors"][0]["message"].replace(VAULT, "X") == unknown["errors"][0]["message"].replace(
        "nope", "X"
    )


def test_depth_and_size_limits(server: Any) -> None:
    fan_out = "{ stores { id } " + "".join(f"a{i}: stores {{ id }} " for i in range(30)) + "}"
    assert _codes(_post(server, fan_out, None, "alice")) == ["GRAPHQL_VALIDATION_FAILED"]
    # Depth: with a limit of 1, a query nested deeper is refused before any resolver runs.
    shallow = build_schema(max_depth=1)
    deep = asyncio.run(shallow.execute('{ vectorQuery(storeId: "acme", question: "q") { chunks { text } } }'))
    assert deep.errors and "exceeds maximum operation depth" in deep.errors[0].message
    _, http = server
    huge = httpx.post(
        f"http://127.0.0.1:{http.port}/graphql",
        content=b"{" + b" " * (300 * 1024) + b"}",
        headers={"content-type": "application/json"},
        timeout=10,
    )
    assert huge.status_code == 413


def test_graphiql_health_and_metrics(server: Any) -> None:
    _, http = server
    base = f"http://127.0.0.1:{http.port}"
    page = httpx.get(f"{base}/graphql", headers={"accept": "text/html"}, timeout=10)
    assert page.status_code == 200 and "graphiql" in page.text.lower()
    assert httpx.get(f"{base}/healthz", timeout=10).json() == {"status": "ok"}
    assert httpx.get(f"{base}/readyz", timeout=10).json() == {"status": "ready"}
    app = server[0]
    # A revocation not yet in the index: the search still finds the handbook, the access check drops it.
    access = AccessState(app.repository)  # without the index: its copy stays stale on purpose
    access.override_acl(STORE, "handbook", Acl.of(["user:zed"]), "test")
    try:
        # bob still reads his notes (a store read nothing of would be NOT_FOUND before any search).
        revoked = _post(server, ASK, {"store": STORE, "q": QUESTION, "level": 0.0}, "bob")["data"]["vectorQuery"]
    finally:
        access.reset_acl(STORE, "handbook")
    assert {c["documentId"] for c in revoked["chunks"]} == {"bob-notes"}
    metrics = httpx.get(f"{base}/metrics", timeout=10).text
    assert 'docqa_requests_total{code="OK",interface="graphql",method="vectorQuery"}' in metrics
    assert 'docqa_query_latency_seconds_count{query_class="vector"}' in metrics
    assert "docqa_llm_latency_seconds_count" in metrics
    # The access check dropped the handbook's chunks; no metric counts what a caller could not read.
    assert "docqa_access_dropped" not in metrics and "dropped" not in metrics.lower()


def test_readyz_fails_while_the_index_cannot_serve(server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from indexer.errors import IndexUnavailable

    app, http = server
    ready = f"http://127.0.0.1:{http.port}/readyz"

    def down() -> None:
        raise IndexUnavailable("index unavailable: OpenSearch GET / failed after 1 attempt(s): cannot connect")

    monkeypatch.setattr(app.index, "ping", down)
    reply = httpx.get(ready, timeout=10)
    assert reply.status_code == 503
    assert reply.json() == {"status": "unavailable", "failing": "index"}
    monkeypatch.undo()
    assert httpx.get(ready, timeout=10).json() == {"status": "ready"}

    def unreachable(_: App) -> None:
        raise OSError("could not connect to the settings database")

    monkeypatch.setattr(App, "repository", property(unreachable))  # building the repository itself fails
    reply = httpx.get(ready, timeout=10)
    assert reply.status_code == 503
    assert reply.json() == {"status": "unavailable", "failing": "settings database"}
    monkeypatch.undo()
    assert httpx.get(ready, timeout=10).json() == {"status": "ready"}


ACL_STATE = "storeId documentId allow deny source changedBy changedAt sourceAcl { allow deny }"


def test_admin_acl_override_with_provenance_then_reset(server: Any) -> None:
    variables = {"store": STORE, "q": QUESTION, "level": 0.0}
    before = {c["documentId"] for c in _post(server, ASK, variables, "bob")["data"]["vectorQuery"]["chunks"]}
    assert "handbook" in before
    set_acl = f"""mutation($d: String!) {{ setDocumentAcl(documentId: $d, allow: ["user:zed"]) {{ {ACL_STATE} }} }}"""
    refused = _post(server, set_acl, {"d": "handbook"}, "bob")
    assert _codes(refused) == ["FORBIDDEN"]
    state = _post(server, set_acl, {"d": "handbook"}, "root", admin=True)["data"]["setDocumentAcl"]
    assert state["source"] == "admin" and state["allow"] == ["user:zed"] and state["changedBy"] == "graphql:root"
    assert state["sourceAcl"] == {"allow": ["group:everyone"], "deny": []}
    after = {c["documentId"] for c in _post(server, ASK, variables, "bob")["data"]["vectorQuery"]["chunks"]}
    assert "handbook" not in after
    shown = _post(
        server, f'query {{ documentAcl(documentId: "handbook") {{ {ACL_STATE} }} }}', None, "root", admin=True
    )["data"]["documentAcl"]
    assert shown == state
    reset = f'mutation {{ resetDocumentAcl(documentId: "handbook") {{ {ACL_STATE} }} }}'
    back = _post(server, reset, None, "root", admin=True)["data"]["resetDocumentAcl"]
    assert back["source"] == "api" and back["allow"] == ["group:everyone"] and back["changedBy"] is None
    assert "handbook" in {
        c["documentId"] for c in _post(server, ASK, variables, "bob")["data"]["vectorQuery"]["chunks"]
    }


def test_admin_group_changes_are_tombstones_until_reset(server: Any) -> None:
    variables = {"store": STORE, "q": QUESTION, "level": 0.0}

    def alice() -> set[str]:
        return {c["documentId"] for c in _post(server, ASK, variables, "alice")["data"]["vectorQuery"]["chunks"]}

    assert "executive-pay" in alice()  # alice is in group:hr (an admin membership)
    remove = 'mutation { removeGroupMember(group: "hr", member: "user:alice") }'
    assert _codes(_post(server, remove, None, "bob")) == ["FORBIDDEN"]
    assert _post(server, remove, None, "root", admin=True)["data"]["removeGroupMember"] is True
    assert "executive-pay" not in alice()
    add = 'mutation { addGroupMember(group: "group:hr", member: "user:alice") }'
    assert _post(server, add, None, "root", admin=True)["data"]["addGroupMember"] is True
    assert "executive-pay" in alice()
