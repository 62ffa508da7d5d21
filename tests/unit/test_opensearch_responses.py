"""The OpenSearch adapter reads what servers answer, and turns failures into DocQA's errors.

The answers come from two places: the real-server responses recorded in the
OpenSearch API project's k-NN test stories, and a recording wire under the
real ``opensearch-py`` client (whose answers are themselves checked against
the spec's response schemas). No socket is opened and nothing sleeps: the
adapter's backoff goes to a recorded ``sleep``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from acl.errors import ConfigurationError, InvalidArgument, NotFound
from acl.model import Acl
from indexer.errors import IndexUnavailable
from indexer.index.filters import acl_filter, documents_filter
from indexer.index.opensearch.index import ChunksRejected, OpenSearchIndex, OpenSearchOptions
from indexer.index.opensearch.mapping import (
    HnswSettings,
    IndexFacts,
    index_body,
    index_name,
    mapping_problems,
    missing_fields,
)
from indexer.index.opensearch.requests import chunk_source
from indexer.index.opensearch.responses import (
    chunk_from_source,
    cosine_from_knn_score,
    cosine_from_script_score,
    search_hits,
    server_facts,
)
from indexer.index.port import ChunkRecord, StoreSpec
from tests.contract.index_contract import chunk, random_vectors, unit
from tests.unit import opensearch_spec as spec

DIM = 8
STORE = "acme"


@pytest.fixture(scope="module", autouse=True)
def _spec_present() -> None:
    if not spec.STORIES_DIR.is_dir():
        pytest.fail(f"the OpenSearch test stories are missing at {spec.STORIES_DIR} (see opensearch_spec.py)")


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def wire() -> spec.FakeWire:
    return spec.FakeWire()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def adapter(wire: spec.FakeWire, sleeps: Sleeps, **options: Any) -> OpenSearchIndex:
    index = OpenSearchIndex(wire.client(), OpenSearchOptions(**options), sleep=sleeps)
    index.ensure(StoreSpec(STORE, DIM))
    wire.requests.clear()
    return index


def vectors(count: int, seed: int = 1) -> list[np.ndarray]:
    return [unit(v[:DIM]) for v in random_vectors(count, seed)]


def hit(record: ChunkRecord, score: float, index: str = "docqa-acme") -> dict[str, Any]:
    source = chunk_source(STORE, record, np.ones(DIM), record.ordinal + 1)
    del source["embedding"]  # searches exclude it
    return {"_index": index, "_id": record.chunk_id, "_score": score, "_source": source}


# -- the real servers' responses of the test stories ---------------------------------------------------


def _story_responses() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in spec.stories():
        story = spec.load_story(path)
        for chapter in story.get("chapters") or []:
            payload = (chapter.get("response") or {}).get("payload")
            if chapter.get("path", "").endswith("/_search") and isinstance(payload, dict) and "hits" in payload:
                found.append((Path(path).name, payload))
    return found


STORY_RESPONSES = _story_responses()


def test_the_stories_hold_knn_search_responses_with_and_without_hits() -> None:
    counts = {name: len(payload["hits"]["hits"]) for name, payload in STORY_RESPONSES}
    assert counts.get("search_k.yaml") == 1 and counts.get("search_filter.yaml") == 0


@pytest.mark.parametrize(("story", "payload"), STORY_RESPONSES, ids=[name for name, _ in STORY_RESPONSES])
def test_search_hits_reads_every_story_response(story: str, payload: dict[str, Any]) -> None:
    hits = search_hits(payload)
    assert len(hits) == len(payload["hits"]["hits"])
    for raw, parsed in zip(payload["hits"]["hits"], hits, strict=True):
        assert parsed.score == float(raw["_score"]) and parsed.source == raw["_source"]
        assert parsed.id == raw.get("_id")  # the stories record no _id; chunks are read from _source


@pytest.mark.parametrize(("story", "payload"), STORY_RESPONSES, ids=[name for name, _ in STORY_RESPONSES])
def test_the_adapter_answers_a_story_response(
    wire: spec.FakeWire, sleeps: Sleeps, story: str, payload: dict[str, Any]
) -> None:
    index = adapter(wire, sleeps)
    wire.hits = payload["hits"]["hits"]
    wire.count = len(wire.hits)
    if not wire.hits:  # a filter that matches nothing: no hit, and nothing else asked
        assert index.knn(STORE, vectors(1)[0], 1, acl_filter(["group:x"])) == []
        assert [r.operation.group for r in wire.requests] == ["search"]
        return
    # Hits of another application's index are refused plainly, not with a KeyError.
    with pytest.raises(IndexUnavailable, match="unexpected OpenSearch response"):
        index.knn(STORE, vectors(1)[0], 1, acl_filter(["group:x"]))
    # The same real hits carrying a DocQA chunk: a query identical to the chunk scores 1 in any space.
    record = chunk("a.md", 0, vectors(1)[0])
    wire.hits = [{**h, "_source": hit(record, 0.0)["_source"]} for h in payload["hits"]["hits"]]
    (found,) = index.knn(STORE, vectors(1)[0], 1, acl_filter(["group:everyone"]))
    assert found.chunk == record and found.score == pytest.approx(cosine_from_knn_score(1.0)) == 1.0


def test_malformed_responses_are_unavailable_not_key_errors() -> None:
    responses: list[Any] = [
        {},
        {"hits": []},
        {"hits": {"hits": [{"_score": 1}]}},
        {"hits": {"hits": [{"_source": {}}]}},
    ]
    for response in responses:
        with pytest.raises(IndexUnavailable, match="unexpected"):
            search_hits(response)


# -- scores ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cos", np.linspace(-1.0, 1.0, 21).tolist())
def test_scores_convert_back_to_cosine(cos: float) -> None:
    knn_score = np.float32((1.0 + cos) / 2.0)  # what the knn query returns (float32) in cosinesimil
    script_score = np.float32(1.0 + cos)  # what 1.0 + cosineSimilarity(...) returns (Painless, every version)
    assert cosine_from_knn_score(float(knn_score)) == pytest.approx(cos, abs=1e-6)
    assert cosine_from_script_score(float(script_score)) == pytest.approx(cos, abs=1e-6)


def test_scores_stay_within_cosine_range() -> None:
    assert cosine_from_knn_score(1.0000001) == 1.0 and cosine_from_knn_score(0.0) == -1.0
    assert cosine_from_script_score(2.0000002) == 1.0 and cosine_from_script_score(-0.0000001) == -1.0


def test_knn_hits_are_cosine_sorted_ties_by_chunk_id(wire: spec.FakeWire, sleeps: Sleeps) -> None:
    index = adapter(wire, sleeps)
    records = {d: chunk(d, 0, vectors(1)[0], allow=("group:x",), deny=("user:eve",)) for d in "dbca"}
    cosines = {"d": 0.5, "b": 0.9, "c": 0.5, "a": -0.25}
    wire.hits = [hit(records[d], (1 + cos) / 2) for d, cos in cosines.items()]
    found = index.knn(STORE, vectors(1)[0], 4, acl_filter(["group:x"]))
    assert [(h.chunk.chunk_id, round(h.score, 6)) for h in found] == [
        ("b#0", 0.9),
        ("c#0", 0.5),
        ("d#0", 0.5),
        ("a#0", -0.25),
    ]
    assert found[0].chunk == records["b"]  # every field round-trips; the vector is not returned
    assert found[0].chunk.acl == Acl.of(["group:x"], ["user:eve"])


def test_exact_hits_are_cosine_and_page_with_search_after(wire: spec.FakeWire, sleeps: Sleeps) -> None:
    index = adapter(wire, sleeps, page_size=2)
    records = [chunk(f"d{i}", 0, vectors(1)[0]) for i in range(5)]
    cosines = [0.1, 0.7, 0.7, -0.3, 0.95]
    wire.hits = [hit(r, 1 + c) for r, c in zip(records, cosines, strict=True)]
    found = index.exact(STORE, vectors(1)[0], 5, documents_filter([f"d{i}" for i in range(5)]))
    assert [(h.chunk.chunk_id, round(h.score, 6)) for h in found] == [
        ("d4#0", 0.95),
        ("d1#0", 0.7),
        ("d2#0", 0.7),
        ("d0#0", 0.1),
        ("d3#0", -0.3),
    ]
    searches = [r.body for r in wire.requests if r.operation.group == "search"]
    assert [b["size"] for b in searches] == [2, 2, 1]
    assert "search_after" not in searches[0] and searches[1]["search_after"] == [1.7, "d1#0"]


def test_knn_is_one_request_even_when_it_returns_fewer_than_k(wire: spec.FakeWire, sleeps: Sleeps) -> None:
    # The server switches to exact search itself when ANN finds fewer than k of more matches
    # (KNNWeight.java; shown on the k-NN fake in tests/integration/test_opensearch_knn_fake.py).
    index = adapter(wire, sleeps)
    wire.hits = [hit(chunk("a", 0, vectors(1)[0]), 1.0)]
    wire.count = 3
    assert len(index.knn(STORE, vectors(1)[0], 3, acl_filter(["group:x"]))) == 1
    assert [r.operation.group for r in wire.requests] == ["search"]


def test_whole_documents_rank_by_their_best_chunk_in_one_request(wire: spec.FakeWire, sleeps: Sleeps) -> None:
    index = adapter(wire, sleeps)
    wire.hits = [hit(chunk("a", 2, vectors(1)[0]), 1.5), hit(chunk("b", 0, vectors(1)[0]), 1.75)]
    found = index.best_per_document(STORE, vectors(1)[0], 2, documents_filter(["a", "b"]))
    assert [(h.chunk.chunk_id, round(h.score, 6)) for h in found] == [("b#0", 0.75), ("a#2", 0.5)]
    (search,) = wire.requests
    assert search.body["collapse"] == {"field": "document_id"} and search.body["size"] == 2


def test_sizes_past_the_result_window_are_refused_before_any_search(wire: spec.FakeWire, sleeps: Sleeps) -> None:
    index = adapter(wire, sleeps)
    concrete = next(iter(wire.indices))
    wire.indices[concrete]["settings"]["index"]["max_result_window"] = "50"
    index._known.clear()
    with pytest.raises(InvalidArgument, match="max_result_window of 50"):
        index.knn(STORE, vectors(1)[0], 51, None)
    with pytest.raises(InvalidArgument, match="max_result_window of 50"):
        index.best_per_document(STORE, vectors(1)[0], 60, documents_filter(["a"]))
    wire.hits = [hit(chunk(f"d{i}", 0, vectors(1)[0]), 1.5) for i in range(120)]
    assert len(index.exact(STORE, vectors(1)[0], 120, None)) == 120  # exact pages within the window
    assert {r.body["size"] for r in wire.requests if r.operation.group == "search"} == {50, 20}


@pytest.mark.parametrize("k", [0, -1, 1.5, True])
def test_k_is_checked_before_any_request(wire: spec.FakeWire, sleeps: Sleeps, k: Any) -> None:
    index = adapter(wire, sleeps)
    with pytest.raises(InvalidArgument):
        index.knn(STORE, vectors(1)[0], k, None)  # type: ignore[arg-type]
    assert wire.requests == []


# -- writes -----------------------------------------------------------------------------------------------


def test_a_rejected_chunk_names_its_document_removes_it_and_writes_the_rest(
    wire: spec.FakeWire, sleeps: Sleeps
) -> None:
    index = adapter(wire, sleeps)
    v = vectors(3)
    wire.reject = {"bad.md#1": "mapper_parsing_exception"}
    with pytest.raises(ChunksRejected) as caught:
        index.upsert(STORE, [chunk("good.md", 0, v[0]), chunk("bad.md", 0, v[1]), chunk("bad.md", 1, v[2])])
    assert caught.value.document_ids == ("bad.md",)
    assert "bad.md" in caught.value.message and "mapper_parsing_exception (400)" in caught.value.message
    assert "secret words" not in caught.value.message  # the server's reason may quote document text
    assert not [r for r in wire.requests if r.operation.group == "delete_by_query"]
    _first, cleanup = [r.body for r in wire.requests if r.operation.group == "bulk"]
    assert [next(iter(line)) for line in cleanup] == ["delete", "delete"]  # every chunk bad.md had or was to have
    assert [line["delete"]["_id"] for line in cleanup] == ["bad.md#0", "bad.md#1"]
    assert wire.stored == {"good.md#0": 1}


def test_a_bad_vector_is_refused_before_anything_is_sent(wire: spec.FakeWire, sleeps: Sleeps) -> None:
    index = adapter(wire, sleeps)
    good = chunk("a", 0, vectors(1)[0])
    bad_vectors: list[Any] = [np.ones(DIM + 1), np.zeros(DIM), None]
    for bad in bad_vectors:
        with pytest.raises(InvalidArgument):
            index.upsert(STORE, [good, dataclasses.replace(chunk("a", 1, vectors(1)[0]), vector=bad)])
    assert wire.requests == []


def test_chunks_refused_as_busy_are_sent_again_then_reported(wire: spec.FakeWire, sleeps: Sleeps) -> None:
    index = adapter(wire, sleeps, max_retries=2)
    v = vectors(3)
    wire.busy = {"a#1": 2}  # 429 twice, then accepted
    index.upsert(STORE, [chunk("a", i, v[i]) for i in range(3)])
    sent = [[meta["index"]["_id"] for meta in r.body[0::2]] for r in wire.requests if r.operation.group == "bulk"]
    assert sent == [["a#0", "a#1", "a#2"], ["a#1"], ["a#1"]] and sleeps == [0.5, 1.0]
    wire.busy = {"a#2": 5}  # busy beyond the retries
    with pytest.raises(ChunksRejected, match=r"es_rejected_execution_exception \(429\)"):
        index.upsert(STORE, [chunk("a", i, v[i]) for i in range(3)])


def test_an_incomplete_sweep_is_retried_then_unavailable(wire: spec.FakeWire, sleeps: Sleeps) -> None:
    index = adapter(wire, sleeps, max_retries=2)
    wire.by_query = {"version_conflicts": 2, "failures": [{"cause": {"type": "version_conflict_engine_exception"}}]}
    with pytest.raises(IndexUnavailable, match="version_conflict_engine_exception"):
        index.delete_document(STORE, "never-written.md")  # no first chunk: swept by query
    assert len([r for r in wire.requests if r.operation.group == "delete_by_query"]) == 3
    assert sleeps == [0.5, 1.0]


def test_an_acl_change_updates_each_chunk_by_id(wire: spec.FakeWire, sleeps: Sleeps) -> None:
    index = adapter(wire, sleeps)
    v = vectors(3)
    index.upsert(STORE, [chunk("a.md", i, v[i]) for i in range(3)])
    wire.requests.clear()
    index.set_document_acl(STORE, "a.md", Acl.of(["user:x"]))
    index.set_document_acl(STORE, "never-written.md", Acl.of(["user:x"]))  # nothing to change: one read
    assert [r.operation.group for r in wire.requests] == ["mget", "bulk", "mget"]
    updates = wire.requests[1].body
    assert [line["update"]["_id"] for line in updates[0::2]] == ["a.md#0", "a.md#1", "a.md#2"]
    assert updates[1] == {"doc": {"acl_allow": ["user:x"], "acl_deny": []}}
    wire.reject = {"a.md#1": "cluster_block_exception"}
    with pytest.raises(IndexUnavailable, match="cluster_block_exception"):
        index.set_document_acl(STORE, "a.md", Acl.of(["user:y"]))


# -- failures ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["down", "timeout", 429, 502, 503, 504, 500])
def test_transient_failures_are_retried_with_backoff(wire: spec.FakeWire, sleeps: Sleeps, fault: Any) -> None:
    index = adapter(wire, sleeps, max_retries=3, backoff_s=0.25)
    wire.faults = [fault, fault]
    wire.count = 7
    assert index.count(STORE) == 7
    assert len(wire.requests) == 3 and sleeps == [0.25, 0.5]


@pytest.mark.parametrize("fault", ["down", "timeout", 429, 503])
def test_persistent_failures_become_index_unavailable_after_bounded_retries(
    wire: spec.FakeWire, sleeps: Sleeps, fault: Any
) -> None:
    index = adapter(wire, sleeps, max_retries=3, backoff_s=1.0, max_backoff_s=3.0)
    wire.faults = [fault] * 10
    with pytest.raises(IndexUnavailable, match=r"^index unavailable: .*after 4 attempt"):
        index.knn(STORE, vectors(1)[0], 3, acl_filter(["group:x"]))
    assert len(wire.requests) == 4 and sleeps == [1.0, 2.0, 3.0]


def test_a_refused_request_is_not_retried(wire: spec.FakeWire, sleeps: Sleeps) -> None:
    index = adapter(wire, sleeps)
    wire.faults = [400]
    with pytest.raises(IndexUnavailable, match=r"refused .* \(HTTP 400 fault\)"):
        index.count(STORE)
    assert len(wire.requests) == 1 and sleeps == []


@pytest.mark.parametrize("status", [401, 403])
def test_refused_credentials_are_a_configuration_error(wire: spec.FakeWire, sleeps: Sleeps, status: int) -> None:
    index = adapter(wire, sleeps)
    wire.faults = [status]
    with pytest.raises(ConfigurationError, match=f"HTTP {status}"):
        index.count(STORE)


def test_a_missing_index_is_an_unknown_store(wire: spec.FakeWire, sleeps: Sleeps) -> None:
    index = adapter(wire, sleeps)
    for call in (
        lambda: index.count("other"),
        lambda: index.knn("other", vectors(1)[0], 1, acl_filter(["group:x"])),
        lambda: index.delete_document("other", "a"),
        lambda: index.drop("other"),
    ):
        with pytest.raises(NotFound, match="'other' does not exist"):
            call()


# -- the index mapping ------------------------------------------------------------------------------------


def facts_of(body: dict[str, Any], name: str = "docqa-acme") -> IndexFacts:
    """What GET /<alias> of an index created with ``body`` reads like (settings come back as strings)."""
    settings = {"index": {k: str(v).lower() for k, v in body["settings"]["index"].items()}}
    entry = {"aliases": {a: {} for a in body.get("aliases", {})}, "mappings": body["mappings"], "settings": settings}
    return IndexFacts.parse(name, {f"{name}.v2": entry})


def test_an_index_created_by_the_adapter_matches_its_configuration() -> None:
    hnsw = HnswSettings(engine="faiss")
    facts = facts_of(index_body(STORE, 384, hnsw, alias="docqa-acme"))
    assert (facts.dimension, facts.engine, facts.space_type, facts.store_id) == (384, "faiss", "cosinesimil", STORE)
    assert mapping_problems(facts, 384, hnsw) == []


def test_an_incompatible_index_is_described() -> None:
    facts = facts_of(index_body(STORE, 384, HnswSettings(engine="faiss"), alias="docqa-acme"))
    problems = mapping_problems(facts, 768, HnswSettings(engine="lucene"))
    assert problems == ["vector dimension is 384, expected 768", "engine is 'faiss', expected 'lucene'"]
    body = index_body(STORE, 384, HnswSettings(), alias="docqa-acme")
    body["mappings"]["properties"]["acl_allow"] = {"type": "text"}
    body["settings"]["index"]["knn"] = False
    assert mapping_problems(facts_of(body), 384, HnswSettings()) == [
        "setting index.knn is not true",
        "field 'acl_allow' is 'text', expected 'keyword'",
    ]


def test_indices_a_template_or_a_stray_write_changed_are_refused() -> None:
    body = index_body(STORE, 384, HnswSettings(), alias="docqa-acme")
    body["mappings"]["_source"] = {"excludes": ["embedding"]}  # an index template that saves disk
    assert any("k-NN#1694" in p for p in mapping_problems(facts_of(body), 384, HnswSettings()))
    body = index_body(STORE, 384, HnswSettings(), alias="docqa-acme")
    body["mappings"]["dynamic"] = "true"
    assert mapping_problems(facts_of(body), 384, HnswSettings()) == [
        "mappings.dynamic is 'true', expected 'strict' (an index template?)"
    ]
    # An index auto-created by a write answers to the store's name itself: no alias.
    body = index_body(STORE, 384, HnswSettings(), alias="docqa-acme")
    settings = {"index": {k: str(v).lower() for k, v in body["settings"]["index"].items()}}
    plain = IndexFacts.parse(
        "docqa-acme", {"docqa-acme": {"aliases": {}, "mappings": body["mappings"], "settings": settings}}
    )
    assert any("not the alias" in p for p in mapping_problems(plain, 384, HnswSettings()))


def test_an_index_from_before_pages_and_anchors_is_upgradable_not_refused() -> None:
    body = index_body(STORE, 384, HnswSettings(), alias="docqa-acme")
    del body["mappings"]["properties"]["pages"], body["mappings"]["properties"]["anchor"]
    facts = facts_of(body)
    assert mapping_problems(facts, 384, HnswSettings()) == []
    assert missing_fields(facts) == ["pages", "anchor"]
    assert missing_fields(facts_of(index_body(STORE, 384, HnswSettings(), alias="docqa-acme"))) == []
    body["mappings"]["properties"]["pages"] = {"type": "keyword"}  # there, but not what this version maps
    assert mapping_problems(facts_of(body), 384, HnswSettings()) == ["field 'pages' is 'keyword', expected 'integer'"]


def test_chunks_read_back_with_their_pages_and_anchor() -> None:
    source = chunk_source(STORE, dataclasses.replace(chunk("a.pdf", 0, vectors(1)[0]), pages=(4, 5)), vectors(1)[0], 1)
    assert chunk_from_source(source).pages == (4, 5)
    source |= {"pages": 7, "anchor": "intro"}  # a single value comes back as it was sent
    assert (chunk_from_source(source).pages, chunk_from_source(source).anchor) == ((7,), "intro")
    del source["pages"], source["anchor"]  # written before mapping version 3
    assert (chunk_from_source(source).pages, chunk_from_source(source).anchor) == ((), "")
    with pytest.raises(IndexUnavailable, match="unexpected"):
        chunk_from_source(source | {"pages": ["twelve"]})


def test_quantised_and_sharded_indices_are_described() -> None:
    body = index_body(STORE, 384, HnswSettings(), alias="docqa-acme")
    body["mappings"]["properties"]["embedding"] |= {"mode": "on_disk", "compression_level": "32x"}
    body["settings"]["index"]["number_of_shards"] = 3
    facts = facts_of(body)
    assert (facts.shards, facts.vector_mode) == (3, "mode on_disk, compression 32x")
    assert "3 shards" in facts.describe() and "on_disk" in facts.describe()


def test_ensure_refuses_an_existing_index_of_another_shape(wire: spec.FakeWire, sleeps: Sleeps) -> None:
    index = adapter(wire, sleeps)
    with pytest.raises(InvalidArgument, match=r"'docqa-acme' .*dimension is 8, expected 9"):
        index.ensure(StoreSpec(STORE, DIM + 1))
    other = OpenSearchIndex(wire.client(), OpenSearchOptions(hnsw=HnswSettings(engine="faiss")), sleep=sleeps)
    with pytest.raises(InvalidArgument, match="engine is 'lucene', expected 'faiss'"):
        other.ensure(StoreSpec(STORE, DIM))
    assert not [r for r in wire.requests if r.method == "PUT"]  # never re-created or changed


def test_index_names_are_valid_and_distinct() -> None:
    assert index_name("docqa-", "acme") == "docqa-acme"
    assert index_name("docqa-", "Acme") != index_name("docqa-", "acme")
    assert index_name("docqa-", "Acme") == index_name("docqa-", "Acme").lower()
    with pytest.raises(InvalidArgument):
        index_name("", "_x")


def test_server_facts_report_the_knn_plugin(wire: spec.FakeWire, sleeps: Sleeps) -> None:
    index = adapter(wire, sleeps)
    facts = index.server()
    assert (facts.distribution, facts.version, facts.knn_plugin) == ("opensearch", "3.1.0", True)
    assert facts.version_tuple() == (3, 1, 0)
    assert not server_facts({"version": {"number": "2.19.1"}}, [{"component": "opensearch-security"}]).knn_plugin


def test_the_wire_answers_as_the_spec_describes(wire: spec.FakeWire, sleeps: Sleeps) -> None:
    """The stand-in's answers have the shapes the spec gives real ones (so the tests above read real shapes)."""
    import json

    index = adapter(wire, sleeps)
    wire.hits = [hit(chunk("a", 0, vectors(1)[0]), 1.5)]
    answers: list[tuple[spec.Request, tuple[int, Any] | None]] = []
    index.upsert(STORE, [chunk("a", 0, vectors(1)[0])])
    for request in list(wire.requests):
        answers.append((request, wire._answer(request)))
    answers.append((spec.Request("POST", "/docqa-acme/_search", {}, {"size": 1}), None))
    answers.append((spec.Request("POST", "/docqa-acme/_count", {}, {}), None))
    answers.append((spec.Request("GET", "/", {}, None), None))
    answers.append((spec.Request("GET", "/docqa-acme", {}, None), None))
    for request, answer in answers:
        status, body = answer if answer is not None else wire._answer(request)
        schema = request.operation.response_schema(status)
        assert schema is not None, request.path
        schema.check(json.loads(json.dumps(body)))
    index.close()
