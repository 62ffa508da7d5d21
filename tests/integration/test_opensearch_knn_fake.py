"""The OpenSearch adapter against the k-NN fake, for every supported server, index age and engine.

``tests/fakes_opensearch`` is an HTTP server that computes what OpenSearch with
the k-NN plugin computes (both exact-score formulas by index-created version,
k per segment then merged, the exact-search switch rules, unrefreshed documents
invisible to searches and by-query operations, auto-created indices). The
shared index contract, the OpenSearch checks and a property test comparing the
adapter with the embedded index run here on each combination, so no server is
needed in CI; ``tests/contract/test_index_contract_opensearch.py`` runs the
same against a live cluster.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acl.model import Acl
from indexer.index.attributes import frozen_metadata
from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.filters import acl_filter, and_, documents_filter
from indexer.index.opensearch.client import connect
from indexer.index.opensearch.index import OpenSearchIndex, OpenSearchOptions
from indexer.index.opensearch.mapping import (
    ADDED_FIELDS,
    MAPPING_VERSION,
    HnswSettings,
    concrete_name,
    index_body,
    missing_fields,
)
from indexer.index.opensearch.requests import chunk_source, exact_body
from indexer.index.opensearch.responses import cosine_from_script_score, search_hits
from indexer.index.port import Index, StoreSpec
from tests.contract.index_contract import DIM, STORE, IndexContract, chunk, random_vectors, unit
from tests.contract.opensearch_checks import MakeIndex, OpenSearchChecks, close_all
from tests.fakes_opensearch.opensearch_knn import FakeOpenSearch

#: (server version, engine, shards): the oldest supported 2.x, a 3.x, both engines, one and three shards.
COMBINATIONS = [
    ("2.19.0", "lucene", 1),
    ("2.19.1", "faiss", 3),
    ("3.1.0", "lucene", 3),
    ("3.3.0", "faiss", 1),
]


@pytest.fixture(scope="module", params=COMBINATIONS, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}shard")
def server(request: pytest.FixtureRequest) -> Iterator[tuple[FakeOpenSearch, str, int]]:
    version, engine, shards = request.param
    with FakeOpenSearch.start(version=version, refresh_interval_s=0.2) as fake:
        yield fake, engine, shards


def _factory(fake: FakeOpenSearch, engine: Any, shards: int, prefix: str) -> tuple[MakeIndex, list[OpenSearchIndex]]:
    opened: list[OpenSearchIndex] = []

    def make(**options: Any) -> OpenSearchIndex:
        settings_: dict[str, Any] = {"refresh": "true", "backoff_s": 0.01, "shards": shards, **options}
        index = connect(
            fake.url,
            timeout_s=30.0,
            options=OpenSearchOptions(hnsw=HnswSettings(engine=engine), index_prefix=prefix, **settings_),
        )
        opened.append(index)
        return index

    return make, opened


class TestOnTheKnnFake(IndexContract, OpenSearchChecks):
    @pytest.fixture
    def make_index(self, server: tuple[FakeOpenSearch, str, int]) -> Iterator[MakeIndex]:
        fake, engine, shards = server
        prefix = f"t{uuid.uuid4().hex[:10]}-"
        make, opened = _factory(fake, engine, shards, prefix)
        yield make
        close_all(opened, prefix)

    @pytest.fixture
    def index(self, make_index: MakeIndex) -> Index:
        return make_index()


# -- findings of issue 16, shown on the fake ---------------------------------------------------------------


@pytest.fixture
def fake() -> Iterator[FakeOpenSearch]:
    with FakeOpenSearch.start(version="2.19.1", refresh_interval_s=0.2) as started:
        yield started


@pytest.mark.parametrize("created", ["2.17.0", "2.18.0", "2.19.0", "3.1.0"])
def test_exact_scores_are_cosine_whatever_version_created_the_index(created: str) -> None:
    """knn_score changed scale in 2.19 (by index-created version); the Painless cosine did not."""
    with FakeOpenSearch.start(version="3.1.0", refresh_interval_s=0.2) as fake:
        alias = "docqa-old"
        body = index_body("old", DIM, HnswSettings(), alias=alias)
        fake.create_index_as_of(concrete_name(alias), body, created_version=created)
        index = connect(fake.url, options=OpenSearchOptions(refresh="true"))
        query = unit(np.eye(DIM)[0])
        half = unit(0.5 * query + np.sqrt(0.75) * np.eye(DIM)[1])
        index.upsert("old", [chunk("half", 0, half)])
        (hit,) = index.exact("old", query, 1, None)  # type: ignore[arg-type]
        assert hit.score == pytest.approx(0.5, abs=1e-5)
        # What the old request (the plugin's knn_score script, read as 1 + cos) would have given:
        old = exact_body(query, 1, {"match_all": {}})
        old["query"]["script_score"]["script"] = {
            "source": "knn_score",
            "lang": "knn",
            "params": {"field": "embedding", "query_value": [float(x) for x in query], "space_type": "cosinesimil"},
        }
        (raw,) = search_hits(index._client.search(index=alias, body=old))
        wrong = cosine_from_script_score(raw.score)
        if created >= "2.19.0":
            assert wrong == pytest.approx((1 + 0.5) / 2 - 1, abs=1e-5)  # -0.25: a threshold of 0.3 drops it
        else:
            assert wrong == pytest.approx(0.5, abs=1e-5)
        index.close()


def test_knn_returns_k_when_approximate_search_misses_so_no_client_fallback(fake: FakeOpenSearch) -> None:
    index = connect(fake.url, options=OpenSearchOptions(refresh="true", hnsw=HnswSettings(ef_search=10)))
    index.ensure(StoreSpec(STORE, 64))
    rng = np.random.default_rng(5)
    vectors = [unit(v) for v in rng.normal(size=(40_000 // 64 * 2, 64))]
    chunks = [
        chunk(f"d{i}", 0, v, allow=("group:few",) if i % 3 == 0 else ("group:all",)) for i, v in enumerate(vectors)
    ]
    for start in range(0, len(chunks), 400):
        index.upsert(STORE, chunks[start : start + 400])
    few = acl_filter(["group:few"])
    matching = index.count(STORE, few)
    before = len(fake.requests)
    hits = index.knn(STORE, unit(rng.normal(size=64)), 50, few)
    assert len(hits) == min(50, matching)
    sent = [r for r in fake.requests[before:] if r.path.endswith("/_search")]
    assert len(sent) == 1 and not [r for r in fake.requests[before:] if r.path.endswith("/_count")]
    modes = {leaf.mode for leaf in fake.knn_modes[-1]}
    assert modes & {"ann", "ann_then_exact"}, modes  # the graph was searched, not only exact scans
    index.close()


def test_the_ingest_path_makes_a_segment_per_run_not_per_document() -> None:
    # The server's own refresh is far away here, so every segment is one the adapter asked for.
    with FakeOpenSearch.start(version="2.19.1", refresh_interval_s=600) as fake:
        _one_segment_per_run(fake)


def _one_segment_per_run(fake: FakeOpenSearch) -> None:
    index = connect(fake.url, options=OpenSearchOptions())  # refresh: false, as configured by default
    index.ensure(StoreSpec(STORE, DIM))
    vectors = random_vectors(30, seed=41)
    before = len(fake.requests)
    for i in range(30):
        index.upsert(STORE, [chunk(f"doc{i}", 0, vectors[i])])
    index.refresh(STORE)
    sent = fake.requests[before:]
    assert not [r for r in sent if r.params.get("refresh") in ("true", "wait_for")]
    assert not [r for r in sent if "_by_query" in r.path]
    assert fake.segments_created(concrete_name(index.index_name(STORE))) == 1  # the run's one refresh
    assert index.count(STORE) == 30
    index.close()


def test_a_bulk_over_the_servers_limit_is_split_not_refused() -> None:
    with FakeOpenSearch.start(version="2.19.1", max_content_length=60_000, refresh_interval_s=0.2) as small:
        index = connect(small.url, options=OpenSearchOptions(refresh="true", bulk_max_bytes=50_000))
        index.ensure(StoreSpec(STORE, DIM))
        index.upsert(STORE, [chunk(f"d{i}", 0, np.ones(DIM), text="word " * 400) for i in range(60)])
        assert index.count(STORE) == 60
        assert all(r.status != 413 for r in small.requests)
        index.close()


def test_an_index_template_that_strips_the_vector_from_source_is_refused() -> None:
    template = {"index_patterns": ["docqa-*"], "template": {"mappings": {"_source": {"excludes": ["embedding"]}}}}
    with FakeOpenSearch.start(version="3.1.0", templates=[template], refresh_interval_s=0.2) as fake:
        index = connect(fake.url, options=OpenSearchOptions(refresh="true"))
        with pytest.raises(Exception, match="k-NN#1694"):
            index.ensure(StoreSpec(STORE, DIM))
        # Nothing is left behind: the next try after fixing the template starts clean.
        assert index._client.indices.get(index="docqa-*") == {}
        index.close()


# -- property: the OpenSearch adapter on the fake answers as the embedded index does -------------------------

PRINCIPALS = ["user:alice", "user:bob", "group:x", "group:y", "group:everyone"]


@st.composite
def corpora(draw: st.DrawFn) -> tuple[list[Any], list[str], list[str], int]:
    documents = draw(st.integers(1, 12))
    chunks = []
    seed = draw(st.integers(0, 10_000))
    vectors = random_vectors(documents * 4, seed=seed)
    position = 0
    for d in range(documents):
        count = draw(st.integers(1, 4))
        allow = tuple(draw(st.lists(st.sampled_from(PRINCIPALS), max_size=2, unique=True)))
        deny = tuple(draw(st.lists(st.sampled_from(PRINCIPALS[:3]), max_size=1, unique=True)))
        for ordinal in range(count):
            chunks.append(chunk(f"doc{d}", ordinal, vectors[position], allow=allow, deny=deny))
            position += 1
    principals = draw(st.lists(st.sampled_from(PRINCIPALS), max_size=3, unique=True))
    chosen = draw(st.lists(st.sampled_from([f"doc{d}" for d in range(documents)]), max_size=4, unique=True))
    return chunks, principals, chosen, draw(st.integers(1, 12))


@pytest.fixture(scope="module")
def pair(server: tuple[FakeOpenSearch, str, int], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    fake, engine, shards = server
    make, opened = _factory(fake, engine, shards, f"p{uuid.uuid4().hex[:8]}-")
    yield make(refresh="false"), EmbeddedIndex(Path(tmp_path_factory.mktemp("embedded")))
    for index in opened:
        index.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=corpora())
def test_the_adapter_on_the_fake_agrees_with_the_embedded_index(pair: Any, case: Any) -> None:
    opensearch, embedded = pair
    chunks, principals, chosen, k = case
    for index in (opensearch, embedded):
        with contextlib.suppress(Exception):
            index.drop(STORE)
        index.ensure(StoreSpec(STORE, DIM))
        index.upsert(STORE, chunks)
        # A re-permissioned document, written just before: no refresh in between.
        index.set_document_acl(STORE, chunks[0].document_id, Acl.of(["group:y"]))
        index.refresh(STORE)
    query = random_vectors(1, seed=len(chunks))[0]
    readable = acl_filter(principals)
    filters = [readable, and_(readable, documents_filter(chosen or ["none"]))]
    for filter_ in filters:
        assert opensearch.count(STORE, filter_) == embedded.count(STORE, filter_)
        for search in ("exact", "knn"):
            ours = getattr(opensearch, search)(STORE, query, k, filter_)
            theirs = getattr(embedded, search)(STORE, query, k, filter_)
            assert [h.chunk.chunk_id for h in ours] == [h.chunk.chunk_id for h in theirs], search
            assert [h.score for h in ours] == pytest.approx([h.score for h in theirs], abs=1e-5)
            assert all(h.chunk.acl == t.chunk.acl for h, t in zip(ours, theirs, strict=True))
        best = opensearch.best_per_document(STORE, query, k, filter_)
        expected = embedded.best_per_document(STORE, query, k, filter_)
        assert [h.chunk.chunk_id for h in best] == [h.chunk.chunk_id for h in expected]


#: Fields each older mapping version lacks.
_LACKS = {2: ADDED_FIELDS, 3: ADDED_FIELDS[2:]}


@pytest.mark.parametrize("version", [2, 3])
def test_an_older_index_keeps_serving_and_gains_the_new_fields(fake: FakeOpenSearch, version: int) -> None:
    """Mapping version 2 (before issue 17: no pages, anchors) and 3 (before metadata filters): searchable as they
    are; ``ensure`` adds the missing fields in place, and new chunks carry them and are filtered on them."""
    alias = "docqa-old"
    body = index_body("old", DIM, HnswSettings(), alias=alias)
    for name in _LACKS[version]:
        del body["mappings"]["properties"][name]
    body["mappings"]["_meta"]["docqa"]["mapping_version"] = version
    fake.create_index_as_of(f"{alias}.v{version}", body, created_version="2.19.1")
    index = connect(fake.url, options=OpenSearchOptions(refresh="true"))
    old, new = unit(np.eye(DIM)[0]), unit(np.eye(DIM)[1])
    source = chunk_source("old", chunk("a.md", 0, old), old, 1)
    for name in _LACKS[version]:
        del source[name]
    index._client.index(index=alias, id="a.md#0", body=source, refresh=True)
    (hit,) = index.knn("old", old, 1, acl_filter(["group:everyone"]))
    assert (hit.chunk.chunk_id, hit.chunk.pages, hit.chunk.anchor) == ("a.md#0", (), "")
    assert (hit.chunk.content_type, hit.chunk.modified, dict(hit.chunk.metadata)) == ("", None, {})
    index.ensure(StoreSpec("old", DIM))
    facts, problems = index.check_store("old", DIM)
    assert (problems, missing_fields(facts), facts.concrete) == ([], [], f"{alias}.v{version}")
    written = dataclasses.replace(
        chunk("b.pdf", 0, new),
        pages=(3, 4),
        anchor="rates",
        content_type="application/pdf",
        modified=datetime(2024, 5, 1, tzinfo=UTC),
        indexed_at=datetime(2024, 6, 1, 12, 0, 0, 123000, tzinfo=UTC),
        metadata=frozen_metadata({"dept": "hr"}),
    )
    index.upsert("old", [written])
    (hit,) = index.exact("old", new, 1, documents_filter(["b.pdf"]))
    assert hit.chunk == written
    dept = {"field": "metadata.dept", "operator": "==", "value": "hr"}
    since = {"field": "modified", "operator": ">=", "value": "2024-05-01"}
    assert [h.chunk.chunk_id for h in index.exact("old", new, 5, and_(dept, since))] == ["b.pdf#0"]
    meta = index._client.indices.get_mapping(index=alias)[f"{alias}.v{version}"]["mappings"]["_meta"]
    assert meta == {"docqa": {"store_id": "old", "dimension": DIM, "mapping_version": MAPPING_VERSION}}
    index.close()
