"""Sources grouped per document, with pages, anchors and links, over GraphQL and gRPC (unary and streamed).

The world: a PDF indexed from a folder (``file:`` URI, pages), an HTML page pushed with its web address
(anchors) that only group hr may read, and the store's ``source_base_url`` switched on and off.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf.json_format import MessageToDict

from acl.model import Acl
from indexer.documents import DocumentRecord
from indexer.index import ChunkRecord, Index
from service.api.grpc.stubs import Stubs, load
from service.bootstrap import build_app
from service.domain.store import Store
from service.persistence.sql_settings import SqlSettingsRepository
from tests.fakes import FakeIndex
from tests.fakes_service import FakeEmbedder
from tests.integration.server_world import STORE, Served, SlowGenerator, bearer, on_servers, settings_for, token

BASE = "https://intranet.example/docs"
QUESTION = "How many vacation days may be carried over?"
PDF = ("manual.pdf", ["Vacation days may be carried over until March.", "Carried over vacation days expire."])
HTML = ("plans/secret.html", ["The vacation days carried over by executives are unlimited.", "Other plans."])
GROUPS = """query($s: String!, $q: String!) { vectorQuery(storeId: $s, question: $q, level: 0.0) {
  chunks { documentId chunkId pages anchor link sourceUri }
  documents { documentId title sourceUri link bestScore bestRelevance pages
              chunks { chunkId pages anchor link relevance } }
} }"""


class BaseUrlRepository(SqlSettingsRepository):
    """The settings database, with the store's ``source_base_url`` set here (its column comes with the
    store-settings migration; this test is about what the interfaces show)."""

    base_url: str | None = None

    def get_store(self, store_id: str) -> Store | None:
        store = super().get_store(store_id)
        return None if store is None else replace(store, source_base_url=self.base_url)

    def store_for_reader(self, store_id: str, principals: frozenset[str]) -> Store | None:
        store = super().store_for_reader(store_id, principals)
        return None if store is None else replace(store, source_base_url=self.base_url)


def _add(index: Index, repository: SqlSettingsRepository, document_id: str, texts: list[str], **how: Any) -> None:
    """One document's chunks as the indexer stores a PDF (a page per chunk) or an HTML page (an anchor each)."""
    acl, uri = how["acl"], how["uri"]
    vectors = FakeEmbedder().embed_documents(texts)
    index.upsert(
        STORE,
        [
            ChunkRecord(
                chunk_id=f"{document_id}#{i}",
                document_id=document_id,
                ordinal=i,
                text=text,
                title=document_id.title(),
                source_uri=uri,
                heading_path=(),
                start=0,
                end=len(text),
                acl=acl,
                pages=(i + 3, i + 4) if how.get("pdf") else (),
                anchor="" if how.get("pdf") else f"part-{i}",
                vector=vectors[i],
            )
            for i, text in enumerate(texts)
        ],
    )
    repository.save_document(DocumentRecord(STORE, document_id, document_id.title(), uri, "h", "\n".join(texts), acl))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BaseUrlRepository, Served]]:
    data = tmp_path_factory.mktemp("groups")
    settings = settings_for(data)
    repository = BaseUrlRepository.from_url(settings.database_url)
    assert isinstance(repository, BaseUrlRepository)
    index = FakeIndex()
    app = build_app(
        settings,
        repository=repository,
        index=index,
        generator=SlowGenerator(),
        embedder_factory=lambda _: FakeEmbedder(),
    )
    app.ingestor(STORE)  # creates the store (and its index) as a first run does
    _add(index, repository, *PDF, acl=Acl.of(["group:everyone"]), uri="file:///srv/docs/manual.pdf", pdf=True)
    _add(index, repository, *HTML, acl=Acl.of(["group:hr"]), uri="https://cms.example/plans/secret")
    app.admin_without_index().add_member("group:hr", "user:alice", "test")
    with on_servers(app) as served:
        yield repository, served
    app.close()


@pytest.fixture(scope="module")
def stubs() -> Stubs:
    return load()


def _graphql(served: Served, user: str) -> dict[str, Any]:
    reply = httpx.post(
        served.graphql_url,
        json={"query": GROUPS, "variables": {"s": STORE, "q": QUESTION}},
        headers={"authorization": f"Bearer {token(served.services.app, user)}"},
        timeout=10,
    )
    assert reply.status_code == 200 and "errors" not in reply.json(), reply.text
    result: dict[str, Any] = reply.json()["data"]["vectorQuery"]
    return result


def _grpc(served: Served, stubs: Stubs, user: str) -> tuple[Any, list[Any]]:
    with grpc.insecure_channel(served.channel_target) as channel:
        service = stubs.query_grpc.QueryServiceStub(channel)
        request = stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION, level=0.0)
        meta = bearer(served.services.app, user)
        return service.VectorQuery(request, metadata=meta, timeout=10), list(
            service.StreamVectorQuery(request, metadata=meta, timeout=10)
        )


def _check_groups(documents: list[dict[str, Any]], chunks: list[dict[str, Any]]) -> None:
    """Groups in the order of each document's first chunk, each holding its chunks in rank order."""
    assert [d["documentId"] for d in documents] == list(dict.fromkeys(c["documentId"] for c in chunks))
    for document in documents:
        mine = [c["chunkId"] for c in chunks if c["documentId"] == document["documentId"]]
        assert [c["chunkId"] for c in document["chunks"]] == mine
        assert document["bestRelevance"] == max(c["relevance"] for c in document["chunks"])


def test_graphql_groups_with_links_under_the_base_url(world: Any) -> None:
    repository, served = world
    repository.base_url = BASE
    alice = _graphql(served, "alice")
    _check_groups(alice["documents"], alice["chunks"])
    documents = {d["documentId"]: d for d in alice["documents"]}
    assert set(documents) == {"manual.pdf", "plans/secret.html"}
    pdf, html = documents["manual.pdf"], documents["plans/secret.html"]
    assert pdf["link"] == f"{BASE}/manual.pdf" and pdf["pages"] == [3, 4, 5] and pdf["sourceUri"] == ""
    assert {c["chunkId"]: (c["pages"], c["link"]) for c in pdf["chunks"]} == {
        "manual.pdf#0": ([3, 4], f"{BASE}/manual.pdf#page=3"),
        "manual.pdf#1": ([4, 5], f"{BASE}/manual.pdf#page=4"),
    }
    assert html["link"] == f"{BASE}/plans/secret.html" and html["sourceUri"] == "https://cms.example/plans/secret"
    assert {c["anchor"] for c in html["chunks"]} == {"part-0", "part-1"}
    assert all(c["link"] == f"{BASE}/plans/secret.html#{c['anchor']}" for c in html["chunks"])


def test_without_a_base_url_remote_callers_get_web_links_only(world: Any, stubs: Stubs) -> None:
    repository, served = world
    repository.base_url = None
    alice = _graphql(served, "alice")
    documents = {d["documentId"]: d for d in alice["documents"]}
    # A path of the indexing host is neither shown nor linked to a remote caller.
    assert documents["manual.pdf"]["link"] is None and documents["manual.pdf"]["sourceUri"] == ""
    assert all(c["link"] is None for c in documents["manual.pdf"]["chunks"])
    assert documents["plans/secret.html"]["link"] == "https://cms.example/plans/secret"
    assert {c["link"] for c in documents["plans/secret.html"]["chunks"]} == {
        "https://cms.example/plans/secret#part-0",
        "https://cms.example/plans/secret#part-1",
    }
    unary, _ = _grpc(served, stubs, "alice")
    assert "file:" not in str(unary) and "/srv/docs" not in str(unary)
    by_id = {d.document_id: d for d in unary.documents}
    assert not by_id["manual.pdf"].HasField("link") and by_id["plans/secret.html"].link.startswith("https://cms.")


def test_grpc_unary_and_stream_send_the_groups(world: Any, stubs: Stubs) -> None:
    repository, served = world
    repository.base_url = BASE
    unary, events = _grpc(served, stubs, "alice")
    as_dict = MessageToDict(unary, preserving_proto_field_name=False)
    _check_groups(as_dict["documents"], as_dict["chunks"])
    pdf = next(d for d in unary.documents if d.document_id == "manual.pdf")
    assert pdf.link == f"{BASE}/manual.pdf" and list(pdf.pages) == [3, 4, 5]
    assert pdf.HasField("best_score") and pdf.best_relevance == max(c.relevance for c in pdf.chunks)
    assert [c.link for c in pdf.chunks] == [f"{BASE}/manual.pdf#page=3", f"{BASE}/manual.pdf#page=4"]
    kinds = [e.WhichOneof("event") for e in events]
    first_source, first_document = kinds.index("source"), kinds.index("document")
    assert set(kinds[:first_source]) == {"text"} and set(kinds[first_source:first_document]) == {"source"}
    assert set(kinds[first_document:-1]) == {"document"} and kinds[-1] == "done"
    done = events[-1].done
    assert [e.document for e in events if e.WhichOneof("event") == "document"] == list(done.documents)
    assert [d.document_id for d in done.documents] == [d.document_id for d in unary.documents]


def test_an_unreadable_document_is_in_no_group_of_any_interface(world: Any, stubs: Stubs) -> None:
    repository, served = world
    for base in (BASE, None):
        repository.base_url = base
        bob = _graphql(served, "bob")
        assert [d["documentId"] for d in bob["documents"]] == ["manual.pdf"]
        unary, events = _grpc(served, stubs, "bob")
        assert [d.document_id for d in unary.documents] == ["manual.pdf"]
        everything = json.dumps(bob) + str(unary) + "".join(str(e) for e in events)
        assert "secret" not in everything and "executives" not in everything
