"""Summaries and comparisons over real gRPC and GraphQL servers on loopback: access, typed errors, audit."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import pytest

from acl.model import Acl
from service.api.grpc.stubs import Stubs, load
from service.bootstrap import App
from service.domain.queries import Caller
from service.generation.port import Completion
from service.generation.prompt import Prompt
from tests.integration.server_world import (
    DOCUMENTS,
    STORE,
    Served,
    SlowGenerator,
    bearer,
    build_world,
    commits_that_wrote,
    inserts_fail,
    on_servers,
    token,
)


class Recording(SlowGenerator):
    """SlowGenerator that keeps every prompt it is sent (rendered), to prove what never reaches a model."""

    def __init__(self) -> None:
        super().__init__()
        self.rendered: list[str] = []
        self._lock = threading.Lock()

    def generate(self, prompt: Prompt) -> Completion:
        with self._lock:
            self.rendered.append(prompt.render())
        return super().generate(prompt)

    def stream(self, prompt: Prompt) -> Iterator[str]:
        with self._lock:
            self.rendered.append(prompt.render())
        yield from super().stream(prompt)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, Served, Recording]]:
    generator = Recording()
    app = build_world(tmp_path_factory.mktemp("analysis"), generator=generator)
    with on_servers(app) as served:
        yield app, served, generator
    app.close()


@pytest.fixture(scope="module")
def stubs() -> Stubs:
    return load()


def _stub(world: Any, stubs: Stubs) -> Any:
    return stubs.analysis_grpc.AnalysisServiceStub(grpc.insecure_channel(world[1].channel_target))


def _error(call: Any) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value


def _gql(world: Any, query: str, variables: dict[str, Any], user: str) -> dict[str, Any]:
    app, served, _ = world
    reply = httpx.post(
        served.graphql_url,
        json={"query": query, "variables": variables},
        headers={"authorization": f"Bearer {token(app, user)}"},
        timeout=30,
    )
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def _codes(body: dict[str, Any]) -> list[str]:
    return [e["extensions"]["code"] for e in body.get("errors", [])]


SUMMARY = """query($s: String!, $d: String!, $l: SummaryLength) {
  summarizeDocument(storeId: $s, documentId: $d, length: $l) {
    queryId summary extractive method sectionsCovered llmCalled
    sections { citation headingPath chunkIds cited } sources { documentId chunkId }
  }
}"""
COMPARE = """query($s: String!, $ids: [String!]!, $q: String) {
  compareDocuments(storeId: $s, documentIds: $ids, question: $q) {
    comparison extractive topics { label onlyIn relevance entries { documentId citation statement } }
    sources { documentId chunkId }
  }
}"""


def test_grpc_summary_and_comparison_for_a_reader(world: Any, stubs: Stubs) -> None:
    app, _, generator = world
    stub, m = _stub(world, stubs), stubs.analysis
    summary = stub.SummarizeDocument(
        m.SummarizeDocumentRequest(store_id=STORE, document_id="handbook", length=m.SUMMARY_LENGTH_SHORT),
        metadata=bearer(app, "bob"),
    )
    assert summary.method == "whole" and summary.llm_called and not summary.extractive
    assert summary.summary.startswith("The answer is in [1]") and summary.sections_covered == 1
    assert {c.document_id for c in summary.sources} == {"handbook"} and summary.length == "short"
    both = stub.CompareDocuments(
        m.CompareDocumentsRequest(store_id=STORE, document_ids=["handbook", "bob-notes"], question="vacation"),
        metadata=bearer(app, "bob"),
    )
    assert {c.document_id for c in both.sources} == {"handbook", "bob-notes"}
    assert both.topics and all(t.HasField("relevance") for t in both.topics)
    assert all("Executives" not in text for text in generator.rendered)  # bob may not read executive-pay
    records = app.repository.audit_records("bob", 10)
    classes = [r.query_class for r in records]
    assert "summary" in classes and "comparison" in classes
    row = next(r for r in records if r.query_class == "comparison")
    assert set(row.document_ids) == {"handbook", "bob-notes"} and row.outcome == "OK"


def test_grpc_not_found_and_invalid_argument(world: Any, stubs: Stubs) -> None:
    app = world[0]
    stub, m = _stub(world, stubs), stubs.analysis
    rendered_before = len(world[2].rendered)
    unreadable = _error(
        lambda: stub.SummarizeDocument(
            m.SummarizeDocumentRequest(store_id=STORE, document_id="executive-pay"), metadata=bearer(app, "bob")
        )
    )
    unknown = _error(
        lambda: stub.SummarizeDocument(
            m.SummarizeDocumentRequest(store_id=STORE, document_id="nope"), metadata=bearer(app, "bob")
        )
    )
    assert unreadable.code() == unknown.code() == grpc.StatusCode.NOT_FOUND
    assert unreadable.details().replace("executive-pay", "X") == unknown.details().replace("nope", "X")
    one_hidden = _error(
        lambda: stub.CompareDocuments(
            m.CompareDocumentsRequest(store_id=STORE, document_ids=["handbook", "executive-pay"]),
            metadata=bearer(app, "bob"),
        )
    )
    assert one_hidden.code() == grpc.StatusCode.NOT_FOUND
    for ids in (["handbook"], ["handbook"] * 2, [f"d{i}" for i in range(6)]):
        error = _error(
            lambda ids=ids: stub.CompareDocuments(
                m.CompareDocumentsRequest(store_id=STORE, document_ids=ids), metadata=bearer(app, "bob")
            )
        )
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, ids
    bad_length = _error(
        lambda: stub.SummarizeDocument(
            m.SummarizeDocumentRequest(store_id=STORE, document_id="handbook", length=9), metadata=bearer(app, "bob")
        )
    )
    assert bad_length.code() == grpc.StatusCode.INVALID_ARGUMENT
    no_token = _error(
        lambda: stub.SummarizeDocument(m.SummarizeDocumentRequest(store_id=STORE, document_id="handbook"))
    )
    assert no_token.code() == grpc.StatusCode.UNAUTHENTICATED
    assert len(world[2].rendered) == rendered_before  # nothing reached the model
    failures = [r for r in app.repository.audit_records("bob", 50) if r.outcome == "NOT_FOUND"]
    assert any(r.query_class == "summary" for r in failures) and any(r.query_class == "comparison" for r in failures)


def test_grpc_streams_text_then_the_result(world: Any, stubs: Stubs) -> None:
    app = world[0]
    stub, m = _stub(world, stubs), stubs.analysis
    events = list(
        stub.StreamSummarizeDocument(
            m.SummarizeDocumentRequest(store_id=STORE, document_id="bob-notes"), metadata=bearer(app, "bob")
        )
    )
    texts = [e.text for e in events if e.WhichOneof("event") == "text"]
    assert len(texts) > 1 and events[-1].WhichOneof("event") == "done"
    assert "".join(texts) == events[-1].done.summary
    events = list(
        stub.StreamCompareDocuments(
            m.CompareDocumentsRequest(store_id=STORE, document_ids=["handbook", "bob-notes"]),
            metadata=bearer(app, "bob"),
        )
    )
    assert events[-1].WhichOneof("event") == "done" and events[-1].done.sources
    hidden = stub.StreamCompareDocuments(
        m.CompareDocumentsRequest(store_id=STORE, document_ids=["handbook", "executive-pay"]),
        metadata=bearer(app, "bob"),
    )
    assert _error(lambda: list(hidden)).code() == grpc.StatusCode.NOT_FOUND


def test_graphql_summary_comparison_and_typed_errors(world: Any) -> None:
    summary = _gql(world, SUMMARY, {"s": STORE, "d": "handbook", "l": "LONG"}, "alice")["data"]["summarizeDocument"]
    assert summary["method"] == "whole" and summary["sections"][0]["chunkIds"] == ["handbook#0"]
    compared = _gql(world, COMPARE, {"s": STORE, "ids": ["handbook", "executive-pay"], "q": "bonus"}, "alice")
    topics = compared["data"]["compareDocuments"]["topics"]
    assert {e["documentId"] for t in topics for e in t["entries"]} == {"handbook", "executive-pay"}
    assert _codes(_gql(world, SUMMARY, {"s": STORE, "d": "executive-pay"}, "bob")) == ["NOT_FOUND"]
    assert _codes(_gql(world, SUMMARY, {"s": STORE, "d": "nope"}, "bob")) == ["NOT_FOUND"]
    assert _codes(_gql(world, SUMMARY, {"s": STORE, "d": "handbook", "l": "HUGE"}, "bob")) == ["BAD_USER_INPUT"]
    hidden = _gql(world, COMPARE, {"s": STORE, "ids": ["handbook", "executive-pay"]}, "bob")
    assert _codes(hidden) == ["NOT_FOUND"] and hidden["data"] is None
    assert "Executives" not in str(hidden)
    for ids in (["handbook"], [f"d{i}" for i in range(6)], ["handbook", "handbook"]):
        assert _codes(_gql(world, COMPARE, {"s": STORE, "ids": ids}, "bob")) == ["BAD_USER_INPUT"], ids


def test_a_revoked_document_is_not_found_and_its_text_never_reaches_the_model(world: Any, stubs: Stubs) -> None:
    app, _, generator = world
    app.access.override_acl(STORE, "bob-notes", Acl.of(["user:carol"]), "test")
    try:
        before = len(generator.rendered)
        assert _codes(_gql(world, SUMMARY, {"s": STORE, "d": "bob-notes"}, "bob")) == ["NOT_FOUND"]
        stub, m = _stub(world, stubs), stubs.analysis
        error = _error(
            lambda: stub.CompareDocuments(
                m.CompareDocumentsRequest(store_id=STORE, document_ids=["handbook", "bob-notes"]),
                metadata=bearer(app, "bob"),
            )
        )
        assert error.code() == grpc.StatusCode.NOT_FOUND
        assert len(generator.rendered) == before
        notes = DOCUMENTS["bob-notes"][0]
        for user in ("bob", "alice"):
            body = _gql(world, COMPARE, {"s": STORE, "ids": ["handbook", "executive-pay"]}, user)
            assert notes not in str(body)
        assert all(notes not in text for text in generator.rendered[before:])
    finally:
        app.access.reset_acl(STORE, "bob-notes")


def test_a_summary_keeps_its_history_entry_and_audit_row_together(world: Any) -> None:
    """Written in one transaction (comparisons go the same way); when they cannot be, neither is kept and a
    failure audit row is left."""
    app = world[0]
    with inserts_fail(app, "query_history"):
        failed = _gql(world, SUMMARY, {"s": STORE, "d": "handbook"}, "erin")
    assert _codes(failed) == ["INTERNAL_SERVER_ERROR"]
    assert [r.outcome for r in app.repository.audit_records("erin")] == ["INTERNAL"]
    assert app.history.page(Caller("erin"), 10).entries == ()

    with commits_that_wrote(app) as wrote:
        summary = _gql(world, SUMMARY, {"s": STORE, "d": "handbook"}, "erin")["data"]["summarizeDocument"]
    assert wrote == [["query_audit", "query_history"]]
    assert [r.outcome for r in app.repository.audit_records("erin")] == ["OK", "INTERNAL"]
    assert [e.entry.query_id for e in app.history.page(Caller("erin"), 10).entries] == [summary["queryId"]]
