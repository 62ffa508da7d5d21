"""``explainAccess`` (GraphQL) and ``AdminService.ExplainAccess`` (gRPC) against real servers on loopback: an
admin gets the decision, the deciding entry, the ACL with its source and each principal's chain; a non-admin is
refused; an unknown document is NOT_FOUND and a malformed user id INVALID_ARGUMENT; each explanation leaves one
audit row (class explain_access) naming the admin who asked and the interface. With a question instead of a
document: the admin's own top chunks (only what the admin may read), each marked visible or not to the user with
the deciding entry of its document's ACL, audited with the chunks' documents and ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import pytest

from service.access.explain import EXPLAIN_AUDIT_CLASS
from service.api.grpc.stubs import Stubs, load
from service.bootstrap import App
from tests.integration.server_world import QUESTION, STORE, Served, bearer, build_world, on_servers, token

pytestmark = pytest.mark.integration

EXPLAIN = """query($u: String!, $d: String!, $s: String) {
  explainAccess(userId: $u, documentId: $d, storeId: $s) {
    userId storeId documentId readable reason decidingEntry
    acl { allow deny source changedBy changedAt }
    principals { principal path chain { member group source } }
  }
}"""


EXPLAIN_QUESTION = """query($u: String!, $s: String, $q: String, $d: String) {
  explainAccess(userId: $u, storeId: $s, question: $q, documentId: $d) {
    userId storeId documentId readable acl { source } principals { principal }
    chunks { chunkId documentId score relevance visible decidingEntry reason }
  }
}"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, Served]]:
    """The server world (alice in group:hr by an admin), and root's override denying bob the handbook."""
    app = build_world(tmp_path_factory.mktemp("explain-access"))
    app.admin.set_acl("handbook", ["group:everyone"], ["user:bob"], "root", STORE)
    with on_servers(app) as served:
        yield app, served
    app.close()


@pytest.fixture(scope="module")
def stubs() -> Stubs:
    return load()


def _graphql(
    app: App, served: Served, user: str, *, admin: bool, document: str = EXPLAIN, **variables: Any
) -> dict[str, Any]:
    reply = httpx.post(
        served.graphql_url,
        json={"query": document, "variables": variables},
        headers={"authorization": f"Bearer {token(app, user, admin=admin)}"},
        timeout=30,
    )
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def _explanations(app: App) -> list[tuple[str, str, tuple[str, ...], str]]:
    return [
        (r.user_id, r.store_id, r.document_ids, r.interface)
        for r in app.repository.audit_records(None, 1000, None, None)
        if r.query_class == EXPLAIN_AUDIT_CLASS
    ]


def test_graphql_explains_an_allow_through_a_group(world: tuple[App, Served]) -> None:
    app, served = world
    body = _graphql(app, served, "root", admin=True, u="alice", d="executive-pay")
    assert "errors" not in body, body
    got = body["data"]["explainAccess"]
    assert (got["userId"], got["storeId"], got["documentId"]) == ("alice", STORE, "executive-pay")
    assert got["readable"] is True
    assert got["decidingEntry"] == "allow group:hr"
    assert got["acl"] == {"allow": ["group:hr"], "deny": [], "source": "api", "changedBy": None, "changedAt": None}
    hr = next(p for p in got["principals"] if p["principal"] == "group:hr")
    assert hr["chain"] == [{"member": "user:alice", "group": "group:hr", "source": "admin"}]
    assert hr["path"] == "user:alice → group:hr (admin)"
    assert "group:hr" in got["reason"]
    assert ("root", STORE, ("executive-pay",), "graphql") in _explanations(app)


def test_graphql_explains_a_deny_of_an_admin_override(world: tuple[App, Served]) -> None:
    app, served = world
    got = _graphql(app, served, "root", admin=True, u="user:bob", d="handbook", s=STORE)["data"]["explainAccess"]
    assert got["readable"] is False
    assert got["decidingEntry"] == "deny user:bob"
    assert got["acl"]["source"] == "admin"
    assert got["acl"]["changedBy"] == "root" and got["acl"]["changedAt"]
    assert "deny wins" in got["reason"]


def test_graphql_refuses_a_non_admin_and_bad_requests(world: tuple[App, Served]) -> None:
    app, served = world
    before = _explanations(app)
    cases = {
        "FORBIDDEN": ("alice", False, {"u": "alice", "d": "executive-pay"}),
        "NOT_FOUND": ("root", True, {"u": "alice", "d": "no-such-document"}),
        "BAD_USER_INPUT": ("root", True, {"u": "alice smith", "d": "executive-pay"}),
    }
    for code, (caller, admin, variables) in cases.items():
        body = _graphql(app, served, caller, admin=admin, **variables)
        assert body["data"] is None, body
        [error] = body["errors"]
        assert error["extensions"]["code"] == code, (code, error)
    assert _explanations(app) == before  # only explanations given are audited


def test_grpc_explains_and_refuses(world: tuple[App, Served], stubs: Stubs) -> None:
    app, served = world
    request = stubs.admin.ExplainAccessRequest
    with grpc.insecure_channel(served.channel_target) as channel:
        admin = stubs.admin_grpc.AdminServiceStub(channel)
        reply = admin.ExplainAccess(
            request(user_id="alice", document_id="executive-pay"), metadata=bearer(app, "root", admin=True), timeout=30
        )
        assert reply.readable and reply.deciding_entry == "allow group:hr"
        assert (reply.store_id, reply.acl_source, list(reply.acl.allow)) == (STORE, "api", ["group:hr"])
        hr = next(p for p in reply.principals if p.principal == "group:hr")
        assert [(k.member, k.group, k.source) for k in hr.chain] == [("user:alice", "group:hr", "admin")]
        assert ("root", STORE, ("executive-pay",), "grpc") in _explanations(app)

        nobody = admin.ExplainAccess(
            request(user_id="mallory", document_id="executive-pay"), metadata=bearer(app, "root", admin=True)
        )
        assert not nobody.readable and not nobody.HasField("deciding_entry")
        assert [p.principal for p in nobody.principals] == ["user:mallory", "group:everyone"]

        denied = admin.ExplainAccess(request(user_id="bob", document_id="handbook", store_id=STORE), metadata=bearer(
            app, "root", admin=True
        ))  # fmt: skip
        assert (denied.readable, denied.deciding_entry, denied.acl_changed_by) == (False, "deny user:bob", "root")

        cases = {
            grpc.StatusCode.PERMISSION_DENIED: (request(user_id="bob", document_id="handbook"), bearer(app, "alice")),
            grpc.StatusCode.NOT_FOUND: (
                request(user_id="bob", document_id="no-such-document"),
                bearer(app, "root", admin=True),
            ),
            grpc.StatusCode.INVALID_ARGUMENT: (
                request(user_id="bob\n", document_id="handbook"),
                bearer(app, "root", admin=True),
            ),
        }
        for status, (message, metadata) in cases.items():
            with pytest.raises(grpc.RpcError) as refused:
                admin.ExplainAccess(message, metadata=metadata, timeout=30)
            assert refused.value.code() == status, refused.value.details()


def _question_rows(app: App) -> list[tuple[str, tuple[str, ...], int, str]]:
    return [
        (r.user_id, tuple(sorted(r.document_ids)), r.chunk_count, r.interface)
        for r in app.repository.audit_records(None, 1000, None, None)
        if r.query_class == EXPLAIN_AUDIT_CLASS and r.chunk_count
    ]


def test_graphql_explains_which_of_the_admins_chunks_a_user_would_see(world: tuple[App, Served]) -> None:
    app, served = world
    # alice (an admin, in group:hr) searches; carol holds only group:everyone; bob is denied the handbook.
    body = _graphql(app, served, "alice", admin=True, document=EXPLAIN_QUESTION, u="carol", s=STORE, q=QUESTION)
    assert "errors" not in body, body
    got = body["data"]["explainAccess"]
    assert (got["userId"], got["storeId"], got["documentId"], got["readable"], got["acl"]) == (
        "carol",
        STORE,
        None,
        None,
        None,
    )
    assert [p["principal"] for p in got["principals"]] == ["user:carol", "group:everyone"]
    chunks = got["chunks"]
    # Only what alice may read: never bob's notes, though bob could read them.
    assert {c["documentId"] for c in chunks} == {"handbook", "executive-pay"}
    assert all(c["chunkId"] and c["score"] is not None for c in chunks)
    assert all(0.0 <= c["relevance"] <= 1.0 for c in chunks)
    seen = {c["documentId"]: (c["visible"], c["decidingEntry"]) for c in chunks}
    assert seen == {"handbook": (True, "allow group:everyone"), "executive-pay": (False, None)}

    bob = _graphql(app, served, "alice", admin=True, document=EXPLAIN_QUESTION, u="bob", s=STORE, q=QUESTION)
    denied = {c["documentId"]: c for c in bob["data"]["explainAccess"]["chunks"]}
    assert (denied["handbook"]["visible"], denied["handbook"]["decidingEntry"]) == (False, "deny user:bob")
    assert "deny wins" in denied["handbook"]["reason"]
    rows = _question_rows(app)
    assert ("alice", ("executive-pay", "handbook"), len(chunks), "graphql") in rows


def test_graphql_question_form_refusals(world: tuple[App, Served]) -> None:
    app, served = world
    before = _question_rows(app)
    cases = {
        "FORBIDDEN": ("carol", False, {"u": "bob", "s": STORE, "q": QUESTION}),
        "NOT_FOUND": ("alice", True, {"u": "bob", "s": "no-such-store", "q": QUESTION}),
        "BAD_USER_INPUT": ("alice", True, {"u": "bob", "q": QUESTION}),  # no store
    }
    both = ("alice", True, {"u": "bob", "s": STORE, "q": QUESTION, "d": "handbook"})
    neither = ("alice", True, {"u": "bob", "s": STORE})
    for code, (caller, admin, variables) in [*cases.items(), ("BAD_USER_INPUT", both), ("BAD_USER_INPUT", neither)]:
        body = _graphql(app, served, caller, admin=admin, document=EXPLAIN_QUESTION, **variables)
        assert body["data"] is None, body
        [error] = body["errors"]
        assert error["extensions"]["code"] == code, (code, error)
    assert _question_rows(app) == before


def test_grpc_explains_a_question(world: tuple[App, Served], stubs: Stubs) -> None:
    app, served = world
    request = stubs.admin.ExplainAccessRequest
    with grpc.insecure_channel(served.channel_target) as channel:
        admin = stubs.admin_grpc.AdminServiceStub(channel)
        reply = admin.ExplainAccess(
            request(user_id="bob", store_id=STORE, question=QUESTION), metadata=bearer(app, "alice", admin=True)
        )
        assert (reply.user_id, reply.store_id, reply.document_id, reply.HasField("acl")) == ("bob", STORE, "", False)
        assert {c.document_id for c in reply.chunks} == {"handbook", "executive-pay"}
        for chunk in reply.chunks:
            assert chunk.chunk_id and chunk.HasField("score") and chunk.HasField("relevance") and not chunk.visible
        handbook = next(c for c in reply.chunks if c.document_id == "handbook")
        assert handbook.deciding_entry == "deny user:bob"
        assert not next(c for c in reply.chunks if c.document_id == "executive-pay").HasField("deciding_entry")
        assert ("alice", ("executive-pay", "handbook"), len(reply.chunks), "grpc") in _question_rows(app)

        cases = {
            grpc.StatusCode.PERMISSION_DENIED: (
                request(user_id="bob", store_id=STORE, question="x"),
                bearer(app, "bob"),
            ),
            grpc.StatusCode.INVALID_ARGUMENT: (
                request(user_id="bob", question=QUESTION),  # no store
                bearer(app, "alice", admin=True),
            ),
            grpc.StatusCode.NOT_FOUND: (
                request(user_id="bob", store_id="no-such-store", question=QUESTION),
                bearer(app, "alice", admin=True),
            ),
        }
        for status, (message, metadata) in cases.items():
            with pytest.raises(grpc.RpcError) as refused:
                admin.ExplainAccess(message, metadata=metadata, timeout=30)
            assert refused.value.code() == status, refused.value.details()
