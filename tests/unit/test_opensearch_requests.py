"""Every request the OpenSearch adapter sends is valid against the official OpenSearch API specification.

Two layers. The body builders are checked one by one against the strict
schemas (``opensearch_spec``), with negative controls that prove a typo such
as ``filters`` for ``filter`` fails. Then the adapter runs every operation
through the real ``opensearch-py`` client and bulk helper over a recording
wire (no socket), and each request it actually sent — path, method, query
parameters and body — is checked against the spec's operation for it.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from opensearchpy.helpers import expand_action

from acl.model import Acl
from indexer.index.filters import acl_filter, and_, documents_filter
from indexer.index.opensearch.filters import to_query
from indexer.index.opensearch.index import ChunksRejected, OpenSearchIndex, OpenSearchOptions
from indexer.index.opensearch.mapping import (
    ADDED_FIELDS,
    FIELDS,
    MAPPING_VERSION,
    VECTOR_FIELD,
    HnswSettings,
    index_body,
)
from indexer.index.opensearch.requests import (
    EXACT_SCRIPT,
    acl_actions,
    best_per_document_body,
    bulk_actions,
    chunk_source,
    count_body,
    delete_actions,
    delete_document_body,
    document_id_of_chunk,
    exact_body,
    heads_body,
    knn_body,
    lexical_body,
)
from indexer.index.port import StoreSpec
from tests.contract.index_contract import FILTER_CASES, chunk, random_vectors, unit
from tests.contract.metadata_contract import METADATA_CASES
from tests.unit import opensearch_spec as spec

DIM = 8
SEARCH = spec.request_body("_core", "search")
COUNT = spec.request_body("_core", "count")
DELETE_BY_QUERY = spec.request_body("_core", "delete_by_query")
MGET = spec.request_body("_core", "mget")
CREATE_INDEX = spec.request_body("indices", "indices.create")
BULK = spec.request_body("_core", "bulk", "application/x-ndjson")
BULK_ACTION = spec.component("_core.bulk", "OperationContainer")
QUERY = spec.component("_common.query_dsl", "QueryContainer")

NOT_IN = {"field": "acl_deny", "operator": "not in", "value": ["user:x"]}
FILTERS = [
    None,
    acl_filter(["user:alice", "group:x"]),
    acl_filter([]),
    and_(acl_filter(["group:x"]), documents_filter(["a.md", "b/c.md"])),
    *[case for case, _ in FILTER_CASES],
    *[case for case, _ in METADATA_CASES],
    and_(acl_filter(["group:x"]), *[case for case, _ in METADATA_CASES[:20]]),
]


@pytest.fixture(scope="module", autouse=True)
def _spec_present() -> None:
    if not spec.SPEC_DIR.is_dir():
        pytest.fail(f"the OpenSearch API specification is missing at {spec.SPEC_DIR} (see opensearch_spec.py)")


def vector() -> np.ndarray:
    return unit(np.arange(DIM) + 1.0)


# -- the builders, one by one ------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["faiss", "lucene"])
def test_index_creation_body_matches_the_spec(engine: Any) -> None:
    body = index_body(
        "acme", 384, HnswSettings(engine=engine, m=24, ef_construction=256, ef_search=120), alias="docqa-acme"
    )
    CREATE_INDEX.check(body)
    assert body["aliases"] == {"docqa-acme": {"is_write_index": True}}  # created with its alias, in one step
    vector_field = body["mappings"]["properties"][VECTOR_FIELD]
    assert vector_field["dimension"] == 384
    assert vector_field["method"] == {
        "name": "hnsw",
        "space_type": "cosinesimil",
        "engine": engine,
        "parameters": {"m": 24, "ef_construction": 256},
    }
    assert body["settings"]["index"] == {"knn": True, "knn.algo_param.ef_search": 120}
    for field in ("store_id", "document_id", "chunk_id", "acl_allow", "acl_deny"):
        assert body["mappings"]["properties"][field] == {"type": "keyword"}
    assert body["mappings"]["properties"]["text"] == {"type": "text"}


@pytest.mark.parametrize("filter_", FILTERS, ids=range(len(FILTERS)))
def test_filter_translation_is_a_valid_query(filter_: Any) -> None:
    QUERY.check(to_query(filter_))


@pytest.mark.parametrize("filter_", FILTERS, ids=range(len(FILTERS)))
def test_knn_query_with_the_filter_inside_matches_the_spec(filter_: Any) -> None:
    body = knn_body(vector(), 7, None if filter_ is None else to_query(filter_), ef_search=100)
    SEARCH.check(body)
    clause = body["query"]["knn"][VECTOR_FIELD]
    assert body["size"] == clause["k"] == 7
    assert ("filter" in clause) == (filter_ is not None)  # efficient filtering: inside the knn query
    assert clause["method_parameters"] == {"ef_search": 100}
    assert knn_body(vector(), 500, None, ef_search=100)["query"]["knn"][VECTOR_FIELD]["method_parameters"] == {
        "ef_search": 500
    }


@pytest.mark.parametrize("filter_", FILTERS, ids=range(len(FILTERS)))
def test_exact_script_score_query_matches_the_spec(filter_: Any) -> None:
    body = exact_body(vector(), 5, to_query(filter_))
    SEARCH.check(body)
    SEARCH.check(exact_body(vector(), 5, to_query(filter_), search_after=[1.5, "a#0"]))
    script = body["query"]["script_score"]["script"]
    # The spec leaves script params free-form, so the script is pinned here: the k-NN plugin's Painless
    # cosine, the same scale on every version (never the knn_score script, whose scale changed in 2.19).
    assert {k: script[k] for k in ("source", "lang")} == EXACT_SCRIPT
    assert EXACT_SCRIPT == {
        "source": "1.0 + cosineSimilarity(params.query_value, doc[params.field])",
        "lang": "painless",
    }
    assert script["params"]["field"] == VECTOR_FIELD and set(script["params"]) == {"field", "query_value"}
    assert body["query"]["script_score"]["query"] == {"bool": {"filter": [to_query(filter_)]}}


@pytest.mark.parametrize("filter_", FILTERS, ids=range(len(FILTERS)))
def test_best_chunk_per_document_is_one_collapsed_exact_search(filter_: Any) -> None:
    body = best_per_document_body(vector(), 40, to_query(filter_))
    SEARCH.check(body)
    assert body["collapse"] == {"field": "document_id"} and body["size"] == 40
    assert body["query"] == exact_body(vector(), 40, to_query(filter_))["query"]


@pytest.mark.parametrize("filter_", FILTERS, ids=range(len(FILTERS)))
def test_lexical_search_is_a_bm25_match_with_the_filter_inside(filter_: Any) -> None:
    body = lexical_body("vacation days carried", 9, to_query(filter_))
    SEARCH.check(body)
    assert body["query"] == {
        "bool": {
            "must": [{"match": {"text": {"query": "vacation days carried", "operator": "or"}}}],
            "filter": [to_query(filter_)],
        }
    }
    assert body["size"] == 9 and body["sort"] == [{"_score": "desc"}, {"chunk_id": "asc"}]
    assert "_source" not in body  # the whole source, vector included: the caller computes the cosine


def test_lexical_search_sends_words_only_and_nothing_for_none(wire: spec.FakeWire) -> None:
    index = _adapter(wire)
    index.ensure(StoreSpec("acme", DIM))
    before = len(wire.requests)
    for junk in ("", "?!", "the of and", '"*" ()'):
        assert index.lexical("acme", junk, 5, acl_filter(["group:x"])) == []
    assert len(wire.requests) == before  # no word, no request
    index.lexical("acme", 'Vacation "days" OR text:carried* NEAR(x)', 5, acl_filter(["group:x"]))
    (sent,) = wire.requests[before:]
    assert sent.params.get("search_type") == "dfs_query_then_fetch"
    match = sent.body["query"]["bool"]["must"][0]["match"]["text"]
    assert match["query"] == "vacation days text carried near x"
    _check_sent(wire)


def test_vectors_travel_as_float32_text() -> None:
    import json

    v = unit(np.random.default_rng(1).normal(size=384).astype(np.float32))
    body = knn_body(v, 5, None, ef_search=100)
    sent = body["query"]["knn"][VECTOR_FIELD]["vector"]
    assert np.array_equal(np.asarray(sent, dtype=np.float32), v)  # exactly the float32 vector back
    as_doubles = json.dumps([float(x) for x in v])
    assert len(json.dumps(sent)) < 0.7 * len(as_doubles)


def test_count_mget_and_delete_by_query_bodies_match_the_spec() -> None:
    COUNT.check(count_body(to_query(acl_filter(["group:x"]))))
    COUNT.check(count_body(to_query(None)))
    DELETE_BY_QUERY.check(delete_document_body("handbook/vacation.md"))
    MGET.check(heads_body(["a.md#0", "b.md#0"]))
    for action in [
        *delete_actions("docqa-acme", ["a.md#3"]),
        *acl_actions("docqa-acme", ["a.md#0"], Acl.of(["user:x"])),
    ]:
        meta, _source = expand_action(action)
        BULK_ACTION.check(meta)
    (update,) = acl_actions("docqa-acme", ["a.md#0"], Acl.of(["group:x", "user:bob"], ["user:eve"]))
    assert update["doc"] == {"acl_allow": ["group:x", "user:bob"], "acl_deny": ["user:eve"]}


def test_bulk_lines_match_the_spec_and_the_mapping() -> None:
    chunks = [
        chunk("handbook/a b#c.md", i, v, allow=("group:x",), deny=("user:e",))
        for i, v in enumerate(random_vectors(3, 1))
    ]
    counts = {"handbook/a b#c.md": 3}
    actions = bulk_actions("docqa-acme", "acme", chunks, [c.vector for c in chunks], counts, ["handbook/a b#c.md#3"])
    lines: list[Any] = []
    for action in actions[:3]:
        meta, source = expand_action(action)  # exactly what the bulk helper sends
        BULK_ACTION.check(meta)
        lines += [meta, source]
        assert meta == {"index": {"_index": "docqa-acme", "_id": source["chunk_id"]}}  # deterministic _id
        mapping = index_body("acme", DIM, HnswSettings(), alias="docqa-acme")["mappings"]["properties"]
        assert set(source) == set(mapping) == {VECTOR_FIELD, *FIELDS}  # strict mapping: no stray field
        assert len(source[VECTOR_FIELD]) == 16 and source["chunk_count"] == 3
    meta, _ = expand_action(actions[3])  # the stale chunk goes in the same bulk, by _id
    assert meta == {"delete": {"_index": "docqa-acme", "_id": "handbook/a b#c.md#3"}}
    lines.append(meta)
    BULK.check(lines)


def test_long_chunk_ids_get_a_deterministic_id_within_the_limit() -> None:
    assert document_id_of_chunk("a/b c#3") == "a/b c#3"
    long = "x" * 600 + "#0"
    assert document_id_of_chunk(long) == document_id_of_chunk(long)
    assert len(document_id_of_chunk(long).encode()) <= 512 and document_id_of_chunk(long) != document_id_of_chunk(
        "y" * 600 + "#0"
    )


# -- negative controls: the strict schemas catch typos --------------------------------------------


def _typo(body: dict[str, Any], path: list[Any], wrong: str) -> dict[str, Any]:
    bad = copy.deepcopy(body)
    node: Any = bad
    for key in path[:-1]:
        node = node[key]
    node[wrong] = node.pop(path[-1])
    return bad


def test_filters_instead_of_filter_in_the_knn_query_fails() -> None:
    body = knn_body(vector(), 3, to_query(acl_filter(["group:x"])), ef_search=100)
    bad = _typo(body, ["query", "knn", VECTOR_FIELD, "filter"], "filters")
    problems = SEARCH.errors(bad)
    assert problems and any("'filters' was unexpected" in p for p in problems), problems


@pytest.mark.parametrize(
    ("schema", "body", "path", "wrong"),
    [
        (SEARCH, knn_body(unit(np.ones(DIM)), 3, None, 100), ["query", "knn"], "knnn"),
        (SEARCH, knn_body(unit(np.ones(DIM)), 3, None, 100), ["size"], "sise"),
        (SEARCH, exact_body(unit(np.ones(DIM)), 3, to_query(None)), ["query", "script_score", "script"], "scripts"),
        (COUNT, count_body(to_query(NOT_IN)), ["query", "bool", "must_not"], "mustnot"),
        (COUNT, count_body(to_query(NOT_IN)), ["query", "bool", "must_not", 0, "terms"], "term_s"),
        (DELETE_BY_QUERY, delete_document_body("a"), ["query", "bool", "filter"], "filters"),
        (MGET, heads_body(["a#0"]), ["docs"], "doc"),
        (SEARCH, best_per_document_body(unit(np.ones(DIM)), 3, to_query(None)), ["collapse"], "colapse"),
        (
            CREATE_INDEX,
            index_body("s", DIM, HnswSettings(), alias="a"),
            ["mappings", "properties", VECTOR_FIELD, "dimension"],
            "dimensions",
        ),
        (CREATE_INDEX, index_body("s", DIM, HnswSettings(), alias="a"), ["mappings", "dynamic"], "dynamc"),
        (CREATE_INDEX, index_body("s", DIM, HnswSettings(), alias="a"), ["aliases"], "alias"),
    ],
)
def test_a_misspelt_key_fails_the_spec(
    schema: spec.BodySchema, body: dict[str, Any], path: list[Any], wrong: str
) -> None:
    schema.check(body)
    assert schema.errors(_typo(body, path, wrong))


def test_a_misspelt_bulk_action_fails_the_spec() -> None:
    assert BULK_ACTION.errors({"index": {"_index": "i", "id": "x#0"}})
    assert BULK_ACTION.errors({"indx": {"_index": "i", "_id": "x#0"}})


# -- positive controls: real requests of the spec project's test stories pass -------------------


def _story_requests() -> Iterator[tuple[str, str, str, Any]]:
    for path in spec.stories():
        story = spec.load_story(path)
        if not isinstance(story, dict):
            continue
        for step in [*(story.get("prologues") or []), *(story.get("chapters") or [])]:
            payload = (step.get("request") or {}).get("payload")
            if payload is not None and "{" not in step["path"].replace("{index}", "movies"):
                yield path.name, step["method"], step["path"].replace("{index}", "movies"), payload


STORY_REQUESTS = [r for r in _story_requests() if r[2] in ("/movies", "/movies/_search", "/_bulk")]


def test_the_stories_hold_requests_of_each_kind() -> None:
    assert {(m, p) for _, m, p, _ in STORY_REQUESTS} >= {
        ("PUT", "/movies"),
        ("POST", "/movies/_search"),
        ("POST", "/_bulk"),
    }


@pytest.mark.parametrize(("story", "method", "path", "payload"), STORY_REQUESTS, ids=lambda v: str(v)[:30])
def test_requests_of_real_test_stories_pass_the_strict_schemas(
    story: str, method: str, path: str, payload: Any
) -> None:
    schema = spec.operation(method, path).body_schema()
    assert schema is not None
    schema.check(payload)


# -- what the adapter actually sends, through the real client ---------------------------------------


@pytest.fixture
def wire() -> spec.FakeWire:
    return spec.FakeWire()


def _adapter(wire: spec.FakeWire, **options: Any) -> OpenSearchIndex:
    return OpenSearchIndex(wire.client(), OpenSearchOptions(bulk_batch=2, **options), sleep=lambda _: None)


def _check_sent(wire: spec.FakeWire) -> set[str]:
    groups = set()
    for request in wire.requests:
        operation = request.operation
        groups.add(operation.group)
        assert not operation.parameter_errors(request.params), (request.method, request.path)
        schema = operation.body_schema()
        if request.body is None:
            continue
        assert schema is not None, f"{operation.group} takes no body"
        schema.check(request.body)
        if operation.group == "bulk":
            for meta in request.body[0::2]:
                BULK_ACTION.check(meta)
    return groups


@pytest.mark.parametrize("engine", ["faiss", "lucene"])
def test_every_request_the_adapter_sends_matches_the_spec(wire: spec.FakeWire, engine: Any) -> None:
    index = _adapter(wire, hnsw=HnswSettings(engine=engine))
    index.ensure(StoreSpec("acme", DIM))
    index.ensure(StoreSpec("acme", DIM))  # existing index: read and checked, not created again
    vectors = [unit(v[:DIM]) for v in random_vectors(5, 3)]
    index.upsert("acme", [chunk("a.md", i, vectors[i]) for i in range(3)] + [chunk("b.md", 0, vectors[3])])
    wire.reject = {"c.md#1": "mapper_parsing_exception"}
    with pytest.raises(ChunksRejected, match=r"c\.md"):
        index.upsert("acme", [chunk("c.md", i, vectors[i]) for i in range(2)])
    wire.reject = {}
    index.delete_document("acme", "b.md")
    index.set_document_acl("acme", "a.md", Acl.of(["user:carol"], ["group:x"]))
    index.delete_document("acme", "never-written.md")  # no first chunk: a sweep of what is searchable
    for filter_ in FILTERS:
        index.exact("acme", vectors[0], 4, filter_)  # type: ignore[arg-type]
        index.knn("acme", vectors[0], 4, filter_)  # type: ignore[arg-type]
        index.best_per_document("acme", vectors[0], 4, filter_ or acl_filter(["group:x"]))
        index.count("acme", filter_)
        index.lexical("acme", "How many vacation days carry over?", 4, filter_)  # type: ignore[arg-type]
    index.refresh("acme")
    index.server()
    index.check_store("acme")
    index.drop("acme")
    groups = _check_sent(wire)
    assert groups >= {
        "indices.create",
        "indices.get",
        "indices.delete",
        "indices.refresh",
        "bulk",
        "mget",
        "delete_by_query",
        "search",
        "count",
        "info",
        "cat.plugins",
    }
    assert "update_by_query" not in groups  # ACL changes are partial updates by _id (unrefreshed chunks too)
    deleted = [r for r in wire.requests if r.method == "DELETE"]
    assert [r.path for r in deleted] == [
        f"/docqa-acme.v{MAPPING_VERSION}"
    ]  # the concrete index: never through the alias


def _version_2_index(wire: spec.FakeWire) -> None:
    """The store's index as DocQA made it before pages and anchors (mapping version 2, ``docqa-acme.v2``)."""
    body = index_body("acme", DIM, HnswSettings(), alias="docqa-acme")
    mappings = body["mappings"]
    for name in ADDED_FIELDS:
        del mappings["properties"][name]
    mappings["_meta"]["docqa"]["mapping_version"] = 2
    wire.indices["docqa-acme.v2"] = {
        "aliases": {"docqa-acme": {}},
        "mappings": mappings,
        "settings": {"index": {k: str(v).lower() for k, v in body["settings"]["index"].items()}},
    }


@pytest.mark.parametrize("first", ["ensure", "upsert"])
def test_an_index_from_before_pages_and_anchors_gains_them_in_place(wire: spec.FakeWire, first: str) -> None:
    _version_2_index(wire)
    index = _adapter(wire)
    written = dataclasses.replace(chunk("a.pdf", 0, vector()), pages=(2, 3), anchor="")
    if first == "ensure":
        index.ensure(StoreSpec("acme", DIM))
    index.upsert("acme", [written])
    (put,) = [r for r in wire.requests if r.operation.group == "indices.put_mapping"]
    assert put.path == "/docqa-acme.v2/_mapping"  # the concrete index, whose name keeps its version
    assert put.body == {
        "properties": {name: FIELDS[name] for name in ADDED_FIELDS},
        "_meta": {"docqa": {"store_id": "acme", "dimension": DIM, "mapping_version": MAPPING_VERSION}},
    }
    _check_sent(wire)
    (bulk,) = [r for r in wire.requests if r.operation.group == "bulk"]
    assert bulk.body[1]["pages"] == [2, 3] and bulk.body[1]["anchor"] == ""
    assert bulk.body[1]["metadata"] == [] and bulk.body[1]["title_folded"] == "title a.pdf"
    index.ensure(StoreSpec("acme", DIM))  # upgraded once: nothing more to add
    assert len([r for r in wire.requests if r.operation.group == "indices.put_mapping"]) == 1


def test_searching_an_index_from_before_pages_and_anchors_needs_no_upgrade(wire: spec.FakeWire) -> None:
    _version_2_index(wire)
    source = {k: v for k, v in chunk_source("acme", chunk("a.md", 0, vector()), vector(), 1).items()}
    del source["pages"], source["anchor"], source[VECTOR_FIELD]
    wire.hits = [{"_index": "docqa-acme.v2", "_id": "a.md#0", "_score": 1.5, "_source": source}]
    (hit,) = _adapter(wire).knn("acme", vector(), 1, acl_filter(["group:everyone"]))
    assert (hit.chunk.pages, hit.chunk.anchor) == ((), "")
    assert not [r for r in wire.requests if r.method == "PUT"]


def test_bulk_goes_out_in_batches_with_the_configured_refresh(wire: spec.FakeWire) -> None:
    index = _adapter(wire, refresh="wait_for")
    index.ensure(StoreSpec("acme", DIM))
    vectors = random_vectors(5, 4)
    index.upsert("acme", [chunk("a.md", i, unit(vectors[i][:DIM])) for i in range(5)])
    bulks = [r for r in wire.requests if r.operation.group == "bulk"]
    assert [len(r.body) // 2 for r in bulks] == [2, 2, 1]
    assert all(r.params.get("refresh") == "wait_for" and r.params.get("require_alias") == "true" for r in bulks)
    _check_sent(wire)


def test_the_ingest_path_never_forces_a_refresh_and_deletes_stale_chunks_by_id(wire: spec.FakeWire) -> None:
    index = OpenSearchIndex(wire.client())  # the defaults: refresh false, 500 actions or 10 MiB a request
    index.ensure(StoreSpec("acme", DIM))
    vectors = [unit(v[:DIM]) for v in random_vectors(5, 4)]
    index.upsert("acme", [chunk("a.md", i, vectors[i]) for i in range(5)])
    wire.requests.clear()
    index.upsert("acme", [chunk("a.md", i, vectors[i]) for i in range(2)])
    assert [r.operation.group for r in wire.requests] == ["mget", "bulk"]  # one read, one write: no by-query
    mget, bulk = wire.requests
    assert mget.params.get("realtime") == "true"  # sees chunks written since the last refresh
    metas = [line for line in bulk.body if set(line) <= {"index", "delete"} and "_index" in next(iter(line.values()))]
    assert [(op, meta["_id"]) for line in metas for op, meta in line.items()] == [
        ("index", "a.md#0"),
        ("index", "a.md#1"),
        ("delete", "a.md#2"),
        ("delete", "a.md#3"),
        ("delete", "a.md#4"),
    ]
    assert bulk.params.get("refresh") == "false" and bulk.params.get("require_alias") == "true"
    assert all(r.params.get("refresh") != "true" for r in wire.requests)
    _check_sent(wire)


def test_bulk_requests_are_bounded_by_bytes(wire: spec.FakeWire) -> None:
    index = OpenSearchIndex(wire.client(), OpenSearchOptions(bulk_batch=500, bulk_max_bytes=4_000))
    index.ensure(StoreSpec("acme", DIM))
    vectors = [unit(v[:DIM]) for v in random_vectors(40, 4)]
    index.upsert("acme", [chunk(f"d{i}.md", 0, vectors[i], text="x" * 300) for i in range(40)])
    bulks = [r for r in wire.requests if r.operation.group == "bulk"]
    assert len(bulks) > 3
    import json

    assert all(sum(len(json.dumps(line)) + 1 for line in r.body) <= 4_000 for r in bulks)


# -- configuration decides the adapter ----------------------------------------------------------------


def _settings(**opensearch: Any) -> Any:
    from service.config import load_settings

    return load_settings(
        index={"backend": "opensearch", "opensearch": {"url": "https://os.example:9200", **opensearch}}
    )


def test_opensearch_configuration_builds_the_adapter_without_connecting() -> None:
    from service.bootstrap import build_app

    settings = _settings(
        engine="faiss", m=32, ef_search=64, index_prefix="prod-", max_retries=5, refresh="true", bulk_batch=250
    )
    app = build_app(settings)
    index = app.index  # unit tests may not open sockets: building the adapter makes no request
    assert isinstance(index, OpenSearchIndex)
    assert index.options.hnsw == HnswSettings(engine="faiss", m=32, ef_construction=128, ef_search=64)
    assert (index.options.max_retries, index.options.refresh, index.options.bulk_batch) == (5, "true", 250)
    assert index.index_name("acme") == "prod-acme"
    app.close()


def test_secrets_stay_out_of_reprs_and_reach_the_client_only_as_headers() -> None:
    from indexer.index.opensearch.client import connect

    settings = _settings(username="svc-user-4711", password="pw-4711-secret")
    shown = repr(settings) + str(settings) + repr(settings.index.opensearch)
    assert "pw-4711-secret" not in shown and "svc-user-4711" not in shown
    keyed = _settings(api_key="key-4711-secret")
    assert "key-4711-secret" not in repr(keyed)
    index = connect("http://127.0.0.1:9200", api_key="key-4711-secret")
    assert index._client.transport.get_connection().headers["authorization"] == "ApiKey key-4711-secret"
    index.close()


@pytest.mark.parametrize(
    ("index", "key"),
    [
        ({"backend": "opensearch"}, "index.opensearch.url"),
        ({"backend": "opensearch", "opensearch": {"url": "ftp://os:21"}}, "http:// or https://"),
        ({"backend": "opensearch", "opensearch": {"url": "https://u:p@os:9200"}}, "must not contain credentials"),
        ({"opensearch": {"url": "https://os:9200", "username": "u"}}, "username and password go together"),
        ({"opensearch": {"url": "https://os", "username": "u", "password": "p", "api_key": "k"}}, "not both"),
        ({"opensearch": {"engine": "nmslib"}}, "engine"),
        ({"opensearch": {"index_prefix": "Bad Prefix"}}, "index_prefix"),
        ({"opensearch": {"ca_certs": "/nonexistent/ca.pem"}}, "ca_certs"),
        ({"backend": "elastic"}, "index.backend"),
    ],
)
def test_bad_opensearch_configuration_stops_start_up_naming_the_key(index: dict[str, Any], key: str) -> None:
    from acl.errors import ConfigurationError
    from service.config import load_settings

    with pytest.raises(ConfigurationError, match=key):
        load_settings(index=index)
