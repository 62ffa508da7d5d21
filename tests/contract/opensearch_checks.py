"""What only the OpenSearch adapter must show, on a live server and on the k-NN fake alike.

A test class mixes this in next to ``IndexContract`` and provides ``make_index``:
a factory of adapters (``OpenSearchOptions`` fields as keywords) that all share
one index prefix, cleaned up by the fixture. Nothing here waits for the
server's periodic refresh: what must be visible is made visible by
``refresh()``, so the checks hold on a real cluster too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from acl.errors import NotFound
from acl.model import Acl
from indexer.errors import IndexUnavailable
from indexer.index.filters import acl_filter, and_, documents_filter
from indexer.index.opensearch.index import OpenSearchIndex
from indexer.index.port import StoreSpec
from tests.contract.index_contract import DIM, STORE, chunk, random_vectors, unit

MakeIndex = Callable[..., OpenSearchIndex]


def close_all(opened: list[OpenSearchIndex], prefix: str) -> None:
    """Delete every index under ``prefix`` (the test's own) and close the adapters a test opened."""
    if opened:
        client: Any = opened[0]._client
        for name in client.indices.get(index=f"{prefix}*", ignore_unavailable=True):
            client.indices.delete(index=name)
    for index in opened:
        index.close()


def _at_cosines(query: np.ndarray) -> dict[str, tuple[np.ndarray, float]]:
    """Documents whose one chunk is at cosine 1, 0.5, 0 and -1 from ``query`` (a unit vector)."""
    other = unit(np.eye(DIM)[1] - (np.eye(DIM)[1] @ query) * query)  # orthogonal to the query
    return {
        "same": (query, 1.0),
        "half": (unit(0.5 * query + np.sqrt(0.75) * other), 0.5),
        "right": (other, 0.0),
        "opposite": (-query, -1.0),
    }


class OpenSearchChecks:
    """Score calibration, shards, and writes that never wait for a refresh."""

    @pytest.fixture
    def make_index(self) -> MakeIndex:
        raise NotImplementedError("a test class must provide make_index")

    def test_scores_are_cosine_on_every_search_path(self, make_index: MakeIndex) -> None:
        index = make_index(refresh="false")
        index.ensure(StoreSpec(STORE, DIM))
        query = unit(np.eye(DIM)[0])
        documents = _at_cosines(query)
        index.upsert(STORE, [chunk(name, 0, vector) for name, (vector, _) in documents.items()])
        index.refresh(STORE)
        expected = {f"{name}#0": cos for name, (_, cos) in documents.items()}
        everyone = acl_filter(["group:everyone"])
        narrow = documents_filter(["half", "opposite"])  # fewer matches than k: the server searches exactly
        paths = {
            "knn": index.knn(STORE, query, 4, everyone),
            "knn, narrow filter": index.knn(STORE, query, 4, narrow),
            "exact": index.exact(STORE, query, 4, everyone),
            "best per document": index.best_per_document(STORE, query, 4, everyone),
        }
        for path, hits in paths.items():
            assert hits, path
            for hit in hits:
                assert hit.score == pytest.approx(expected[hit.chunk.chunk_id], abs=1e-5), path
        assert [h.chunk.document_id for h in paths["exact"]] == ["same", "half", "right", "opposite"]

    def test_three_shards_with_an_empty_one(self, make_index: MakeIndex) -> None:
        index = make_index(shards=3, refresh="false")
        index.ensure(StoreSpec(STORE, DIM))
        facts, problems = index.check_store(STORE, DIM)
        assert (facts.shards, problems) == (3, [])
        vectors = random_vectors(2, seed=31)
        index.upsert(STORE, [chunk("only", i, vectors[i]) for i in range(2)])  # two chunks: a shard stays empty
        index.refresh(STORE)
        everyone = acl_filter(["group:everyone"])
        assert index.count(STORE) == 2
        for search in (index.knn, index.exact):
            hits = search(STORE, vectors[0], 10, everyone)
            assert [h.chunk.chunk_id for h in hits] == ["only#0", "only#1"]
            assert hits[0].score == pytest.approx(1.0, abs=1e-5)
        (best,) = index.best_per_document(STORE, vectors[1], 10, everyone)
        assert best.chunk.chunk_id == "only#1"

    def test_writes_in_quick_succession_need_no_refresh_between_them(self, make_index: MakeIndex) -> None:
        index = make_index(refresh="false")
        index.ensure(StoreSpec(STORE, DIM))
        vectors = random_vectors(6, seed=32)
        # Written, shortened, re-permissioned and written again before any refresh: a by-query step
        # would not see the unrefreshed chunks, and stale text or the old ACL would survive.
        index.upsert(STORE, [chunk("a", i, vectors[i], text="old") for i in range(5)])
        index.upsert(STORE, [chunk("a", i, vectors[i], text="new") for i in range(2)])
        index.set_document_acl(STORE, "a", Acl.of(["group:new"]))
        index.upsert(STORE, [chunk("b", i, vectors[i]) for i in range(3)])
        index.delete_document(STORE, "b")
        index.refresh(STORE)
        assert index.count(STORE) == 2
        hits = index.exact(STORE, vectors[0], 10, acl_filter(["group:new"]))
        assert sorted(h.chunk.chunk_id for h in hits) == ["a#0", "a#1"]
        assert all(h.chunk.text == "new" and h.chunk.acl == Acl.of(["group:new"]) for h in hits)
        assert index.count(STORE, acl_filter(["group:everyone"])) == 0

    def test_a_write_after_a_drop_does_not_create_an_index(self, make_index: MakeIndex) -> None:
        index = make_index(refresh="false", max_retries=0)
        index.ensure(StoreSpec(STORE, DIM))
        index.upsert(STORE, [chunk("a", 0, np.ones(DIM))])  # the adapter now knows the store
        make_index().drop(STORE)  # another process drops it
        failures: list[Any] = []
        for write in (
            lambda: index.upsert(STORE, [chunk("a", 0, np.ones(DIM))]),
            lambda: index.set_document_acl(STORE, "a", Acl.of(["user:x"])),
            lambda: index.delete_document(STORE, "a"),
        ):
            with pytest.raises((NotFound, IndexUnavailable)) as caught:
                write()
            failures.append(caught.value)
        client: Any = index._client
        assert not client.indices.exists(index=index.index_name(STORE))  # nothing auto-created
        assert all(isinstance(f, NotFound) for f in failures), failures

    def test_vectors_round_trip_as_float32(self, make_index: MakeIndex) -> None:
        index = make_index(refresh="true")
        index.ensure(StoreSpec(STORE, DIM))
        vector = random_vectors(1, seed=33)[0].astype(np.float32)
        index.upsert(STORE, [chunk("a", 0, vector)])
        client: Any = index._client
        stored = client.get(index=index.index_name(STORE), id="a#0")["_source"]["embedding"]
        assert np.array_equal(np.asarray(stored, dtype=np.float32), unit(vector).astype(np.float32))

    def test_document_chunks_page_past_the_page_size(self, make_index: MakeIndex) -> None:
        index = make_index(refresh="false", page_size=3)
        index.ensure(StoreSpec(STORE, DIM))
        vectors = random_vectors(11, seed=43)
        index.upsert(STORE, [chunk("long", o, vectors[o]) for o in range(10)] + [chunk("other", 0, vectors[10])])
        index.refresh(STORE)
        got = index.document_chunks(STORE, "long", and_(acl_filter(["group:everyone"]), documents_filter(["long"])))
        assert [c.ordinal for c in got] == list(range(10))
        assert all(c.vector is not None for c in got)
