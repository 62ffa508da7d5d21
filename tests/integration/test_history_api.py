"""History, conversations and ratings over real GraphQL and gRPC servers on loopback, with the access re-check."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import pytest

from service.api.grpc.stubs import Stubs, load
from service.bootstrap import App
from service.security.tokens import mint_token
from tests.integration.server_world import (
    STORE,
    Served,
    SlowGenerator,
    build_world,
    commits_that_wrote,
    inserts_fail,
    on_servers,
)

pytestmark = pytest.mark.integration

SECRET_TEXT = "Executives get 30 days"
ASK = """query($q: String!, $c: String) {
  vectorQuery(storeId: "acme", question: $q, level: 0, conversationId: $c) {
    queryId conversationId rewrittenQuestion answer chunks { documentId text }
  }
}"""
HISTORY = """query($first: Int, $after: String) {
  history(first: $first, after: $after) {
    edges { cursor node { queryId conversationId question rewrittenQuestion answer sourcesRevoked rating
      sources { documentId chunkId title score } } }
    pageInfo { endCursor hasNextPage }
  }
}"""
CONVERSATION = "query($id: String!) { conversation(id: $id) { id turns { queryId answer sourcesRevoked } } }"
RATE = """mutation($id: String!, $r: Rating!, $c: String) {
  rateAnswer(queryId: $id, rating: $r, comment: $c) { queryId rating comment }
}"""
FEEDBACK = """query { feedback(storeId: "acme") { edges { node { userId rating comment
  entry { question answer sourcesRevoked sources { documentId } } } } pageInfo { hasNextPage } } }"""


@pytest.fixture
def served(tmp_path: Any) -> Iterator[tuple[App, Served]]:
    app = build_world(tmp_path, generator=SlowGenerator())
    with on_servers(app) as served:
        yield app, served
    app.close()


def _gql(
    world: tuple[App, Served], query: str, user: str, variables: dict[str, Any] | None = None, **roles: bool
) -> Any:
    app, served = world
    bearer = mint_token(app.settings, user, ttl_s=300, **roles)
    reply = httpx.post(
        served.graphql_url,
        json={"query": query, "variables": variables or {}},
        headers={"authorization": f"Bearer {bearer}"},
        timeout=10,
    )
    assert reply.status_code == 200, reply.text
    return reply.json()


def _codes(body: dict[str, Any]) -> list[str]:
    return [e["extensions"]["code"] for e in body.get("errors", [])]


def test_graphql_conversation_history_feedback_and_revocation(served: tuple[App, Served]) -> None:
    app, _ = served
    first = _gql(served, ASK, "alice", {"q": "How many days of paid vacation leave?"})["data"]["vectorQuery"]
    assert SECRET_TEXT in " ".join(c["text"] for c in first["chunks"])  # alice is in hr: she reads executive-pay
    conversation = first["conversationId"]
    follow = _gql(served, ASK, "alice", {"q": "and for executives?", "c": conversation})["data"]["vectorQuery"]
    assert follow["conversationId"] == conversation
    assert follow["rewrittenQuestion"] == "and for executives days paid vacation?"

    # another user, an admin (without the audit role), an unknown id: NOT_FOUND, the same words
    for user, roles in (("bob", {}), ("root", {"admin": True})):
        body = _gql(served, ASK, user, {"q": "and?", "c": conversation}, **roles)
        assert _codes(body) == ["NOT_FOUND"]
        assert _codes(_gql(served, CONVERSATION, user, {"id": conversation}, **roles)) == ["NOT_FOUND"]
        assert _codes(_gql(served, RATE, user, {"id": first["queryId"], "r": "DOWN"}, **roles)) == ["NOT_FOUND"]
        body = _gql(
            served,
            "mutation($id: String!) { deleteHistoryEntry(queryId: $id) }",
            user,
            {"id": first["queryId"]},
            **roles,
        )
        assert _codes(body) == ["NOT_FOUND"]
    unknown = _gql(served, CONVERSATION, "bob", {"id": str(uuid.uuid4())})
    assert _codes(unknown) == ["NOT_FOUND"] and unknown["errors"][0]["message"] == "conversation not found"
    assert _gql(served, HISTORY, "bob")["data"]["history"]["edges"] == []

    # paging newest first
    page = _gql(served, HISTORY, "alice", {"first": 1})["data"]["history"]
    assert [e["node"]["queryId"] for e in page["edges"]] == [follow["queryId"]] and page["pageInfo"]["hasNextPage"]
    rest = _gql(served, HISTORY, "alice", {"first": 1, "after": page["pageInfo"]["endCursor"]})["data"]["history"]
    assert [e["node"]["queryId"] for e in rest["edges"]] == [first["queryId"]] and not rest["pageInfo"]["hasNextPage"]
    assert _codes(_gql(served, HISTORY, "alice", {"after": "garbage!"})) == ["BAD_USER_INPUT"]

    # ratings: a later one replaces the earlier; too long a comment changes nothing
    assert (
        _gql(served, RATE, "alice", {"id": first["queryId"], "r": "UP", "c": "good"})["data"]["rateAnswer"]["rating"]
        == "UP"
    )
    assert _codes(_gql(served, RATE, "alice", {"id": first["queryId"], "r": "DOWN", "c": "x" * 2001})) == [
        "BAD_USER_INPUT"
    ]
    _gql(served, RATE, "alice", {"id": first["queryId"], "r": "DOWN", "c": "wanted handbook"})
    assert _codes(_gql(served, FEEDBACK, "alice")) == ["FORBIDDEN"]
    admin_view = _gql(served, FEEDBACK, "root", admin=True)["data"]["feedback"]["edges"]
    [rated] = admin_view
    # root is not in hr: the entry that cited executive-pay is redacted for the admin too, the comment with it
    assert rated["node"]["rating"] == "DOWN" and rated["node"]["comment"] == ""
    assert rated["node"]["entry"]["sourcesRevoked"] and rated["node"]["entry"]["answer"] is None
    assert SECRET_TEXT not in str(admin_view) and "executive-pay" not in str(admin_view)

    # revocation: alice leaves hr; her history no longer shows what executive-pay said, nor the document
    app.admin_without_index().remove_member("group:hr", "user:alice", "test")
    body = _gql(served, HISTORY, "alice")
    entries = [e["node"] for e in body["data"]["history"]["edges"]]
    assert all(e["sourcesRevoked"] and e["answer"] is None for e in entries)
    assert SECRET_TEXT not in str(body) and "executive-pay" not in str(body) and "Executive-Pay" not in str(body)
    turns = _gql(served, CONVERSATION, "alice", {"id": conversation})["data"]["conversation"]["turns"]
    assert [t["sourcesRevoked"] for t in turns] == [True, True]
    # an auditor reads the conversation, redacted by the auditor's own rights, but cannot continue it
    audit = _gql(served, CONVERSATION, "carol", {"id": conversation}, history_auditor=True)["data"]["conversation"]
    assert len(audit["turns"]) == 2 and SECRET_TEXT not in str(audit)
    assert _codes(_gql(served, ASK, "carol", {"q": "and?", "c": conversation}, history_auditor=True)) == ["NOT_FOUND"]

    deleted = _gql(served, "mutation($id: String!) { deleteConversation(id: $id) }", "alice", {"id": conversation})
    assert deleted["data"]["deleteConversation"] == 2
    assert _gql(served, HISTORY, "alice")["data"]["history"]["edges"] == []


def test_grpc_history_service(served: tuple[App, Served]) -> None:
    app, srv = served
    stubs: Stubs = load()
    with grpc.insecure_channel(srv.channel_target) as channel:
        query = stubs.query_grpc.QueryServiceStub(channel)
        history = stubs.history_grpc.HistoryServiceStub(channel)

        def meta(user: str, **roles: bool) -> tuple[tuple[str, str]]:
            return (("authorization", f"Bearer {mint_token(app.settings, user, ttl_s=300, **roles)}"),)

        q = stubs.query.VectorQueryRequest
        first = query.VectorQuery(
            q(store_id=STORE, question="paid vacation leave days?", level=0), metadata=meta("bob")
        )
        assert first.HasField("conversation_id") and not first.HasField("rewritten_question")
        follow = query.StreamVectorQuery(
            q(store_id=STORE, question="and mine?", level=0, conversation_id=first.conversation_id),
            metadata=meta("bob"),
        )
        done = [e.done for e in follow if e.HasField("done")][-1]
        assert done.conversation_id == first.conversation_id and done.rewritten_question
        with pytest.raises(grpc.RpcError) as error:
            query.VectorQuery(
                q(store_id=STORE, question="and?", conversation_id=first.conversation_id), metadata=meta("alice")
            )
        assert error.value.code() == grpc.StatusCode.NOT_FOUND

        page = history.ListHistory(stubs.history.ListHistoryRequest(page_size=1), metadata=meta("bob"))
        assert [e.query_id for e in page.entries] == [done.query_id] and page.next_page_token
        rest = history.ListHistory(
            stubs.history.ListHistoryRequest(page_size=1, page_token=page.next_page_token), metadata=meta("bob")
        )
        assert [e.query_id for e in rest.entries] == [first.query_id] and rest.next_page_token == ""
        for call, request, user in (
            (
                history.GetConversation,
                stubs.history.GetConversationRequest(conversation_id=first.conversation_id),
                "alice",
            ),
            (history.DeleteHistoryEntry, stubs.history.DeleteHistoryEntryRequest(query_id=first.query_id), "alice"),
            (
                history.DeleteConversation,
                stubs.history.DeleteConversationRequest(conversation_id=first.conversation_id),
                "root",
            ),
            (history.RateAnswer, stubs.history.RateAnswerRequest(query_id=first.query_id, rating=1), "root"),
        ):
            with pytest.raises(grpc.RpcError) as error:
                call(request, metadata=meta(user, admin=user == "root"))
            assert error.value.code() == grpc.StatusCode.NOT_FOUND, call
        with pytest.raises(grpc.RpcError) as error:
            history.RateAnswer(stubs.history.RateAnswerRequest(query_id=first.query_id), metadata=meta("bob"))
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.RpcError) as error:
            history.ListHistory(stubs.history.ListHistoryRequest(page_size=101), metadata=meta("bob"))
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        rated = history.RateAnswer(
            stubs.history.RateAnswerRequest(query_id=first.query_id, rating=2, comment="hm"), metadata=meta("bob")
        )
        assert rated.rating == 2
        with pytest.raises(grpc.RpcError) as error:
            history.ListFeedback(stubs.history.ListFeedbackRequest(store_id=STORE), metadata=meta("bob"))
        assert error.value.code() == grpc.StatusCode.PERMISSION_DENIED
        listed = history.ListFeedback(
            stubs.history.ListFeedbackRequest(store_id=STORE), metadata=meta("root", admin=True)
        )
        [item] = listed.feedback
        # bob's notes are bob's alone: the admin sees the rating, not bob-notes
        assert item.user_id == "bob" and item.entry.sources_revoked and not item.entry.HasField("answer")
        assert "bob-notes" not in str(listed) and "still have" not in str(listed)
        turns = history.GetConversation(
            stubs.history.GetConversationRequest(conversation_id=first.conversation_id), metadata=meta("bob")
        )
        assert [t.query_id for t in turns.turns] == [first.query_id, done.query_id]
        gone = history.DeleteConversation(
            stubs.history.DeleteConversationRequest(conversation_id=first.conversation_id), metadata=meta("bob")
        )
        assert gone.deleted == 2


def test_an_answer_keeps_its_history_entry_and_its_audit_row_in_one_transaction(served: tuple[App, Served]) -> None:
    """One flush to disk per answered query through the servers, and never a history entry without its audit
    row: when the audit row cannot be written the caller gets an error and no history entry is kept."""
    app, _ = served
    with commits_that_wrote(app) as wrote:
        first = _gql(served, ASK, "alice", {"q": "How many days of paid vacation leave?"})["data"]["vectorQuery"]
    assert wrote == [["query_audit", "query_history"]]
    assert [r.query_id for r in app.repository.audit_records("alice")] == [first["queryId"]]

    with inserts_fail(app, "query_audit"):
        body = _gql(served, ASK, "alice", {"q": "and for executives?", "c": first["conversationId"]})
    assert _codes(body) == ["INTERNAL_SERVER_ERROR"] and body["data"] is None
    turns = _gql(served, CONVERSATION, "alice", {"id": first["conversationId"]})["data"]["conversation"]["turns"]
    assert [t["queryId"] for t in turns] == [first["queryId"]]  # the failed turn left no entry
    history = _gql(served, HISTORY, "alice", {"first": 10})["data"]["history"]["edges"]
    assert [e["node"]["queryId"] for e in history] == [first["queryId"]]

    # a history row that cannot be written: neither row is kept, and the query still leaves a failure audit row
    with inserts_fail(app, "query_history"):
        body = _gql(served, ASK, "alice", {"q": "and for executives?", "c": first["conversationId"]})
    assert _codes(body) == ["INTERNAL_SERVER_ERROR"]
    assert [r.outcome for r in app.repository.audit_records("alice")] == ["INTERNAL", "OK"]
    history = _gql(served, HISTORY, "alice", {"first": 10})["data"]["history"]["edges"]
    assert [e["node"]["queryId"] for e in history] == [first["queryId"]]


def test_a_request_with_a_lone_surrogate_is_refused_before_any_work(served: tuple[App, Served]) -> None:
    """JSON lets a client send a lone surrogate (an escaped D800), which no database's text can store: the
    request is refused as malformed (400), wherever it sits, and nothing runs; a surrogate pair is a character."""
    app, srv = served
    bearer = mint_token(app.settings, "alice", ttl_s=300)
    headers = {"authorization": f"Bearer {bearer}", "content-type": "application/json"}
    for question in ("How many days of paid vacation leave? \ud800", "vacation \udfff"):
        body = json.dumps({"query": ASK, "variables": {"q": question}})  # ASCII: the surrogate travels escaped
        reply = httpx.post(srv.graphql_url, content=body, headers=headers, timeout=10)
        assert reply.status_code == 400 and "lone surrogate" in reply.json()["errors"][0]["message"]
    rate = json.dumps({"query": RATE, "variables": {"id": "q", "r": "UP", "c": "good \ud800"}})
    assert httpx.post(srv.graphql_url, content=rate, headers=headers, timeout=10).status_code == 400
    assert app.repository.audit_records("alice") == []
    paired = json.dumps({"query": ASK, "variables": {"q": "How many days of paid vacation leave? \U0001f3d6"}})
    assert "\\ud83c\\udfd6" in paired
    reply = httpx.post(srv.graphql_url, content=paired, headers=headers, timeout=10)
    assert reply.status_code == 200 and reply.json()["data"]["vectorQuery"]["chunks"]
