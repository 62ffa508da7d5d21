"""Step timings are shown to admins only, over every transport: they measure work done before access is decided.

The lexical step scores rows the caller cannot read, so its time (and the total, which includes it) would tell
a non-admin whether a word exists in documents hidden from them. Real gRPC and GraphQL servers on loopback;
the audit trail keeps the timings as measured, for everyone's queries.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import pytest

from acl.model import Acl
from service.api.grpc.stubs import Stubs, load
from service.bootstrap import App
from tests.integration.server_world import QUESTION, STORE, Served, SlowGenerator, build_world, on_servers, token
from tests.integration.sse import read_events

pytestmark = pytest.mark.integration

READER, ADMIN = "alice", "root"
EVERYONE = Acl.of(["group:everyone"])

VECTOR = """query($s: String!, $q: String!) { vectorQuery(storeId: $s, question: $q) { timingsMs { name ms } } }"""
SUMMARY = """query($s: String!, $d: String!) {
  summarizeDocument(storeId: $s, documentId: $d) { timingsMs { name ms } } }"""
COMPARE = """query($s: String!, $ids: [String!]!) {
  compareDocuments(storeId: $s, documentIds: $ids) { timingsMs { name ms } } }"""
STREAM = """subscription($s: String!, $q: String!) {
  askStream(storeId: $s, question: $q) { text result { timingsMs { name ms } } } }"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, Served]]:
    app = build_world(tmp_path_factory.mktemp("timings"), generator=SlowGenerator())
    app.ingestor(STORE).upsert_bytes(
        "travel", b"Paid vacation leave may be combined with travel days.", "text/plain", acl=EVERYONE
    )
    with on_servers(app) as served:
        yield app, served
    app.close()


@pytest.fixture(scope="module")
def stubs() -> Stubs:
    return load()


def _headers(app: App, user: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token(app, user, admin=user == ADMIN)}"}


def _graphql(world: tuple[App, Served], user: str) -> list[set[str]]:
    """The timing names of each GraphQL operation that answers, as ``user`` sees them."""
    app, served = world
    shown = []
    for query, variables, field in (
        (VECTOR, {"s": STORE, "q": QUESTION}, "vectorQuery"),
        (SUMMARY, {"s": STORE, "d": "handbook"}, "summarizeDocument"),
        (COMPARE, {"s": STORE, "ids": ["handbook", "travel"]}, "compareDocuments"),
    ):
        body = httpx.post(
            served.graphql_url, json={"query": query, "variables": variables}, headers=_headers(app, user), timeout=30
        ).json()
        assert "errors" not in body, body
        shown.append({t["name"] for t in body["data"][field]["timingsMs"]})
    stream = read_events(served.graphql_url, _headers(app, user), STREAM, {"s": STORE, "q": QUESTION})
    [done] = [p["data"]["askStream"]["result"] for p in stream.payloads if p["data"]["askStream"]["result"]]
    shown.append({t["name"] for t in done["timingsMs"]})
    return shown


def _grpc(world: tuple[App, Served], stubs: Stubs, user: str) -> list[set[str]]:
    """The timing names of each gRPC method that answers (streams: their last event), as ``user`` sees them."""
    app, served = world
    channel = grpc.insecure_channel(served.channel_target)
    metadata = (("authorization", _headers(app, user)["authorization"]),)
    query = stubs.query_grpc.QueryServiceStub(channel)
    analysis = stubs.analysis_grpc.AnalysisServiceStub(channel)
    asked = stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION)
    summary = stubs.analysis.SummarizeDocumentRequest(store_id=STORE, document_id="handbook")
    compare = stubs.analysis.CompareDocumentsRequest(store_id=STORE, document_ids=["handbook", "travel"])
    replies: list[Any] = [
        query.VectorQuery(asked, metadata=metadata, timeout=30),
        analysis.SummarizeDocument(summary, metadata=metadata, timeout=30),
        analysis.CompareDocuments(compare, metadata=metadata, timeout=30),
        list(query.StreamVectorQuery(asked, metadata=metadata, timeout=30))[-1].done,
        list(analysis.StreamSummarizeDocument(summary, metadata=metadata, timeout=30))[-1].done,
        list(analysis.StreamCompareDocuments(compare, metadata=metadata, timeout=30))[-1].done,
    ]
    channel.close()
    return [set(reply.timings_ms) for reply in replies]


def test_a_reader_gets_no_timings_over_graphql_and_grpc(world: tuple[App, Served], stubs: Stubs) -> None:
    assert _graphql(world, READER) == [set()] * 4
    assert _grpc(world, stubs, READER) == [set()] * 6


def test_an_admin_still_gets_every_step(world: tuple[App, Served], stubs: Stubs) -> None:
    for shown in (_graphql(world, ADMIN), _grpc(world, stubs, ADMIN)):
        assert all("total" in names for names in shown), shown
        assert "lexical" in shown[0]  # the vector query's hybrid search
    assert {"lexical", "total"} <= {t for t in _grpc(world, stubs, ADMIN)[3]}


def test_the_audit_trail_keeps_the_readers_timings(world: tuple[App, Served], stubs: Stubs) -> None:
    app, _ = world
    _grpc(world, stubs, READER)
    kept = app.repository.audit_records(READER, limit=6)
    assert len(kept) == 6 and all("total" in r.timings_ms for r in kept)
    assert any("lexical" in r.timings_ms for r in kept)
