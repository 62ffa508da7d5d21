"""The behaviour every ``Index`` adapter must have, written once.

A test module runs it against an adapter by subclassing ``IndexContract`` and
overriding the ``index`` fixture (function-scoped: a fresh, empty index).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

import numpy as np
import pytest

from acl.errors import InvalidArgument, NotFound
from acl.model import Acl
from indexer.index.filters import Filter, acl_filter, and_, documents_filter
from indexer.index.port import ChunkRecord, Index, StoreSpec
from tests.contract.lexical_contract import LexicalContract
from tests.contract.metadata_contract import MetadataContract

STORE = "contract"
DIM = 16


def unit(vector: Any) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    normalised: np.ndarray = array / np.linalg.norm(array)
    return normalised


def chunk(
    document_id: str,
    ordinal: int,
    vector: Any,
    allow: tuple[str, ...] = ("group:everyone",),
    deny: tuple[str, ...] = (),
    text: str = "",
) -> ChunkRecord:
    return ChunkRecord(
        chunk_id=f"{document_id}#{ordinal}",
        document_id=document_id,
        ordinal=ordinal,
        text=text or f"text of {document_id} {ordinal}",
        title=f"Title {document_id}",
        source_uri=f"file:///{document_id}",
        heading_path=("H1", f"H2 {ordinal}"),
        start=ordinal * 10,
        end=ordinal * 10 + 9,
        acl=Acl.of(allow, deny),
        vector=unit(vector),
    )


def random_vectors(count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((count, DIM)).astype(np.float32)
    normalised: np.ndarray = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return normalised


@lru_cache(maxsize=1)
def narrow_corpus() -> tuple[ChunkRecord, ...]:
    """20,000 chunks in 2,000 documents; only 10 documents (0.5 %) allow ``group:few``."""
    vectors = random_vectors(20_000, seed=7)
    chunks = []
    for row, vector in enumerate(vectors):
        document = row // 10
        allow = ("group:few",) if document % 200 == 0 else ("group:many",)
        chunks.append(chunk(f"doc{document:04d}", row % 10, vector, allow=allow))
    return tuple(chunks)


# Five documents of two chunks each, for the filter language.
ACL_DOCS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "a": (("group:x",), ()),
    "b": (("group:x", "user:bob"), ("user:alice",)),
    "c": (("group:everyone",), ()),
    "d": ((), ()),
    "e": (("user:alice",), ("group:x",)),
}


def _ids(*documents: str) -> set[str]:
    return {f"{d}#{o}" for d in documents for o in (0, 1)}


FILTER_CASES: list[tuple[Filter, set[str]]] = [
    ({"field": "document_id", "operator": "==", "value": "a"}, _ids("a")),
    ({"field": "document_id", "operator": "in", "value": ["a", "c", "zzz"]}, _ids("a", "c")),
    ({"field": "document_id", "operator": "not in", "value": ["a"]}, _ids("b", "c", "d", "e")),
    ({"field": "chunk_id", "operator": "==", "value": "b#1"}, {"b#1"}),
    ({"field": "chunk_id", "operator": "in", "value": ["a#0", "e#1", "q#0"]}, {"a#0", "e#1"}),
    ({"field": "chunk_id", "operator": "not in", "value": ["a#0"]}, _ids(*"abcde") - {"a#0"}),
    ({"field": "acl_allow", "operator": "==", "value": "group:x"}, _ids("a", "b")),
    (
        {"field": "acl_allow", "operator": "in", "value": ["user:bob", "group:everyone"]},
        _ids("b", "c"),
    ),
    ({"field": "acl_allow", "operator": "not in", "value": ["group:x"]}, _ids("c", "d", "e")),
    ({"field": "acl_deny", "operator": "==", "value": "user:alice"}, _ids("b")),
    ({"field": "acl_deny", "operator": "in", "value": ["group:x", "user:alice"]}, _ids("b", "e")),
    (
        {"field": "acl_deny", "operator": "not in", "value": ["user:alice"]},
        _ids("a", "c", "d", "e"),
    ),
    ({"field": "acl_deny", "operator": "in", "value": []}, set()),
    ({"field": "acl_allow", "operator": "not in", "value": []}, _ids(*"abcde")),
    (
        {
            "operator": "AND",
            "conditions": [
                {"field": "acl_allow", "operator": "==", "value": "group:x"},
                {"field": "chunk_id", "operator": "in", "value": ["a#1", "b#1", "c#1"]},
            ],
        },
        {"a#1", "b#1"},
    ),
    (
        {
            "operator": "OR",
            "conditions": [
                {"field": "document_id", "operator": "==", "value": "d"},
                {"field": "acl_deny", "operator": "==", "value": "group:x"},
            ],
        },
        _ids("d", "e"),
    ),
    (
        {
            "operator": "NOT",
            "conditions": [{"field": "document_id", "operator": "in", "value": ["a", "b"]}],
        },
        _ids("c", "d", "e"),
    ),
    (
        {
            "operator": "NOT",
            "conditions": [
                {
                    "operator": "OR",
                    "conditions": [
                        {"field": "acl_allow", "operator": "==", "value": "group:x"},
                        {
                            "operator": "AND",
                            "conditions": [
                                {"field": "document_id", "operator": "==", "value": "c"},
                                {"field": "chunk_id", "operator": "==", "value": "c#0"},
                            ],
                        },
                    ],
                }
            ],
        },
        _ids("c", "d", "e") - {"c#0"},
    ),
]

BAD_FILTERS: list[Any] = [
    {"field": "title", "operator": "==", "value": "x"},
    {"field": "document_id", "operator": "~", "value": "x"},
    {"field": "document_id", "operator": "==", "value": ["x"]},
    {"field": "document_id", "operator": "in", "value": "x"},
    {"operator": "XOR", "conditions": [{"field": "chunk_id", "operator": "==", "value": "x"}]},
    {"operator": "AND", "conditions": []},
    {"operator": "NOT", "conditions": [{"field": "chunk_id", "operator": "==", "value": "a"}] * 2},
    ["not", "a", "dict"],
]


class IndexContract(LexicalContract, MetadataContract):
    """Tests every ``Index`` adapter must pass (``LexicalContract`` and ``MetadataContract`` too). Override the
    ``index`` fixture."""

    @pytest.fixture
    def index(self) -> Iterator[Index]:
        raise NotImplementedError("a contract test class must provide the index fixture")

    @pytest.fixture
    def store(self, index: Index) -> Index:
        index.ensure(StoreSpec(STORE, DIM))
        return index

    @pytest.fixture
    def acl_store(self, store: Index) -> Index:
        vectors = random_vectors(10, seed=3)
        store.upsert(
            STORE,
            [
                chunk(doc, ordinal, vectors[2 * i + ordinal], allow=allow, deny=deny)
                for i, (doc, (allow, deny)) in enumerate(ACL_DOCS.items())
                for ordinal in (0, 1)
            ],
        )
        return store

    @staticmethod
    def ids(index: Index, filter_: Filter, k: int = 1000, approximate: bool = False) -> set[str]:
        search = index.knn if approximate else index.exact
        return {h.chunk.chunk_id for h in search(STORE, unit(np.ones(DIM)), k, filter_)}

    # -- stores ---------------------------------------------------------------

    def test_ensure_is_idempotent_and_refuses_another_dimension(self, store: Index) -> None:
        store.upsert(STORE, [chunk("a", 0, np.ones(DIM))])
        store.ensure(StoreSpec(STORE, DIM))
        assert store.count(STORE) == 1
        with pytest.raises(InvalidArgument, match="dimension"):
            store.ensure(StoreSpec(STORE, DIM + 1))
        assert store.count(STORE) == 1

    @pytest.mark.parametrize(
        "operation",
        [
            "upsert",
            "delete_document",
            "set_document_acl",
            "knn",
            "exact",
            "lexical",
            "count",
            "drop",
        ],
    )
    def test_unknown_store_is_not_found(self, index: Index, operation: str) -> None:
        calls: dict[str, Callable[[], object]] = {
            "upsert": lambda: index.upsert("nope", [chunk("a", 0, np.ones(DIM))]),
            "delete_document": lambda: index.delete_document("nope", "a"),
            "set_document_acl": lambda: index.set_document_acl("nope", "a", Acl.of(["user:x"])),
            "knn": lambda: index.knn("nope", unit(np.ones(DIM)), 3, acl_filter(["user:x"])),
            "exact": lambda: index.exact("nope", unit(np.ones(DIM)), 3, acl_filter(["user:x"])),
            "lexical": lambda: index.lexical("nope", "text", 3, acl_filter(["user:x"])),
            "count": lambda: index.count("nope"),
            "drop": lambda: index.drop("nope"),
        }
        with pytest.raises(NotFound):
            calls[operation]()

    def test_drop_removes_everything(self, store: Index) -> None:
        store.upsert(STORE, [chunk("a", 0, np.ones(DIM))])
        store.drop(STORE)
        with pytest.raises(NotFound):
            store.count(STORE)
        store.ensure(StoreSpec(STORE, DIM + 2))
        assert store.count(STORE) == 0

    def test_stores_are_independent(self, store: Index) -> None:
        store.ensure(StoreSpec("other", DIM))
        store.upsert(STORE, [chunk("a", 0, np.ones(DIM))])
        store.upsert("other", [chunk("a", 0, np.ones(DIM)), chunk("a", 1, np.ones(DIM))])
        store.delete_document("other", "a")
        assert store.count(STORE) == 1 and store.count("other") == 0

    # -- writes ---------------------------------------------------------------

    def test_hits_carry_the_chunk_as_written(self, store: Index) -> None:
        written = chunk("doc", 0, np.arange(DIM) + 1.0, allow=("group:x",), deny=("user:y",))
        store.upsert(STORE, [written])
        (hit,) = store.exact(STORE, written.vector, 5, acl_filter(["group:x"]))  # type: ignore[arg-type]
        assert hit.chunk == written  # every field but the vector
        assert hit.score == pytest.approx(1.0, abs=1e-5)

    def test_pages_and_anchor_round_trip(self, store: Index) -> None:
        vectors = random_vectors(3, seed=11)
        written = [
            dataclasses.replace(chunk("pdf", 0, vectors[0]), pages=(12, 13), anchor=""),
            dataclasses.replace(chunk("pdf", 1, vectors[1]), pages=(13,), anchor=""),
            dataclasses.replace(chunk("html", 0, vectors[2]), pages=(), anchor="DDL-CONSTRAINTS-FK"),
        ]
        store.upsert(STORE, written)
        everyone = acl_filter(["group:everyone"])
        for vector, expected in zip(vectors, written, strict=True):
            for search in (store.knn, store.exact):
                assert search(STORE, vector, 1, everyone)[0].chunk == expected
        best = store.best_per_document(STORE, vectors[0], 5, everyone)
        assert {h.chunk.chunk_id: (h.chunk.pages, h.chunk.anchor) for h in best}["pdf#0"] == ((12, 13), "")
        store.set_document_acl(STORE, "pdf", Acl.of(["group:x"]))  # a partial update keeps them
        hits = store.exact(STORE, vectors[1], 5, and_(acl_filter(["group:x"]), documents_filter(["pdf"])))
        moved = [dataclasses.replace(c, acl=Acl.of(["group:x"])) for c in written[:2]]
        assert sorted((h.chunk for h in hits), key=lambda c: c.chunk_id) == moved

    def test_reupsert_with_fewer_chunks_removes_the_rest(self, store: Index) -> None:
        vectors = random_vectors(5, seed=1)
        store.upsert(STORE, [chunk("a", i, vectors[i]) for i in range(5)])
        store.upsert(STORE, [chunk("b", 0, vectors[0])])
        store.upsert(STORE, [chunk("a", i, vectors[i], text="new") for i in range(2)])
        hits = store.exact(STORE, vectors[0], 100, documents_filter(["a"]))
        assert sorted(h.chunk.chunk_id for h in hits) == ["a#0", "a#1"]
        assert all(h.chunk.text == "new" for h in hits)
        assert store.count(STORE) == 3

    def test_upsert_is_idempotent(self, store: Index) -> None:
        chunks = [chunk("a", i, v) for i, v in enumerate(random_vectors(4, seed=2))]
        store.upsert(STORE, chunks)
        first = store.exact(STORE, chunks[0].vector, 10, documents_filter(["a"]))  # type: ignore[arg-type]
        store.upsert(STORE, chunks)
        again = store.exact(STORE, chunks[0].vector, 10, documents_filter(["a"]))  # type: ignore[arg-type]
        assert store.count(STORE) == 4
        assert [(h.chunk, round(h.score, 6)) for h in again] == [(h.chunk, round(h.score, 6)) for h in first]

    def test_one_upsert_replaces_each_document_it_names(self, store: Index) -> None:
        vectors = random_vectors(6, seed=4)
        store.upsert(
            STORE,
            [chunk("a", i, vectors[i]) for i in range(3)]
            + [chunk("b", i, vectors[i]) for i in range(3)]
            + [chunk("c", 0, vectors[5])],
        )
        store.upsert(STORE, [chunk("a", 0, vectors[0]), chunk("b", 0, vectors[1])])
        assert self.ids(store, {"field": "chunk_id", "operator": "not in", "value": []}) == {
            "a#0",
            "b#0",
            "c#0",
        }

    def test_upsert_of_nothing_changes_nothing(self, store: Index) -> None:
        store.upsert(STORE, [chunk("a", 0, np.ones(DIM))])
        store.upsert(STORE, [])
        assert store.count(STORE) == 1

    @pytest.mark.parametrize("vector", [np.ones(DIM + 1), np.zeros(DIM), None])
    def test_upsert_of_a_bad_vector_is_invalid_and_writes_nothing(self, store: Index, vector: Any) -> None:
        good = chunk("a", 0, np.ones(DIM))
        bad = dataclasses.replace(chunk("a", 1, np.ones(DIM)), vector=vector)
        with pytest.raises(InvalidArgument):
            store.upsert(STORE, [good, bad])
        assert store.count(STORE) == 0

    def test_delete_document(self, store: Index) -> None:
        vectors = random_vectors(3, seed=5)
        store.upsert(STORE, [chunk("a", 0, vectors[0]), chunk("a", 1, vectors[1]), chunk("b", 0, vectors[2])])
        store.delete_document(STORE, "a")
        store.delete_document(STORE, "never-there")
        assert store.count(STORE) == 1
        assert self.ids(store, acl_filter(["group:everyone"])) == {"b#0"}
        assert self.ids(store, acl_filter(["group:everyone"]), approximate=True) == {"b#0"}

    def test_set_document_acl_changes_what_filters_see(self, store: Index) -> None:
        vectors = random_vectors(3, seed=6)
        store.upsert(
            STORE,
            [
                chunk("a", 0, vectors[0], allow=("group:x",)),
                chunk("a", 1, vectors[1], allow=("group:x",)),
                chunk("b", 0, vectors[2], allow=("group:x",)),
            ],
        )
        store.set_document_acl(STORE, "a", Acl.of(["user:carol"], ["group:x"]))
        assert self.ids(store, acl_filter(["group:x"])) == {"b#0"}
        assert self.ids(store, acl_filter(["user:carol"]), approximate=True) == {"a#0", "a#1"}
        assert self.ids(store, acl_filter(["user:carol", "group:x"])) == {"b#0"}  # deny wins
        hit = store.exact(STORE, vectors[0], 1, acl_filter(["user:carol"]))[0]
        assert hit.chunk.acl == Acl.of(["user:carol"], ["group:x"]) and hit.chunk.text
        assert store.count(STORE) == 3

    # -- filters --------------------------------------------------------------

    @pytest.mark.parametrize(("filter_", "expected"), FILTER_CASES)
    def test_filter_operators(self, acl_store: Index, filter_: Filter, expected: set[str]) -> None:
        assert self.ids(acl_store, filter_) == expected
        assert self.ids(acl_store, filter_, approximate=True) == expected
        assert acl_store.count(STORE, filter_) == len(expected)

    @pytest.mark.parametrize(
        ("principals", "readable"),
        [
            (["user:alice", "group:x", "group:everyone"], {"a", "c"}),  # b and e deny alice/x
            (["user:bob"], {"b"}),
            (["group:everyone"], {"c"}),
            (["group:y"], set()),
            ([], set()),
        ],
    )
    def test_acl_filter_allow_meets_principals_and_deny_wins(
        self, acl_store: Index, principals: list[str], readable: set[str]
    ) -> None:
        filter_ = acl_filter(principals)
        assert self.ids(acl_store, filter_) == _ids(*readable)
        assert self.ids(acl_store, filter_, approximate=True) == _ids(*readable)
        assert acl_store.count(STORE, filter_) == 2 * len(readable)

    @pytest.mark.parametrize("bad", BAD_FILTERS)
    def test_bad_filter_is_invalid(self, acl_store: Index, bad: Any) -> None:
        query = unit(np.ones(DIM))
        for call in (
            lambda: acl_store.knn(STORE, query, 3, bad),
            lambda: acl_store.exact(STORE, query, 3, bad),
            lambda: acl_store.count(STORE, bad),
        ):
            with pytest.raises(InvalidArgument):
                call()

    def test_count_with_and_without_filter(self, acl_store: Index) -> None:
        assert acl_store.count(STORE) == 10
        assert acl_store.count(STORE, documents_filter(["a", "b", "x"])) == 4
        mine = acl_filter(["group:x", "user:alice"])
        assert acl_store.count(STORE, and_(documents_filter(["a", "b"]), mine)) == 2

    # -- search ---------------------------------------------------------------

    @pytest.mark.parametrize("k", [0, -1, 1.5, True])
    def test_k_must_be_a_positive_integer(self, acl_store: Index, k: Any) -> None:
        with pytest.raises(InvalidArgument):
            acl_store.knn(STORE, unit(np.ones(DIM)), k, acl_filter(["group:x"]))

    def test_query_of_another_dimension_is_invalid(self, acl_store: Index) -> None:
        with pytest.raises(InvalidArgument):
            acl_store.exact(STORE, unit(np.ones(DIM + 1)), 3, acl_filter(["group:x"]))

    def test_scores_are_cosine_and_descending(self, store: Index) -> None:
        vectors = random_vectors(50, seed=8)
        store.upsert(STORE, [chunk(f"d{i}", 0, v) for i, v in enumerate(vectors)])
        query = random_vectors(1, seed=9)[0]
        for search in (store.exact, store.knn):
            hits = search(STORE, query * 3.0, 50, acl_filter(["group:everyone"]))  # any length
            assert len(hits) == 50
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True)
            expected = {f"d{i}#0": float(v @ query) for i, v in enumerate(vectors)}
            for hit in hits:
                assert hit.score == pytest.approx(expected[hit.chunk.chunk_id], abs=1e-5)

    def test_ties_are_ordered_by_chunk_id(self, store: Index) -> None:
        same = np.ones(DIM)
        store.upsert(
            STORE,
            [chunk(doc, 0, same) for doc in ("d", "b", "e", "a")] + [chunk("z", 0, -same), chunk("c", 0, -same)],
        )
        for search in (store.exact, store.knn):
            hits = search(STORE, unit(same), 10, acl_filter(["group:everyone"]))
            assert [h.chunk.chunk_id for h in hits] == ["a#0", "b#0", "d#0", "e#0", "c#0", "z#0"]
        top = store.exact(STORE, unit(same), 2, acl_filter(["group:everyone"]))
        assert [h.chunk.chunk_id for h in top] == ["a#0", "b#0"]

    def test_best_chunk_per_document_ranks_documents_by_their_best_chunk(self, store: Index) -> None:
        vectors = random_vectors(40, seed=21)
        store.upsert(
            STORE,
            [chunk(f"d{i // 4}", i % 4, v, allow=(f"group:g{(i // 4) % 2}",)) for i, v in enumerate(vectors)],
        )
        query = random_vectors(1, seed=22)[0]
        readable = acl_filter(["group:g0"])
        best = store.best_per_document(STORE, query, 10, readable)
        expected: dict[str, tuple[float, str]] = {}
        for hit in store.exact(STORE, query, 40, readable):
            expected.setdefault(hit.chunk.document_id, (hit.score, hit.chunk.chunk_id))
        assert [(h.chunk.document_id, h.chunk.chunk_id) for h in best] == [
            (d, chunk_id) for d, (_, chunk_id) in expected.items()
        ]
        assert [h.score for h in best] == pytest.approx([score for score, _ in expected.values()], abs=1e-5)
        assert len(store.best_per_document(STORE, query, 2, readable)) == 2
        only = and_(readable, documents_filter(["d0", "d1", "d2"]))
        assert {h.chunk.document_id for h in store.best_per_document(STORE, query, 10, only)} == {"d0", "d2"}
        with pytest.raises(InvalidArgument):
            store.best_per_document(STORE, query, 0, readable)

    def test_refresh_keeps_what_was_written(self, store: Index) -> None:
        store.upsert(STORE, [chunk("a", 0, np.ones(DIM))])
        store.refresh(STORE)
        assert store.count(STORE) == 1

    def test_fewer_matches_than_k_returns_all_matches(self, acl_store: Index) -> None:
        hits = acl_store.knn(STORE, unit(np.ones(DIM)), 10, documents_filter(["a", "c"]))
        assert len(hits) == 4

    def test_narrow_filter_still_returns_k(self, store: Index) -> None:
        corpus = narrow_corpus()
        store.upsert(STORE, corpus)
        readable = acl_filter(["user:me", "group:few"])
        assert store.count(STORE, readable) == 100
        for query in random_vectors(5, seed=11):
            approximate = store.knn(STORE, query, 10, readable)
            exact = store.exact(STORE, query, 10, readable)
            assert len(approximate) == 10
            assert all(h.chunk.acl.allow == {"group:few"} for h in approximate)
            assert len({h.chunk.chunk_id for h in approximate} & {h.chunk.chunk_id for h in exact}) >= 9
        assert len(store.knn(STORE, corpus[0].vector, 10, documents_filter(["doc0000"]))) == 10  # type: ignore[arg-type]

    def test_knn_agrees_with_exact(self, store: Index) -> None:
        vectors = random_vectors(3000, seed=12)
        store.upsert(
            STORE,
            [chunk(f"d{i // 3}", i % 3, v, allow=(f"group:g{(i // 3) % 20}",)) for i, v in enumerate(vectors)],
        )
        for principals in (["group:g0"], [f"group:g{g}" for g in range(10)], ["group:everyone"]):
            filter_ = acl_filter(principals) if principals != ["group:everyone"] else None
            found = total = 0
            for query in random_vectors(20, seed=13):
                exact = {h.chunk.chunk_id for h in store.exact(STORE, query, 10, filter_)}  # type: ignore[arg-type]
                approximate = store.knn(STORE, query, 10, filter_)  # type: ignore[arg-type]
                assert len(approximate) == len(exact)
                found += len(exact & {h.chunk.chunk_id for h in approximate})
                total += len(exact)
            assert found / total >= 0.98

    # -- document_chunks: a document's chunks in order, with vectors ---------------------------------

    def test_document_chunks_come_in_ordinal_order_with_their_vectors(self, store: Index) -> None:
        vectors = random_vectors(14, seed=41)
        ordinals = [7, 0, 12, 3, 10, 1, 11, 2, 9, 4, 8, 5, 6]  # "a#10" sorts before "a#2" as text: order by number
        store.upsert(STORE, [chunk("a", o, vectors[o], text=f"chunk {o} of a") for o in ordinals])
        store.upsert(STORE, [chunk("b", 0, vectors[13])])
        store.refresh(STORE)
        got = store.document_chunks(STORE, "a", and_(acl_filter(["group:everyone"]), documents_filter(["a"])))
        assert [c.ordinal for c in got] == list(range(13))
        assert [c.text for c in got] == [f"chunk {o} of a" for o in range(13)]
        for c in got:
            assert c.vector is not None and c.vector.dtype == np.float32
            assert float(np.linalg.norm(c.vector)) == pytest.approx(1.0, abs=1e-5)
            np.testing.assert_allclose(c.vector, unit(vectors[c.ordinal]), atol=1e-5)
            assert c == chunk("a", c.ordinal, vectors[c.ordinal], text=f"chunk {c.ordinal} of a")

    def test_document_chunks_apply_the_acl_and_never_widen_past_the_document(self, acl_store: Index) -> None:
        for principals, expected in ((["group:x"], ["a#0", "a#1"]), (["user:bob"], []), (["group:y"], [])):
            got = acl_store.document_chunks(STORE, "a", and_(acl_filter(principals), documents_filter(["a"])))
            assert [c.chunk_id for c in got] == expected, principals
        # "b" denies user:alice even though she is in group:x: deny wins here as in every search.
        assert acl_store.document_chunks(STORE, "b", acl_filter(["group:x", "user:alice"])) == []
        # A filter that names other documents (or everything) still yields only the named document's chunks.
        wide = acl_filter(["group:x", "group:everyone", "user:alice"])
        assert {c.document_id for c in acl_store.document_chunks(STORE, "c", wide)} == {"c"}
        assert acl_store.document_chunks(STORE, "a", documents_filter(["c"])) == []
        assert acl_store.document_chunks(STORE, "nope", wide) == []

    def test_document_chunks_follow_writes(self, store: Index) -> None:
        vectors = random_vectors(4, seed=42)
        everyone = acl_filter(["group:everyone"])
        store.upsert(STORE, [chunk("a", o, vectors[o]) for o in range(4)])
        store.upsert(STORE, [chunk("a", o, vectors[o], text="new") for o in range(2)])
        store.refresh(STORE)
        assert [(c.ordinal, c.text) for c in store.document_chunks(STORE, "a", everyone)] == [(0, "new"), (1, "new")]
        store.set_document_acl(STORE, "a", Acl.of(["group:new"]))
        store.refresh(STORE)
        assert store.document_chunks(STORE, "a", everyone) == []
        assert len(store.document_chunks(STORE, "a", acl_filter(["group:new"]))) == 2
        store.delete_document(STORE, "a")
        store.refresh(STORE)
        assert store.document_chunks(STORE, "a", acl_filter(["group:new"])) == []

    @pytest.mark.parametrize("bad", BAD_FILTERS[:4])
    def test_document_chunks_refuse_a_bad_filter_and_an_unknown_store(self, store: Index, bad: Any) -> None:
        with pytest.raises(InvalidArgument):
            store.document_chunks(STORE, "a", bad)
        with pytest.raises(NotFound):
            store.document_chunks("nope", "a", acl_filter(["group:everyone"]))
