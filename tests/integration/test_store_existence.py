"""A store the caller may read nothing of answers exactly as a store that does not exist, on every path;
forbidden and absent documents cost the same SQL statements.

Alice may read nothing in ``vault`` (only bob's secret is there). Every operation that names a store — the
three queries, streams, summaries, comparisons, the document picker, a store's settings — must answer her
NOT_FOUND with the words an unknown store gets. An admin still sees the stores they administer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import grpc
import httpx
import pytest
from sqlalchemy import event

from service.api.grpc.stubs import Stubs, load
from service.bootstrap import App
from service.domain.queries import Caller, DocumentQuery, VectorQuery
from tests.integration.server_world import (
    QUESTION,
    STORE,
    VAULT,
    Served,
    SlowGenerator,
    add_vault,
    bearer,
    build_world,
    on_servers,
    token,
)

pytestmark = pytest.mark.integration

NOWHERE = "nowhere"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, Served]]:
    app = build_world(tmp_path_factory.mktemp("store-existence"), generator=SlowGenerator())
    add_vault(app)
    # executive-pay: forbidden to carol by its source's ACL (hr only); bob-notes: by an admin's override.
    app.admin.set_acl("bob-notes", ["user:bob"], [], "test", STORE)
    with on_servers(app) as served:
        yield app, served
    app.close()


@pytest.fixture(scope="module")
def stubs() -> Stubs:
    return load()


#: GraphQL operations naming a store ({store}); each must be NOT_FOUND for alice in vault as in nowhere.
GRAPHQL = {
    "vectorQuery": 'query { vectorQuery(storeId: "{store}", question: "spare key") { answer } }',
    "multiDocumentQuery": (
        'query { multiDocumentQuery(storeId: "{store}", question: "spare key", documentIds: ["bob-secret"]) '
        "{ answer } }"
    ),
    "documentQuery": (
        'query { documentQuery(storeId: "{store}", question: "spare key", documentId: "bob-secret") { answer } }'
    ),
    "summarizeDocument": 'query { summarizeDocument(storeId: "{store}", documentId: "bob-secret") { summary } }',
    "compareDocuments": (
        'query { compareDocuments(storeId: "{store}", documentIds: ["bob-secret", "other"]) { documentIds } }'
    ),
    "documents": 'query { documents(storeId: "{store}") { documentId } }',
    "store": 'query { store(storeId: "{store}") { id } }',
}


def _graphql(app: App, served: Served, document: str, user: str = "alice", admin: bool = False) -> dict[str, Any]:
    reply = httpx.post(
        served.graphql_url,
        json={"query": document},
        headers={"authorization": f"Bearer {token(app, user, admin=admin)}"},
        timeout=30,
    )
    body: dict[str, Any] = reply.json()
    return body


@pytest.mark.parametrize("operation", sorted(GRAPHQL))
def test_graphql_a_store_read_nothing_of_is_not_found_as_an_unknown_one(
    world: tuple[App, Served], operation: str
) -> None:
    app, served = world
    refusals = {}
    for store in (VAULT, NOWHERE):
        body = _graphql(app, served, GRAPHQL[operation].replace("{store}", store))
        [error] = body["errors"]
        refusals[store] = (error["extensions"]["code"], error["message"].replace(store, "<store>"))
    assert refusals[VAULT] == refusals[NOWHERE] == ("NOT_FOUND", "store '<store>' not found")


def _grpc_calls(stubs: Stubs, channel: grpc.Channel, store: str) -> dict[str, Callable[[Any], Any]]:
    query = stubs.query_grpc.QueryServiceStub(channel)
    analysis = stubs.analysis_grpc.AnalysisServiceStub(channel)
    admin = stubs.admin_grpc.AdminServiceStub(channel)
    q, a = stubs.query, stubs.analysis
    return {
        "VectorQuery": lambda m: query.VectorQuery(q.VectorQueryRequest(store_id=store, question="key"), metadata=m),
        "StreamVectorQuery": lambda m: list(
            query.StreamVectorQuery(q.VectorQueryRequest(store_id=store, question="key"), metadata=m)
        ),
        "MultiDocumentQuery": lambda m: query.MultiDocumentQuery(
            q.MultiDocumentQueryRequest(store_id=store, question="key", document_ids=["bob-secret"]), metadata=m
        ),
        "DocumentQuery": lambda m: query.DocumentQuery(
            q.DocumentQueryRequest(store_id=store, question="key", document_id="bob-secret"), metadata=m
        ),
        "SummarizeDocument": lambda m: analysis.SummarizeDocument(
            a.SummarizeDocumentRequest(store_id=store, document_id="bob-secret"), metadata=m
        ),
        "CompareDocuments": lambda m: analysis.CompareDocuments(
            a.CompareDocumentsRequest(store_id=store, document_ids=["bob-secret", "other"]), metadata=m
        ),
        "GetStoreSettings": lambda m: admin.GetStoreSettings(
            stubs.admin.GetStoreSettingsRequest(store_id=store), metadata=m
        ),
    }


GRPC = [
    "VectorQuery",
    "StreamVectorQuery",
    "MultiDocumentQuery",
    "DocumentQuery",
    "SummarizeDocument",
    "CompareDocuments",
    "GetStoreSettings",
]


@pytest.mark.parametrize("method", GRPC)
def test_grpc_a_store_read_nothing_of_is_not_found_as_an_unknown_one(
    world: tuple[App, Served], stubs: Stubs, method: str
) -> None:
    app, served = world
    refusals = {}
    with grpc.insecure_channel(served.channel_target) as channel:
        for store in (VAULT, NOWHERE):
            with pytest.raises(grpc.RpcError) as refused:
                _grpc_calls(stubs, channel, store)[method](bearer(app, "alice"))
            refusals[store] = (refused.value.code(), refused.value.details().replace(store, "<store>"))
    assert refusals[VAULT] == refusals[NOWHERE] == (grpc.StatusCode.NOT_FOUND, "store '<store>' not found")


def test_an_admin_still_sees_a_store_they_may_read_nothing_of(world: tuple[App, Served]) -> None:
    """Administration needs the store: an admin's query runs (finding nothing), its settings are shown."""
    app, served = world
    query = f'query {{ vectorQuery(storeId: "{VAULT}", question: "spare key") {{ chunks {{ documentId }} }} }}'
    body = _graphql(app, served, query, user="root", admin=True)
    assert "errors" not in body and body["data"]["vectorQuery"]["chunks"] == []
    body = _graphql(app, served, f'query {{ store(storeId: "{VAULT}") {{ id }} }}', user="root", admin=True)
    assert body["data"]["store"]["id"] == VAULT


def test_the_engine_refuses_in_the_same_words_for_every_caller_path(world: tuple[App, Served]) -> None:
    """The CLI's ``--as`` goes through the engine too: the same words, the same class."""
    from acl.errors import NotFound

    app, _ = world
    messages = []
    for store in (VAULT, NOWHERE):
        with pytest.raises(NotFound) as refused:
            app.one_shot_engine.ask(Caller("alice"), VectorQuery(store, QUESTION, perform_llm_query=False))
        messages.append(str(refused.value.message).replace(store, "<store>"))
    assert messages[0] == messages[1]
    bob = app.one_shot_engine.ask(Caller("bob"), VectorQuery(VAULT, "spare key", perform_llm_query=False))
    assert [c.document_id for c in bob.chunks] == ["bob-secret"]


# ---------------------------------------------------------------------------- statements
@contextmanager
def statements(app: App) -> Iterator[list[str]]:
    """Every SQL statement the settings database runs meanwhile."""
    seen: list[str] = []

    def on_execute(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    engine = app.repository.engine  # type: ignore[attr-defined]
    event.listen(engine, "before_cursor_execute", on_execute)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", on_execute)


def test_absent_and_forbidden_documents_cost_the_same_statements(world: tuple[App, Served]) -> None:
    """Reading the ACLs of an absent document, one forbidden by its source and one forbidden by an admin's
    override runs the same statements (an override's entries are read in the same statement)."""
    app, _ = world
    repo = app.repository
    runs = {}
    for document_id in ("absent", "executive-pay", "bob-notes"):
        with statements(app) as seen:
            acls = repo.acls(STORE, [document_id])
        runs[document_id] = seen
        assert not any(acl.permits(frozenset({"user:carol", "group:everyone"})) for acl in acls.values())
    assert len(runs["absent"]) == 1
    assert runs["absent"] == runs["executive-pay"] == runs["bob-notes"]
    assert repo.acls(STORE, ["bob-notes"])["bob-notes"].allow == {"user:bob"}  # the override, not the source


def test_a_document_query_is_not_found_at_the_same_cost_absent_or_forbidden(world: tuple[App, Served]) -> None:
    app, _ = world
    engine = app.one_shot_engine
    runs = {}
    for document_id in ("absent", "executive-pay", "bob-notes"):
        with statements(app) as seen, pytest.raises(Exception, match="not found") as refused:
            engine.ask(Caller("carol"), DocumentQuery(STORE, QUESTION, document_id, perform_llm_query=False))
        runs[document_id] = len(seen)
        assert type(refused.value).__name__ == "NotFound"
    assert runs["absent"] == runs["executive-pay"] == runs["bob-notes"], runs


def test_an_unknown_and_an_unreadable_store_cost_the_same_statements(world: tuple[App, Served]) -> None:
    app, _ = world
    runs = {}
    for store in (VAULT, NOWHERE):
        with statements(app) as seen, pytest.raises(Exception, match="not found"):
            app.one_shot_engine.ask(Caller("alice"), VectorQuery(store, QUESTION, perform_llm_query=False))
        runs[store] = len(seen)
    assert runs[VAULT] == runs[NOWHERE], runs


PREVIEW = (
    'query {{ relevancyPreview(storeId: "{store}", question: "{question}") {{ notice chunks {{ maxPassingLevel }} }} }}'
)


def test_the_relevancy_preview_tells_an_admin_who_may_read_nothing_so(world: tuple[App, Served]) -> None:
    """Not "0 of 0 pass": the admin is told that their own rights leave nothing to judge."""
    app, served = world
    nothing = _graphql(app, served, PREVIEW.format(store=VAULT, question="spare key"), user="root", admin=True)
    assert nothing["data"]["relevancyPreview"] == {
        "notice": "you can read none of this store's documents",
        "chunks": [],
    }
    readable = _graphql(app, served, PREVIEW.format(store=STORE, question=QUESTION), user="root", admin=True)
    assert readable["data"]["relevancyPreview"]["notice"] is None
    assert readable["data"]["relevancyPreview"]["chunks"]
    # bob may read the vault: a question matching nothing there is an empty preview, with no notice.
    bob = _graphql(app, served, PREVIEW.format(store=VAULT, question="zebra"), user="bob", admin=True)
    assert bob["data"]["relevancyPreview"]["notice"] is None
