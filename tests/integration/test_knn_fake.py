"""The fake OpenSearch (tests/fakes_opensearch) computes what the real server with the k-NN plugin computes.

Every test drives the fake through opensearch-py's ``OpenSearch`` client over HTTP on loopback (hence an
integration test: unit tests may not open sockets), and every successful answer of every test is
checked against the official REST API specification's response schema when the fixture closes the fake.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from opensearchpy import OpenSearch
from opensearchpy.exceptions import AuthenticationException, NotFoundError, RequestError, TransportError

from tests.fakes_opensearch import NOT_MODELLED, FakeOpenSearch, OpenSearchError, Request
from tests.unit import opensearch_spec as spec

Start = Callable[..., FakeOpenSearch]
COS_VECTORS = {"cos+1": [1.0, 0.0], "cos+0.5": [0.5, float(np.sqrt(3) / 2)], "cos0": [0.0, 1.0], "cos-1": [-1.0, 0.0]}
QUERY = [1.0, 0.0]


def _spec_problems(request: Request) -> list[str]:
    """Where a successful answer departs from the specification's response schema."""
    if request.response is None or not 200 <= request.status < 300:
        return []
    operation = spec.operation(request.method, request.path)
    if operation.group == "cat.plugins" and not isinstance(request.response, str):
        schema: spec.BodySchema | None = spec.response_body("cat", "cat.plugins@200", "application/json")
    else:
        schema = operation.response_schema(request.status)
    if schema is None:
        return []
    return [f"{request.method} {request.path}: {problem}" for problem in schema.errors(request.response)]


@pytest.fixture
def start() -> Iterator[Start]:
    """Starts fakes; at the end closes them and checks their answers against the API specification."""
    fakes: list[FakeOpenSearch] = []

    def start_fake(**options: Any) -> FakeOpenSearch:
        fake = FakeOpenSearch.start(**options)
        fakes.append(fake)
        return fake

    yield start_fake
    for fake in fakes:
        fake.close()
    problems = [problem for fake in fakes for request in fake.requests for problem in _spec_problems(request)]
    assert not problems, "answers that do not match the OpenSearch API specification:\n" + "\n".join(problems)


def client(fake: FakeOpenSearch, **options: Any) -> OpenSearch:
    return OpenSearch(hosts=[fake.url], max_retries=0, timeout=10, **options)


def knn_index(
    os_client: OpenSearch,
    name: str,
    *,
    engine: str = "faiss",
    dimension: int = 2,
    shards: int = 1,
    settings: dict[str, Any] | None = None,
    extra_fields: dict[str, Any] | None = None,
) -> None:
    """A store-like index: a cosine knn_vector ``embedding``, keyword ``tag``/``document_id``/``chunk_id``."""
    body = {
        "settings": {"index": {"knn": True, "number_of_shards": shards, "refresh_interval": "-1", **(settings or {})}},
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "embedding": {
                    "type": "knn_vector",
                    "dimension": dimension,
                    "method": {"name": "hnsw", "engine": engine, "space_type": "cosinesimil"},
                },
                "tag": {"type": "keyword"},
                "document_id": {"type": "keyword"},
                "chunk_id": {"type": "keyword"},
                **(extra_fields or {}),
            },
        },
    }
    os_client.indices.create(index=name, body=body)


def put(os_client: OpenSearch, index: str, docs: dict[str, dict[str, Any]], refresh: str = "true") -> dict[str, Any]:
    """One ``_bulk`` of ``index`` actions, ``_id`` -> ``_source``."""
    lines: list[dict[str, Any]] = []
    for doc_id, source in docs.items():
        lines += [{"index": {"_index": index, "_id": doc_id}}, source]
    answer: dict[str, Any] = os_client.bulk(body=lines, refresh=refresh)
    return answer


def knn_body(vector: list[float], k: int, filter_query: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    clause: dict[str, Any] = {"vector": vector, "k": k, **extra}
    if filter_query is not None:
        clause["filter"] = filter_query
    return {"size": k, "query": {"knn": {"embedding": clause}}}


def scores(answer: dict[str, Any]) -> dict[str, float]:
    return {hit["_id"]: hit["_score"] for hit in answer["hits"]["hits"]}


def knn_score_script(vector: list[float]) -> dict[str, Any]:
    params = {"field": "embedding", "query_value": vector, "space_type": "cosinesimil"}
    return {"source": "knn_score", "lang": "knn", "params": params}


def script_body(script: dict[str, Any], query: dict[str, Any] | None = None, size: int = 10) -> dict[str, Any]:
    return {"size": size, "query": {"script_score": {"query": query or {"match_all": {}}, "script": script}}}


def error_of(raised: pytest.ExceptionInfo[TransportError]) -> dict[str, Any]:
    """The answer body of a failed request."""
    info = raised.value.info
    assert isinstance(info, dict)
    return info


# ---------------------------------------------------------------------------- the server and its indices
def test_info_plugins_and_created_version_look_like_the_server(start: Start) -> None:
    fake = start(version="2.19.1")
    os_client = client(fake)
    assert os_client.info()["version"]["number"] == "2.19.1"
    assert os_client.info()["version"]["distribution"] == "opensearch"
    assert {"component": "opensearch-knn", "version": "2.19.1.0"}.items() <= os_client.cat.plugins(format="json")[
        0
    ].items()
    knn_index(os_client, "docqa-a", settings={"knn.algo_param.ef_search": 100})
    settings = os_client.indices.get(index="docqa-a")["docqa-a"]["settings"]["index"]
    # Version.java: the id 2190199 with bit 28 flipped; every value a string, "knn" both a value and a prefix.
    assert settings["version"]["created"] == str(2190199 ^ 0x08000000) == "136407927"
    assert settings["knn"] == "true"
    assert settings["knn.algo_param"] == {"ef_search": "100"}
    assert settings["number_of_shards"] == "1"
    assert {"creation_date", "uuid", "provided_name"} <= settings.keys()
    with pytest.raises(RequestError) as raised:
        knn_index(os_client, "docqa-a")
    assert raised.value.error == "resource_already_exists_exception"


def test_without_the_plugin_there_is_no_knn(start: Start) -> None:
    os_client = client(start(knn_plugin=False))
    assert os_client.cat.plugins(format="json") == []
    with pytest.raises(RequestError) as raised:
        os_client.indices.create(
            index="v", body={"mappings": {"properties": {"e": {"type": "knn_vector", "dimension": 2}}}}
        )
    assert "No handler for type [knn_vector]" in error_of(raised)["error"]["reason"]


@pytest.mark.parametrize(
    ("server", "created", "engine", "accepted"),
    [
        ("2.19.1", None, "faiss", True),
        ("2.18.0", None, "faiss", False),  # faiss gained cosinesimil in 2.19 (k-NN#2376)
        ("2.19.1", "2.18.0", "faiss", False),
        ("2.19.1", "2.17.0", "lucene", True),
        ("2.19.1", None, "nmslib", True),
        ("3.1.0", None, "nmslib", False),  # restricted from 3.0.0 (KNNEngine.NMSLIB)
    ],
)
def test_engine_and_space_rules_follow_the_creating_version(
    start: Start, server: str, created: str | None, engine: str, accepted: bool
) -> None:
    fake = start(version=server)
    mapping = {
        "type": "knn_vector",
        "dimension": 2,
        "method": {"name": "hnsw", "engine": engine, "space_type": "cosinesimil"},
    }
    body = {"settings": {"index.knn": True}, "mappings": {"properties": {"embedding": mapping}}}
    try:
        if created is None:
            client(fake).indices.create(index="v", body=body)
        else:
            fake.create_index_as_of("v", body, created_version=created)
    except (RequestError, OpenSearchError):
        assert not accepted
    else:
        assert accepted


def test_mode_and_compression_are_accepted_and_echoed_from_2_17(start: Start) -> None:
    fake = start(version="2.19.1")
    mapping = {"type": "knn_vector", "dimension": 2, "mode": "on_disk", "compression_level": "32x"}
    body = {"settings": {"index.knn": True}, "mappings": {"properties": {"embedding": mapping}}}
    client(fake).indices.create(index="disk", body=body)
    assert client(fake).indices.get_mapping(index="disk")["disk"]["mappings"]["properties"]["embedding"] == mapping
    with pytest.raises(OpenSearchError) as raised:
        fake.create_index_as_of("old-disk", body, created_version="2.16.0")
    assert "on or after version 2.17.0" in raised.value.reason


# ---------------------------------------------------------------------------- scores
def _cos_index(os_client: OpenSearch, fake: FakeOpenSearch, name: str, engine: str, created: str | None) -> None:
    mapping = {
        "type": "knn_vector",
        "dimension": 2,
        "method": {"name": "hnsw", "engine": engine, "space_type": "cosinesimil"},
    }
    body = {"settings": {"index": {"knn": True}}, "mappings": {"properties": {"embedding": mapping}}}
    if created is None:
        os_client.indices.create(index=name, body=body)
    else:
        fake.create_index_as_of(name, body, created_version=created)
    put(os_client, name, {key: {"embedding": vector} for key, vector in COS_VECTORS.items()})


@pytest.mark.parametrize(
    ("created", "engine", "expected"),
    [
        ("2.17.0", "lucene", {"cos+1": 2.0, "cos+0.5": 1.5, "cos0": 1.0, "cos-1": 0.0}),  # 1 + cos
        ("2.19.0", "faiss", {"cos+1": 1.0, "cos+0.5": 0.75, "cos0": 0.5, "cos-1": 0.0}),  # (1 + cos) / 2
        (None, "faiss", {"cos+1": 1.0, "cos+0.5": 0.75, "cos0": 0.5, "cos-1": 0.0}),  # created on 3.1.0
    ],
)
def test_knn_score_script_formula_follows_the_index_created_version(
    start: Start, created: str | None, engine: str, expected: dict[str, float]
) -> None:
    fake = start(version="3.1.0")
    os_client = client(fake)
    _cos_index(os_client, fake, "cos", engine, created)
    found = scores(os_client.search(index="cos", body=script_body(knn_score_script(QUERY))))
    assert found == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(("created", "engine"), [("2.17.0", "lucene"), ("2.19.0", "faiss"), (None, "lucene")])
def test_painless_cosine_similarity_is_the_same_on_every_version(
    start: Start, created: str | None, engine: str
) -> None:
    fake = start(version="3.1.0")
    os_client = client(fake)
    _cos_index(os_client, fake, "cos", engine, created)
    params = {"query_value": QUERY, "field": "embedding"}
    script = {"source": "1.0 + cosineSimilarity(params.query_value, doc[params.field])", "params": params}
    found = scores(os_client.search(index="cos", body=script_body(script)))
    assert found == pytest.approx({"cos+1": 2.0, "cos+0.5": 1.5, "cos0": 1.0, "cos-1": 0.0}, abs=1e-6)
    literal = {
        "source": "1.0+cosineSimilarity(params.query_value, doc['embedding'])",
        "lang": "painless",
        "params": params,
    }
    assert scores(os_client.search(index="cos", body=script_body(literal))) == pytest.approx(found)
    # Without "1.0 +" the cosine of -1 is a negative score, which Lucene refuses.
    bare = {"source": "cosineSimilarity(params.query_value, doc[params.field])", "params": params}
    with pytest.raises(RequestError) as raised:
        os_client.search(index="cos", body=script_body(bare))
    error = error_of(raised)["error"]
    assert error["type"] == "search_phase_execution_exception"
    assert "Must be a non-negative score" in error["root_cause"][0]["reason"]


@pytest.mark.parametrize(("server", "engine"), [("2.19.1", "lucene"), ("2.19.1", "faiss"), ("3.1.0", "faiss")])
def test_knn_query_scores_one_plus_cos_over_two_on_both_engines(start: Start, server: str, engine: str) -> None:
    fake = start(version=server)
    os_client = client(fake)
    _cos_index(os_client, fake, "cos", engine, None)
    found = scores(os_client.search(index="cos", body=knn_body(QUERY, 4)))
    assert found == pytest.approx({"cos+1": 1.0, "cos+0.5": 0.75, "cos0": 0.5, "cos-1": 0.0}, abs=1e-6)


def test_nmslib_knn_score_before_2_19_was_one_over_two_minus_cos(start: Start) -> None:
    os_client = client(start(version="2.18.0"))
    knn_index(os_client, "old", engine="nmslib")
    put(os_client, "old", {key: {"embedding": vector} for key, vector in COS_VECTORS.items()})
    found = scores(os_client.search(index="old", body=knn_body(QUERY, 4)))
    assert found == pytest.approx({"cos+1": 1.0, "cos+0.5": 1 / 1.5, "cos0": 0.5, "cos-1": 1 / 3}, abs=1e-6)
    with pytest.raises(RequestError) as raised:
        os_client.search(index="old", body=knn_body(QUERY, 4, {"term": {"tag": "a"}}))
    assert "does not support filters" in error_of(raised)["error"]["root_cause"][0]["reason"]


def test_scores_are_float32(start: Start) -> None:
    os_client = client(start())
    knn_index(os_client, "f32", dimension=3)
    vector = [0.1, 0.2, 0.3]
    put(os_client, "f32", {"a": {"embedding": vector}})
    score = scores(os_client.search(index="f32", body=knn_body([0.3, 0.2, 0.1], 1)))["a"]
    q, v = np.asarray([0.3, 0.2, 0.1], np.float32), np.asarray(vector, np.float32)
    cos = np.dot(q, v) / np.sqrt(np.dot(q, q) * np.dot(v, v))
    assert score == float(str(np.float32(score)))  # a float32 value, printed as the server prints it
    assert score == pytest.approx((1 + cos) / 2, abs=1e-7)


# ---------------------------------------------------------------------------- exact or approximate, per leaf
def _modes(fake: FakeOpenSearch) -> list[tuple[int, str, int | None]]:
    return [(leaf.segment, leaf.mode, leaf.filter_cardinality) for leaf in fake.knn_modes[-1]]


def test_each_leaf_chooses_exact_or_ann_by_the_knnweight_rules(start: Start) -> None:
    fake = start()
    os_client = client(fake)
    knn_index(os_client, "modes", dimension=4, settings={"knn.advanced.filtered_exact_search_threshold": 5})
    rng = np.random.default_rng(7)
    first = {f"s0-{i}": {"tag": "a" if i < 3 else "b", "embedding": rng.random(4).tolist()} for i in range(6)}
    second = {f"s1-{i}": {"tag": "a", "embedding": rng.random(4).tolist()} for i in range(10)}
    put(os_client, "modes", first)
    put(os_client, "modes", second)
    assert fake.segments("modes") == 2
    os_client.search(index="modes", body=knn_body([1, 1, 1, 1], 2, {"term": {"tag": "a"}}))
    # Segment 0: 3 filtered <= threshold 5: exact. Segment 1: 10 > 5: approximate.
    assert _modes(fake) == [(0, "exact", 3), (1, "ann", 10)]
    os_client.search(index="modes", body=knn_body([1, 1, 1, 1], 3, {"term": {"tag": "a"}}))
    assert _modes(fake)[0] == (0, "exact", 3)  # cardinality <= k
    os_client.search(index="modes", body=knn_body([1, 1, 1, 1], 2, {"term": {"tag": "b"}}))
    assert _modes(fake) == [(0, "exact", 3), (1, "no_match", 0)]
    os_client.search(index="modes", body=knn_body([1, 1, 1, 1], 2))
    assert _modes(fake) == [(0, "ann", None), (1, "ann", None)]  # no filter: never exact


def test_without_the_threshold_setting_exact_search_is_bounded_by_distance_computations(start: Start) -> None:
    fake = start()
    os_client = client(fake)
    knn_index(os_client, "wide", dimension=16_000)
    # The filter's cardinality counts live documents without the vector too: 2 vectors + 127 others = 129.
    docs: dict[str, dict[str, Any]] = {f"v{i}": {"tag": "x", "embedding": [float(i + 1)] * 16_000} for i in range(2)}
    docs.update({f"plain{i}": {"tag": "x"} for i in range(127)})
    put(os_client, "wide", docs)
    query = knn_body([1.0] * 16_000, 1, {"term": {"tag": "x"}})
    os_client.search(index="wide", body=query)
    assert _modes(fake) == [(0, "ann", 129)]  # 129 * 16000 = 2,064,000 > MAX_DISTANCE_COMPUTATIONS
    os_client.delete(index="wide", id="plain0", refresh="true")
    answer = os_client.search(index="wide", body=query)
    assert _modes(fake) == [(0, "exact", 128)]  # 128 * 16000 = 2,048,000
    assert len(answer["hits"]["hits"]) == 1


def _clustered(count: int, dimension: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, dimension)).astype(np.float32)


def _true_top(vectors: np.ndarray, ids: list[str], query: np.ndarray, k: int) -> list[str]:
    cos = vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
    return [ids[i] for i in np.argsort(-cos, kind="stable")[:k]]


def _corpus(os_client: OpenSearch, name: str, engine: str, settings: dict[str, Any]) -> tuple[list[str], np.ndarray]:
    """1000 random 32-d vectors; every 20th is tagged ``rare``, three are tagged ``three``."""
    knn_index(os_client, name, engine=engine, dimension=32, settings=settings)
    vectors = _clustered(1000, 32, seed=3)
    ids = [f"c{i:04d}" for i in range(1000)]
    tags = ["rare" if i % 20 == 0 else ("three" if i in (1, 2, 3) else "common") for i in range(1000)]
    docs = {i: {"tag": t, "embedding": v.tolist()} for i, t, v in zip(ids, tags, vectors, strict=True)}
    put(os_client, name, docs)
    return ids, vectors


@pytest.mark.parametrize("engine", ["faiss", "lucene"])
def test_knn_returns_min_k_matching_even_when_ann_misses(start: Start, engine: str) -> None:
    fake = start()
    os_client = client(fake)
    settings = {"knn.advanced.filtered_exact_search_threshold": 1} if engine == "faiss" else {}
    ids, vectors = _corpus(os_client, "recall", engine, settings)
    query = _clustered(1, 32, seed=11)[0]
    body = knn_body(query.tolist(), 10, {"term": {"tag": "rare"}}, method_parameters={"ef_search": 10})
    answer = os_client.search(index="recall", body=body)
    # The graph search found fewer than k of the 50 rare documents (faiss) or ran out of visits (lucene),
    # so the leaf fell back to exact search: the true top k.
    (leaf,) = fake.knn_modes[-1]
    assert (leaf.mode, leaf.filter_cardinality) == ("ann_then_exact", 50)
    assert [hit["_id"] for hit in answer["hits"]["hits"]] == _true_top(vectors[::20], ids[::20], query, 10)
    # Fewer matching documents than k: all of them.
    answer = os_client.search(index="recall", body=knn_body(query.tolist(), 10, {"term": {"tag": "three"}}))
    assert sorted(hit["_id"] for hit in answer["hits"]["hits"]) == ["c0001", "c0002", "c0003"]


@pytest.mark.parametrize("engine", ["faiss", "lucene"])
def test_ann_misses_true_neighbours_when_ef_search_is_small(start: Start, engine: str) -> None:
    os_client = client(start())
    ids, vectors = _corpus(os_client, "recall", engine, {})
    recall = {}
    for ef_search in (10, 100):
        found = 0
        for query in _clustered(20, 32, seed=11):
            body = knn_body(query.tolist(), 10, method_parameters={"ef_search": ef_search})
            hits = [hit["_id"] for hit in os_client.search(index="recall", body=body)["hits"]["hits"]]
            assert len(hits) == 10
            found += len(set(hits) & set(_true_top(vectors, ids, query, 10)))
        recall[ef_search] = found / 200
    assert recall[10] < 0.95 <= recall[100]


def test_disabling_the_exact_fallback_shows_the_ann_miss(start: Start) -> None:
    fake = start()
    os_client = client(fake)
    settings = {
        "knn.advanced.filtered_exact_search_threshold": 1,
        "knn.faiss.efficient_filter.disable_exact_search": True,
    }
    _corpus(os_client, "raw", "faiss", settings)
    query = _clustered(1, 32, seed=11)[0].tolist()
    body = knn_body(query, 10, {"term": {"tag": "rare"}}, method_parameters={"ef_search": 10})
    answer = os_client.search(index="raw", body=body)
    (leaf,) = fake.knn_modes[-1]
    assert (leaf.mode, leaf.filter_cardinality) == ("ann", 50)
    assert leaf.ann_hits == len(answer["hits"]["hits"]) < 10


def test_three_shards_with_one_empty(start: Start) -> None:
    fake = start()
    os_client = client(fake)
    knn_index(os_client, "sharded", shards=3)
    ids = [f"doc-{i}" for i in range(40) if zlib.crc32(f"doc-{i}".encode()) % 3 != 2][:6]
    put(os_client, "sharded", {doc_id: {"embedding": [1.0, n / 10]} for n, doc_id in enumerate(ids)})
    answer = os_client.search(index="sharded", body=knn_body(QUERY, 6))
    assert answer["_shards"] == {"total": 3, "successful": 3, "skipped": 0, "failed": 0}
    assert [hit["_id"] for hit in answer["hits"]["hits"]] == ids  # closest to [1, 0] first
    assert fake.segments("sharded") == 2
    assert sorted({leaf.shard for leaf in fake.knn_modes[-1]}) == [0, 1]
    assert os_client.count(index="sharded")["count"] == 6


# ---------------------------------------------------------------------------- refresh and segments
def test_unrefreshed_documents_are_invisible_to_search_count_and_by_query_but_not_to_gets(start: Start) -> None:
    os_client = client(start())
    knn_index(os_client, "rt")
    put(os_client, "rt", {"a": {"tag": "t", "embedding": [1, 0]}}, refresh="false")
    assert os_client.search(index="rt", body={"query": {"match_all": {}}})["hits"]["total"]["value"] == 0
    assert os_client.count(index="rt")["count"] == 0
    assert os_client.search(index="rt", body=knn_body(QUERY, 1))["hits"]["hits"] == []
    assert os_client.delete_by_query(index="rt", body={"query": {"term": {"tag": "t"}}})["deleted"] == 0
    acl = {
        "source": "ctx._source.acl_allow = params.allow; ctx._source.acl_deny = params.deny",
        "params": {"allow": ["g"], "deny": []},
    }
    assert os_client.update_by_query(index="rt", body={"query": {"match_all": {}}, "script": acl})["updated"] == 0
    assert os_client.get(index="rt", id="a")["_source"]["tag"] == "t"
    assert os_client.mget(index="rt", body={"ids": ["a", "b"]})["docs"][0]["found"] is True
    os_client.indices.refresh(index="rt")
    assert os_client.count(index="rt")["count"] == 1


def test_by_query_conflicts_with_a_write_the_refresh_has_not_seen(start: Start) -> None:
    os_client = client(start())
    knn_index(os_client, "conflict")
    put(os_client, "conflict", {"a": {"tag": "t"}, "b": {"tag": "t"}})
    put(os_client, "conflict", {"a": {"tag": "t", "document_id": "changed"}}, refresh="false")
    with pytest.raises(TransportError) as raised:
        os_client.delete_by_query(index="conflict", body={"query": {"term": {"tag": "t"}}})
    assert raised.value.status_code == 409
    assert error_of(raised)["version_conflicts"] == 1 and error_of(raised)["deleted"] == 1
    assert os_client.get(index="conflict", id="a")["_source"]["document_id"] == "changed"


def test_wait_for_blocks_until_a_refresh(start: Start) -> None:
    fake = start(refresh_interval_s=0.2)
    os_client = client(fake)
    knn_index(os_client, "ticked", settings={"refresh_interval": "1s"})
    put(os_client, "ticked", {"a": {"tag": "t"}}, refresh="wait_for")
    assert os_client.count(index="ticked")["count"] == 1  # the ticker's refresh released the write
    knn_index(os_client, "manual")  # refresh_interval -1: the ticker leaves it alone
    finished = threading.Event()

    def write() -> None:
        put(client(fake), "manual", {"b": {"tag": "t"}}, refresh="wait_for")
        finished.set()

    writer = threading.Thread(target=write)
    writer.start()
    assert not finished.wait(0.6), "wait_for answered before any refresh"
    os_client.indices.refresh(index="manual")
    assert finished.wait(5)
    writer.join()


def test_the_ticker_refreshes_buffered_writes(start: Start) -> None:
    os_client = client(start(refresh_interval_s=0.1))
    knn_index(os_client, "ticked", settings={"refresh_interval": "1s"})
    put(os_client, "ticked", {"a": {"tag": "t"}}, refresh="false")
    deadline = time.monotonic() + 5
    while os_client.count(index="ticked")["count"] == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert os_client.count(index="ticked")["count"] == 1


def test_each_refresh_with_writes_adds_one_segment_per_written_shard(start: Start) -> None:
    fake = start()
    os_client = client(fake)
    knn_index(os_client, "seg", shards=2)
    on_shard = {n: [f"d{i}" for i in range(50) if zlib.crc32(f"d{i}".encode()) % 2 == n] for n in (0, 1)}
    put(os_client, "seg", {doc_id: {"tag": "t"} for doc_id in on_shard[0][:3]}, refresh="false")
    assert fake.segments("seg") == 0
    os_client.indices.refresh(index="seg")
    assert fake.segments("seg") == 1
    os_client.indices.refresh(index="seg")
    assert fake.segments("seg") == 1  # nothing buffered, nothing new
    put(os_client, "seg", {on_shard[0][3]: {"tag": "t"}, on_shard[1][0]: {"tag": "t"}})
    assert fake.segments("seg") == 3
    # A segment whose every document is deleted is dropped (Lucene); segments_created keeps counting.
    os_client.delete(index="seg", id=on_shard[1][0], refresh="true")
    assert (fake.segments("seg"), fake.segments_created("seg")) == (2, 3)


# ---------------------------------------------------------------------------- writes
def test_a_body_over_max_content_length_is_refused_whole(start: Start) -> None:
    fake = start(max_content_length=4096)
    os_client = client(fake)
    knn_index(os_client, "small")
    docs = {f"d{i}": {"tag": "x" * 200} for i in range(30)}
    with pytest.raises(TransportError) as raised:
        put(os_client, "small", docs)
    assert raised.value.status_code == 413
    os_client.indices.refresh(index="small")
    assert os_client.count(index="small")["count"] == 0
    assert [r.status for r in fake.requests if r.path == "/_bulk"] == [413]


def test_bulk_items_answer_for_themselves(start: Start) -> None:
    os_client = client(start())
    knn_index(os_client, "items")
    lines = [
        {"index": {"_index": "items", "_id": "ok"}}, {"tag": "t", "embedding": [1, 0]},
        {"index": {"_index": "items", "_id": "stray"}}, {"tag": "t", "stray": 1},
        {"index": {"_index": "items", "_id": "short"}}, {"embedding": [1.0]},
        {"delete": {"_index": "items", "_id": "never"}},
        {"update": {"_index": "items", "_id": "never"}}, {"doc": {"tag": "u"}},
        {"create": {"_index": "items", "_id": "ok"}}, {"tag": "again"},
        {"update": {"_index": "items", "_id": "upserted"}}, {"doc": {"tag": "u"}, "doc_as_upsert": True},
    ]  # fmt: skip
    answer = os_client.bulk(body=lines)
    items = [next(iter(item.values())) for item in answer["items"]]
    assert answer["errors"] is True
    assert (items[0]["status"], items[0]["result"], items[0]["_version"]) == (201, "created", 1)
    assert items[1]["error"]["type"] == "strict_dynamic_mapping_exception"
    assert items[2]["error"]["type"] == "mapper_parsing_exception"
    assert items[2]["error"]["caused_by"]["reason"] == "Vector dimension mismatch. Expected: 2, Given: 1"
    assert (items[3]["status"], items[3]["result"], "error" in items[3]) == (404, "not_found", False)
    assert (items[4]["status"], items[4]["error"]["type"]) == (404, "document_missing_exception")
    assert (items[5]["status"], items[5]["error"]["type"]) == (409, "version_conflict_engine_exception")
    assert (items[6]["status"], items[6]["result"]) == (201, "created")
    assert [item["_seq_no"] for item in items if "_seq_no" in item] == sorted(
        item["_seq_no"] for item in items if "_seq_no" in item
    )


def test_require_alias_prevents_auto_create_and_without_it_a_write_creates_an_index(start: Start) -> None:
    fake = start()
    os_client = client(fake)
    answer = os_client.bulk(
        body=[{"index": {"_index": "docqa-typo", "_id": "a"}}, {"embedding": [1.0, 0.0]}], require_alias=True
    )
    error = answer["items"][0]["index"]["error"]
    assert (answer["items"][0]["index"]["status"], error["type"]) == (404, "index_not_found_exception")
    assert "[require_alias] request flag is [true] and [docqa-typo] is not an alias" in error["reason"]
    assert fake.auto_created == [] and not os_client.indices.exists(index="docqa-typo")
    answer = os_client.bulk(
        body=[{"index": {"_index": "docqa-typo", "_id": "a"}}, {"embedding": [1.0, 0.0]}], refresh=True
    )
    assert answer["errors"] is False and fake.auto_created == ["docqa-typo"]
    mapping = os_client.indices.get_mapping(index="docqa-typo")["docqa-typo"]["mappings"]
    assert mapping["properties"]["embedding"] == {"type": "float"}  # dynamic mapping: no vector
    with pytest.raises(RequestError) as raised:
        os_client.search(index="docqa-typo", body=knn_body(QUERY, 1))
    assert "is not knn_vector type" in error_of(raised)["error"]["root_cause"][0]["reason"]


def test_writes_through_an_alias_go_to_its_write_index(start: Start) -> None:
    os_client = client(start())
    knn_index(os_client, "docqa-v1")
    os_client.indices.update_aliases(body={"actions": [{"add": {"index": "docqa-v1", "alias": "docqa-live"}}]})
    answer = os_client.bulk(
        body=[{"index": {"_index": "docqa-live", "_id": "a"}}, {"tag": "t"}], require_alias=True, refresh=True
    )
    assert answer["items"][0]["index"]["_index"] == "docqa-v1"
    hits = os_client.search(index="docqa-live", body={"query": {"ids": {"values": ["a"]}}})["hits"]["hits"]
    assert [hit["_index"] for hit in hits] == ["docqa-v1"]
    assert os_client.indices.get_alias(name="docqa-live") == {"docqa-v1": {"aliases": {"docqa-live": {}}}}
    assert os_client.indices.get_alias(index="docqa-v1") == {"docqa-v1": {"aliases": {"docqa-live": {}}}}
    assert os_client.indices.exists(index="docqa-live") and not os_client.indices.exists(index="docqa-v2")


def test_deleting_through_an_alias_is_refused(start: Start) -> None:
    os_client = client(start())
    os_client.indices.create(index="docqa-v1", body={"aliases": {"docqa-live": {}}})
    with pytest.raises(RequestError) as raised:
        os_client.indices.delete(index="docqa-live")
    assert error_of(raised)["error"]["type"] == "illegal_argument_exception"
    assert "matches an alias, specify the corresponding concrete indices instead" in error_of(raised)["error"]["reason"]
    os_client.indices.delete(index="docqa-v1")
    with pytest.raises(NotFoundError):
        os_client.indices.get_alias(name="docqa-live")


def test_template_source_excludes_then_a_partial_update_wipes_the_vector(start: Start) -> None:
    template = {
        "index_patterns": ["docqa-*"],
        "template": {"mappings": {"_source": {"excludes": ["embedding"]}, "dynamic": "strict"}},
    }
    fake = start(templates=[template])
    os_client = client(fake)
    knn_index(
        os_client,
        "docqa-store",
        extra_fields={"title": {"type": "keyword"}, "acl_allow": {"type": "keyword"}, "acl_deny": {"type": "keyword"}},
    )
    mappings = os_client.indices.get(index="docqa-store")["docqa-store"]["mappings"]
    assert mappings["_source"] == {"excludes": ["embedding"]} and mappings["dynamic"] == "strict"
    put(os_client, "docqa-store", {"a": {"tag": "t", "embedding": [1, 0]}, "b": {"tag": "t", "embedding": [0.9, 0.1]}})
    assert sorted(scores(os_client.search(index="docqa-store", body=knn_body(QUERY, 2)))) == ["a", "b"]
    assert "embedding" not in os_client.get(index="docqa-store", id="a")["_source"]
    # A partial update re-indexes the stored _source, which has no vector (k-NN#1694) ...
    os_client.update(index="docqa-store", id="a", body={"doc": {"title": "renamed"}}, refresh=True)
    # ... and so does update_by_query, the way ACL changes are written.
    acl = {
        "source": "ctx._source.acl_allow = params.allow; ctx._source.acl_deny = params.deny",
        "params": {"allow": ["g"], "deny": []},
    }
    assert (
        os_client.update_by_query(
            index="docqa-store", body={"query": {"ids": {"values": ["b"]}}, "script": acl}, refresh=True
        )["updated"]
        == 1
    )
    assert scores(os_client.search(index="docqa-store", body=knn_body(QUERY, 2))) == {}
    assert os_client.count(index="docqa-store", body={"query": {"exists": {"field": "embedding"}}})["count"] == 0
    exact = scores(os_client.search(index="docqa-store", body=script_body(knn_score_script(QUERY))))
    assert exact == {"a": 0.0, "b": 0.0}  # knn_score gives a document without the vector 0


def test_a_template_is_merged_under_the_request(start: Start) -> None:
    template = {
        "index_patterns": ["docqa-*"],
        "template": {"settings": {"index.refresh_interval": "-1"}, "mappings": {"dynamic": "strict"}},
    }
    os_client = client(start(templates=[template]))
    os_client.indices.create(index="docqa-x", body={"mappings": {"dynamic": "false"}})
    described = os_client.indices.get(index="docqa-x")["docqa-x"]
    assert described["mappings"]["dynamic"] == "false"
    assert described["settings"]["index"]["refresh_interval"] == "-1"
    os_client.indices.create(index="other")
    assert "refresh_interval" not in os_client.indices.get(index="other")["other"]["settings"]["index"]


# ---------------------------------------------------------------------------- search options
def test_collapse_keeps_the_best_hit_per_value(start: Start) -> None:
    os_client = client(start())
    knn_index(os_client, "col")
    docs = {
        "d1-0": {"document_id": "d1", "embedding": [1.0, 0.0]},
        "d1-1": {"document_id": "d1", "embedding": [1.0, 0.5]},
        "d2-0": {"document_id": "d2", "embedding": [1.0, 0.2]},
        "d2-1": {"document_id": "d2", "embedding": [0.0, 1.0]},
        "d3-0": {"document_id": "d3", "embedding": [1.0, 1.0]},
    }
    put(os_client, "col", docs)
    body = {**script_body(knn_score_script(QUERY)), "collapse": {"field": "document_id"}}
    answer = os_client.search(index="col", body=body)
    assert [(hit["_id"], hit["fields"]) for hit in answer["hits"]["hits"]] == [
        ("d1-0", {"document_id": ["d1"]}),
        ("d2-0", {"document_id": ["d2"]}),
        ("d3-0", {"document_id": ["d3"]}),
    ]
    assert answer["hits"]["total"]["value"] == 5


def test_query_dsl_filters_sorts_and_pages(start: Start) -> None:
    os_client = client(start())
    knn_index(os_client, "dsl", shards=2, extra_fields={"rank": {"type": "integer"}})
    docs: dict[str, dict[str, Any]] = {
        "a": {"tag": ["red", "blue"], "document_id": "d1", "rank": 3},
        "b": {"tag": "red", "document_id": "d2", "rank": 1},
        "c": {"tag": "green", "document_id": "d2", "rank": 2, "embedding": [1, 0]},
        "d": {"document_id": "d3"},
    }
    put(os_client, "dsl", docs)

    def ids(query: dict[str, Any], **options: Any) -> list[str]:
        answer = os_client.search(
            index="dsl", body={"query": query, "sort": [{"document_id": "asc"}, "rank"], **options}
        )
        return [hit["_id"] for hit in answer["hits"]["hits"]]

    assert ids({"term": {"tag": "red"}}) == ["a", "b"]
    assert ids({"terms": {"tag": ["blue", "green"]}}) == ["a", "c"]
    assert ids({"ids": {"values": ["d", "b", "zz"]}}) == ["b", "d"]
    assert ids({"exists": {"field": "embedding"}}) == ["c"]
    assert ids({"bool": {"must_not": [{"exists": {"field": "tag"}}]}}) == ["d"]
    should = [{"term": {"tag": "red"}}, {"term": {"document_id": "d2"}}, {"term": {"rank": 3}}]
    assert ids({"bool": {"should": should, "minimum_should_match": 2}}) == ["a", "b"]
    assert ids({"bool": {"filter": [{"term": {"document_id": "d2"}}], "should": should}}) == ["b", "c"]
    assert ids({"match_all": {}}, sort=[{"document_id": "desc"}, {"rank": "desc"}]) == ["d", "c", "b", "a"]
    assert ids({"match_all": {}}, **{"from": 1, "size": 2}) == ["b", "c"]
    answer = os_client.search(
        index="dsl", body={"sort": ["rank"], "_source": {"excludes": ["tag"]}, "track_total_hits": 2}
    )
    assert answer["hits"]["total"] == {"value": 2, "relation": "gte"}
    assert [hit["sort"] for hit in answer["hits"]["hits"]] == [[1], [2], [3], [None]]
    assert answer["hits"]["hits"][0]["_score"] is None and "tag" not in answer["hits"]["hits"][0]["_source"]
    got = os_client.mget(index="dsl", body={"ids": ["a"]}, params={"_source_includes": "rank"})["docs"][0]
    assert got["_source"] == {"rank": 3}
    with pytest.raises(RequestError) as raised:
        os_client.search(index="dsl", body={"sort": [{"embedding": "asc"}]})
    assert error_of(raised)["error"]["type"] == "search_phase_execution_exception"


def test_from_plus_size_beyond_the_result_window_is_refused(start: Start) -> None:
    os_client = client(start())
    knn_index(os_client, "window", settings={"max_result_window": 5})
    assert os_client.search(index="window", body={"size": 5})["hits"]["hits"] == []
    with pytest.raises(RequestError) as raised:
        os_client.search(index="window", body={"from": 1, "size": 5})
    error = error_of(raised)["error"]
    assert error["type"] == "search_phase_execution_exception"
    assert error["root_cause"][0]["reason"].startswith(
        "Result window is too large, from + size must be less than or equal to: [5] but was [6]."
    )


def test_exact_pages_with_search_after(start: Start) -> None:
    os_client = client(start())
    knn_index(os_client, "pages", shards=2)
    vectors = _clustered(23, 2, seed=5)
    put(
        os_client,
        "pages",
        {f"c{i:02d}": {"chunk_id": f"c{i:02d}", "embedding": v.tolist()} for i, v in enumerate(vectors)},
    )
    body: dict[str, Any] = {
        **script_body(knn_score_script(QUERY), {"bool": {"filter": [{"exists": {"field": "chunk_id"}}]}}, size=5),
        "track_scores": True,
        "track_total_hits": False,
        "sort": [{"_score": "desc"}, {"chunk_id": "asc"}],
    }
    seen: list[str] = []
    while True:
        hits = os_client.search(index="pages", body=body)["hits"]["hits"]
        if not hits:
            break
        seen += [hit["_id"] for hit in hits]
        body["search_after"] = hits[-1]["sort"]
    del body["search_after"]
    full = os_client.search(index="pages", body={**body, "size": 100})
    assert seen == [hit["_id"] for hit in full["hits"]["hits"]] and len(seen) == 23


def test_a_shard_that_fails_is_reported_while_the_others_answer(start: Start) -> None:
    os_client = client(start())
    knn_index(os_client, "partial", shards=2)
    on_shard = {n: next(f"d{i}" for i in range(50) if zlib.crc32(f"d{i}".encode()) % 2 == n) for n in (0, 1)}
    put(os_client, "partial", {on_shard[0]: {"embedding": [1, 0]}, on_shard[1]: {"tag": "no vector"}})
    script = {
        "source": "1.0 + cosineSimilarity(params.query_value, doc[params.field])",
        "params": {"query_value": QUERY, "field": "embedding"},
    }
    answer = os_client.search(index="partial", body=script_body(script))
    assert answer["_shards"]["failed"] == 1 and answer["_shards"]["successful"] == 1
    assert answer["_shards"]["failures"][0]["reason"]["type"] == "script_exception"
    assert [hit["_id"] for hit in answer["hits"]["hits"]] == [on_shard[0]]


# ---------------------------------------------------------------------------- auth and loud failures
def test_basic_auth(start: Start) -> None:
    fake = start(basic_auth=("admin", "s3cret"))
    with pytest.raises(AuthenticationException):
        client(fake).info()
    assert client(fake, http_auth=("admin", "s3cret")).info()["version"]["number"] == "2.19.1"


@pytest.mark.parametrize(("version", "accepted"), [("3.7.0", True), ("3.6.0", False)])
def test_api_keys_from_3_7(start: Start, version: str, accepted: bool) -> None:
    fake = start(version=version, api_keys={"key-1"})
    keyed = client(fake, headers={"Authorization": "ApiKey key-1"})
    if accepted:
        assert keyed.info()["version"]["number"] == version
        with pytest.raises(AuthenticationException):
            client(fake, headers={"Authorization": "ApiKey other"}).info()
    else:
        with pytest.raises(AuthenticationException):
            keyed.info()


def test_what_the_fake_does_not_model_fails_loudly(start: Start) -> None:
    os_client = client(start())
    knn_index(os_client, "loud")
    with pytest.raises(RequestError) as raised:
        os_client.transport.perform_request("GET", "/_cluster/health")
    assert raised.value.error == NOT_MODELLED
    with pytest.raises(RequestError) as raised:
        os_client.search(index="loud", body={"query": {"match_phrase": {"tag": "x"}}})
    assert raised.value.error == NOT_MODELLED
    with pytest.raises(RequestError) as raised:
        os_client.search(index="loud", body={"query": {"no_such_query": {}}})
    assert raised.value.error == "parsing_exception"
    with pytest.raises(RequestError) as raised:
        os_client.update_by_query(index="loud", body={"script": {"source": "ctx._source.tag = 'x'"}})
    assert raised.value.error == "script_exception"
    with pytest.raises(RequestError) as raised:
        os_client.search(index="loud", body={}, params={"no_such_param": "1"})
    assert "contains unrecognized parameter: [no_such_param]" in error_of(raised)["error"]["reason"]


def test_the_same_fake_in_process_without_a_socket(start: Start) -> None:
    fake = start()
    os_client = OpenSearch(
        hosts=["http://in-process.invalid:9200"], connection_class=fake.connection_class(), max_retries=0
    )
    knn_index(os_client, "inproc")
    put(os_client, "inproc", {"a": {"embedding": [1, 0]}})
    assert scores(os_client.search(index="inproc", body=knn_body(QUERY, 1))) == {"a": 1.0}


def test_put_mapping_adds_fields_replaces_meta_and_refuses_a_type_change(start: Start) -> None:
    os_client = client(start())
    mappings = {"dynamic": "strict", "_meta": {"app": {"version": 2}}, "properties": {"tag": {"type": "keyword"}}}
    os_client.indices.create(index="docqa-v2", body={"aliases": {"docqa-live": {}}, "mappings": mappings})
    put(os_client, "docqa-live", {"old": {"tag": "t"}})
    refused = put(os_client, "docqa-live", {"new": {"tag": "t", "pages": [1, 2]}})
    assert refused["items"][0]["index"]["error"]["type"] == "strict_dynamic_mapping_exception"
    pages = {"type": "integer", "index": False, "doc_values": False}
    answer = os_client.indices.put_mapping(
        index="docqa-v2", body={"properties": {"pages": pages}, "_meta": {"app": {"version": 3}}}
    )
    assert answer == {"acknowledged": True}
    mapping = os_client.indices.get_mapping(index="docqa-live")["docqa-v2"]["mappings"]
    assert mapping["properties"] == {"tag": {"type": "keyword"}, "pages": pages}
    assert (mapping["_meta"], mapping["dynamic"]) == ({"app": {"version": 3}}, "strict")
    assert put(os_client, "docqa-live", {"new": {"tag": "t", "pages": [1, 2]}})["errors"] is False
    assert os_client.get(index="docqa-live", id="old")["_source"] == {"tag": "t"}  # written before: unchanged
    os_client.indices.put_mapping(index="docqa-v2", body={"properties": {"pages": pages}})  # the same again: fine
    with pytest.raises(RequestError) as raised:
        os_client.indices.put_mapping(index="docqa-v2", body={"properties": {"tag": {"type": "text"}}})
    assert error_of(raised)["error"]["type"] == "illegal_argument_exception"
    assert "cannot be changed from type [keyword] to [text]" in error_of(raised)["error"]["reason"]
