"""``OpenSearchIndex.document_chunks``: every request it sends is valid against the OpenSearch API specification."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from indexer.index.filters import acl_filter, and_, documents_filter
from indexer.index.opensearch.filters import to_query
from indexer.index.opensearch.index import OpenSearchIndex, OpenSearchOptions
from indexer.index.opensearch.requests import document_chunks_body
from indexer.index.port import StoreSpec
from tests.contract.index_contract import FILTER_CASES, chunk, random_vectors, unit
from tests.unit import opensearch_spec as spec

DIM = 8
SEARCH = spec.request_body("_core", "search")
FILTERS = [acl_filter(["user:alice", "group:x"]), and_(acl_filter(["group:x"]), documents_filter(["a.md"]))] + [
    case for case, _ in FILTER_CASES
]


@pytest.mark.parametrize("filter_", FILTERS, ids=range(len(FILTERS)))
def test_a_page_of_a_documents_chunks_matches_the_spec(filter_: Any) -> None:
    body = document_chunks_body("a.md", 500, to_query(filter_))
    SEARCH.check(body)
    SEARCH.check(document_chunks_body("a.md", 500, to_query(filter_), search_after=[3, "a.md#3"]))
    assert body["query"] == {"bool": {"filter": [to_query(filter_), {"term": {"document_id": "a.md"}}]}}
    assert body["sort"] == [{"ordinal": "asc"}, {"chunk_id": "asc"}] and "_source" not in body  # vectors too


def test_a_misspelt_key_fails_the_spec() -> None:
    body = copy.deepcopy(document_chunks_body("a.md", 5, to_query(FILTERS[0])))
    body["query"]["bool"]["filters"] = body["query"]["bool"].pop("filter")
    with pytest.raises(Exception, match="filters"):
        SEARCH.check(body)


def test_the_adapter_pages_with_search_after_and_sends_only_valid_requests() -> None:
    wire = spec.FakeWire()
    index = OpenSearchIndex(wire.client(), OpenSearchOptions(page_size=2), sleep=lambda _: None)
    index.ensure(StoreSpec("acme", DIM))
    vectors = [unit(v[:DIM]) for v in random_vectors(5, 3)]
    index.upsert("acme", [chunk("a.md", i, vectors[i]) for i in range(5)])
    before = len(wire.requests)
    index.document_chunks("acme", "a.md", and_(acl_filter(["group:everyone"]), documents_filter(["a.md"])))
    searches = [r for r in wire.requests[before:] if r.operation.group == "search"]
    assert searches
    for request in searches:
        assert not request.operation.parameter_errors(request.params)
        SEARCH.check(request.body)
        assert request.body["size"] == 2
