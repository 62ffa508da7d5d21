"""A summary or comparison whose caller went away (cancelled, or past its deadline) stops, is audited CANCELLED
or DEADLINE_EXCEEDED and is not kept in history as answered: over a real gRPC server on loopback.

The language model stand-in holds its answer until the test has cancelled (or seen the deadline pass), then
fails, so the work goes on for nobody: the extractive fallback, the comparison's own text."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from service.api.grpc.stubs import Stubs, load
from service.bootstrap import App
from service.domain.queries import Caller
from service.generation.errors import GeneratorUnavailable
from service.generation.port import Completion, Generator
from service.generation.prompt import Prompt
from service.persistence.ports import AuditRecord
from tests.integration.server_world import STORE, Served, bearer, build_world, on_servers

pytestmark = pytest.mark.integration


class HeldModel(Generator):
    """Holds every answer until ``release`` is set, then fails as an unreachable model does."""

    def __init__(self) -> None:
        self.model_id = "held"
        self.context_tokens = 8192
        self.called = threading.Event()
        self.release = threading.Event()

    def generate(self, prompt: Prompt) -> Completion:
        self._hold()
        raise AssertionError("unreachable")  # pragma: no cover

    def stream(self, prompt: Prompt) -> Iterator[str]:
        self._hold()
        yield ""  # pragma: no cover

    def _hold(self) -> None:
        self.called.set()
        self.release.wait(30)
        raise GeneratorUnavailable("the language model went away")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, Served, HeldModel]]:
    model = HeldModel()
    app = build_world(tmp_path_factory.mktemp("cancel"), generator=model)
    with on_servers(app) as served:
        yield app, served, model
    app.close()


@pytest.fixture
def model(world: tuple[App, Served, HeldModel]) -> HeldModel:
    held = world[2]
    held.called.clear()
    held.release.clear()
    return held


@pytest.fixture(scope="module")
def stubs() -> Stubs:
    return load()


def _row(app: App, user: str) -> AuditRecord:
    """``user``'s one audit row, once the server's worker has written it."""
    for _ in range(600):
        rows = app.repository.audit_records(user, 10)
        if rows:
            (row,) = rows
            return row
        time.sleep(0.05)
    raise AssertionError(f"no audit row for {user}")


def _past_the_servers_deadline() -> None:
    """The server's deadline is the client's plus the request's way there: when the client gives up first it
    cancels the call, and the server may see a cancel (CANCELLED) an instant before its own deadline passes."""
    time.sleep(0.3)


def _unanswered(app: App, user: str, query_class: str, outcome: str) -> None:
    row = _row(app, user)
    assert (row.query_class, row.outcome, row.interface) == (query_class, outcome, "grpc")
    assert app.history.page(Caller(user), 10).entries == ()  # not kept as answered


def _calls(world: Any, stubs: Stubs, user: str) -> tuple[Any, Any, tuple[tuple[str, str]]]:
    stub = stubs.analysis_grpc.AnalysisServiceStub(grpc.insecure_channel(world[1].channel_target))
    return stub, stubs.analysis, bearer(world[0], user)


def test_a_cancelled_summary_stream_is_audited_cancelled_and_not_kept(
    world: Any, stubs: Stubs, model: HeldModel
) -> None:
    stub, m, metadata = _calls(world, stubs, "carol")
    call = stub.StreamSummarizeDocument(
        m.SummarizeDocumentRequest(store_id=STORE, document_id="handbook"), metadata=metadata, timeout=60
    )
    assert model.called.wait(30)
    call.cancel()
    model.release.set()  # the model fails: the extractive fallback would run for nobody
    with pytest.raises(grpc.RpcError) as info:
        list(call)
    assert info.value.code() == grpc.StatusCode.CANCELLED
    _unanswered(world[0], "carol", "summary", "CANCELLED")


def test_a_comparison_stream_past_its_deadline_is_audited_so_and_not_kept(
    world: Any, stubs: Stubs, model: HeldModel
) -> None:
    stub, m, metadata = _calls(world, stubs, "bob")
    request = m.CompareDocumentsRequest(store_id=STORE, document_ids=["handbook", "bob-notes"])
    with pytest.raises(grpc.RpcError) as info:
        list(stub.StreamCompareDocuments(request, metadata=metadata, timeout=1.5))
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    _past_the_servers_deadline()
    model.release.set()  # the model fails: the comparison's own quoted text would be kept for nobody
    _unanswered(world[0], "bob", "comparison", "DEADLINE_EXCEEDED")


def test_a_unary_comparison_past_its_deadline_is_audited_so_and_not_kept(
    world: Any, stubs: Stubs, model: HeldModel
) -> None:
    stub, m, metadata = _calls(world, stubs, "alice")
    request = m.CompareDocumentsRequest(store_id=STORE, document_ids=["handbook", "executive-pay"])
    with pytest.raises(grpc.RpcError) as info:
        stub.CompareDocuments(request, metadata=metadata, timeout=1.5)
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    _past_the_servers_deadline()
    model.release.set()
    _unanswered(world[0], "alice", "comparison", "DEADLINE_EXCEEDED")


def _query_stub(world: Any, stubs: Stubs, user: str) -> tuple[Any, Any, tuple[tuple[str, str]]]:
    stub = stubs.query_grpc.QueryServiceStub(grpc.insecure_channel(world[1].channel_target))
    return stub, stubs.query, bearer(world[0], user)


def test_a_cancelled_unary_question_is_audited_cancelled_and_not_kept(
    world: Any, stubs: Stubs, model: HeldModel
) -> None:
    stub, m, metadata = _query_stub(world, stubs, "dave")
    request = m.VectorQueryRequest(store_id=STORE, question="How many vacation days do I get?", level=0)
    call = stub.VectorQuery.future(request, metadata=metadata, timeout=60)
    assert model.called.wait(30)
    call.cancel()
    time.sleep(0.3)  # the cancel's way to the server (an answer finished before it arrives is one nobody saw)
    model.release.set()  # the model fails: the extractive answer would be written for nobody
    with pytest.raises(grpc.FutureCancelledError):
        call.result()
    _unanswered(world[0], "dave", "vector", "CANCELLED")


def test_a_unary_question_past_its_deadline_is_audited_so_and_not_kept(
    world: Any, stubs: Stubs, model: HeldModel
) -> None:
    stub, m, metadata = _query_stub(world, stubs, "erin")
    request = m.VectorQueryRequest(store_id=STORE, question="How many vacation days do I get?", level=0)
    with pytest.raises(grpc.RpcError) as info:
        stub.VectorQuery(request, metadata=metadata, timeout=1.5)
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    _past_the_servers_deadline()
    model.release.set()
    _unanswered(world[0], "erin", "vector", "DEADLINE_EXCEEDED")


def _hang_up_mid_request(url: str, token: str, query: str) -> Any:
    """POST a GraphQL ``query`` over a raw socket, then close the connection without reading the reply."""
    import json
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    body = json.dumps({"query": query}).encode()
    head = (
        f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {token}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    client = socket.create_connection((parts.hostname, parts.port), timeout=10)
    client.sendall(head + body)
    return client


@pytest.mark.parametrize(
    ("user", "query", "query_class"),
    [
        (
            "dave",
            '{ vectorQuery(storeId: "acme", question: "Vacation days?", level: 0) { answer } }',
            "vector",
        ),
        ("erin", '{ summarizeDocument(storeId: "acme", documentId: "handbook") { summary } }', "summary"),
    ],
)
def test_a_graphql_request_whose_client_hangs_up_is_audited_cancelled_and_not_kept(
    world: Any, model: HeldModel, user: str, query: str, query_class: str
) -> None:
    from tests.integration.server_world import token

    user = f"{user}-http"
    client = _hang_up_mid_request(world[1].graphql_url, token(world[0], user), query)
    assert model.called.wait(30)
    client.close()  # the client hangs up while the model is still writing
    time.sleep(1.0)  # the server looks every 0.25 s
    model.release.set()  # the model fails: the extractive answer would be written for nobody
    row = _row(world[0], user)
    assert (row.query_class, row.outcome, row.interface) == (query_class, "CANCELLED", "graphql")
    assert world[0].history.page(Caller(user), 10).entries == ()
