"""The lexical (BM25) search every ``Index`` adapter must have, written once; ``IndexContract`` includes it.

Texts are chosen so that the expected order holds under any BM25 (FTS5's,
Lucene's per shard or across shards, the fake's): a word that only one chunk
has ranks that chunk first, and equal chunks tie.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from acl.errors import InvalidArgument, NotFound
from acl.model import Acl
from indexer.index.filters import Filter, acl_filter, and_, documents_filter
from indexer.index.port import ChunkRecord, Index

# The module, not its names: index_contract imports this module while it is being defined.
from tests.contract import index_contract as base

EVERYONE = acl_filter(["group:everyone"])
STORE = "contract"  # base.STORE, which the ``store`` fixture creates

TEXTS = {
    "hr": "Up to five unused vacation days may be carried over into the next year.",
    "it": "Reset your password from the self-service portal; passwords expire every ninety days.",
    "ops": "The on-call engineer acknowledges every page within fifteen minutes.",
    "fin": "Expense reports need an itemised receipt for every purchase over fifty euros.",
    "law": "Contracts are signed by two directors; the legal team keeps the originals.",
}

#: User text that is query syntax somewhere: none of it may ever be an error.
JUNK = [
    '"',
    '""',
    "*",
    "NEAR(",
    "OR",
    ")",
    "(",
    "col:term",
    "text:vacation",
    "vacation AND NOT",
    "-vacation",
    "^vacation",
    '"vacation',
    "vacation*",
    "{vacation}",
    "[vacation]",
    "a OR",
    "NEAR(vacation days, 2)",
    "",
    "   ",
    "the of and to",
    "x" * 10_000,
    "vacation " * 2_000,
    "Ürlaub café naïve 日本語のテキスト 😀 \u202e\x00\x1f",
    "'; DROP TABLE chunks; --",
    "\\",
    "%_",
]


def _ids(hits: list[Any]) -> list[str]:
    return [h.chunk.chunk_id for h in hits]


class LexicalContract:
    """Lexical search: BM25 of the question's words, the filter inside, vectors on the hits."""

    @pytest.fixture
    def texts_store(self, store: Index) -> Index:
        vectors = base.random_vectors(len(TEXTS), seed=31)
        store.upsert(STORE, [base.chunk(d, 0, vectors[i], text=t) for i, (d, t) in enumerate(TEXTS.items())])
        return store

    def test_a_word_only_one_chunk_has_ranks_it_first(self, texts_store: Index) -> None:
        for question, expected in [
            ("How many vacation days can I carry over?", "hr#0"),
            ("I forgot my password", "it#0"),
            ("who signs contracts", "law#0"),
            ("RECEIPT needed?", "fin#0"),
        ]:
            hits = texts_store.lexical(STORE, question, 3, EVERYONE)
            assert hits and hits[0].chunk.chunk_id == expected, (question, _ids(hits))

    def test_scores_are_positive_descending_and_at_most_k(self, texts_store: Index) -> None:
        hits = texts_store.lexical(STORE, "days every password vacation engineer", 10, EVERYONE)
        assert {"hr#0", "it#0", "ops#0"} <= set(_ids(hits))
        assert "law#0" not in _ids(hits)  # no word of the question
        scores = [h.score for h in hits]
        assert all(s > 0 for s in scores) and scores == sorted(scores, reverse=True)
        assert len(texts_store.lexical(STORE, "days every password vacation engineer", 2, EVERYONE)) == 2

    def test_equal_chunks_tie_and_are_ordered_by_chunk_id(self, store: Index) -> None:
        vectors = base.random_vectors(4, seed=32)
        store.upsert(
            STORE, [base.chunk(d, 0, vectors[i], text="quarterly budget review") for i, d in enumerate("dbca")]
        )
        hits = store.lexical(STORE, "budget", 10, EVERYONE)
        assert _ids(hits) == ["a#0", "b#0", "c#0", "d#0"]
        assert len({round(h.score, 4) for h in hits}) == 1

    def test_hits_carry_the_chunk_and_its_unit_vector(self, store: Index) -> None:
        written = base.chunk(
            "doc", 0, np.arange(base.DIM) + 1.0, allow=("group:x",), deny=("user:y",), text="zebra crossing"
        )
        store.upsert(STORE, [written])
        (hit,) = store.lexical(STORE, "zebra", 5, acl_filter(["group:x"]))
        assert hit.chunk == written  # every field but the vector
        assert hit.chunk.vector is not None and hit.chunk.vector.dtype == np.float32
        assert np.allclose(hit.chunk.vector, written.vector, atol=1e-6)  # type: ignore[arg-type]
        assert float(np.linalg.norm(hit.chunk.vector)) == pytest.approx(1.0, abs=1e-5)

    def test_the_filter_is_inside_the_search(self, store: Index) -> None:
        vectors = base.random_vectors(2000, seed=33)
        chunks = [
            base.chunk(
                f"d{row // 4:03d}",
                row % 4,
                vector,
                allow=("group:few",) if row % 100 == 0 else ("group:many",),
                text=f"holiday calendar entry {row}" + (" holiday holiday" if row % 100 else ""),
            )
            for row, vector in enumerate(vectors)
        ]
        store.upsert(STORE, chunks)
        readable = acl_filter(["user:me", "group:few"])
        assert store.count(STORE, readable) == 20
        hits = store.lexical(STORE, "holiday", 10, readable)
        assert len(hits) == 10  # the 1,980 better-scoring chunks of group:many never count toward k
        assert all(h.chunk.acl.allow == {"group:few"} for h in hits)
        assert len(store.lexical(STORE, "holiday", 50, readable)) == 20
        only = and_(EVERYONE, documents_filter(["d007"]))
        assert store.lexical(STORE, "holiday", 10, only) == []
        mine = and_(acl_filter(["group:many"]), documents_filter(["d007", "d042"]))
        assert sorted(_ids(store.lexical(STORE, "holiday", 10, mine))) == [
            f"d{d}#{o}" for d in ("007", "042") for o in range(4)
        ]

    def test_deny_wins(self, store: Index) -> None:
        vectors = base.random_vectors(3, seed=34)
        store.upsert(
            STORE,
            [
                base.chunk("open", 0, vectors[0], allow=("group:x",), text="merger plans"),
                base.chunk("closed", 0, vectors[1], allow=("group:x",), deny=("user:alice",), text="merger plans"),
                base.chunk("other", 0, vectors[2], allow=("user:alice",), deny=("group:x",), text="merger plans"),
            ],
        )
        assert _ids(store.lexical(STORE, "merger", 10, acl_filter(["user:alice", "group:x"]))) == ["open#0"]
        assert _ids(store.lexical(STORE, "merger", 10, acl_filter(["group:x"]))) == ["closed#0", "open#0"]
        assert store.lexical(STORE, "merger", 10, acl_filter([])) == []

    def test_deleted_and_replaced_documents_leave_the_results(self, texts_store: Index) -> None:
        texts_store.delete_document(STORE, "hr")
        assert "hr#0" not in _ids(texts_store.lexical(STORE, "vacation days", 10, EVERYONE))
        vectors = base.random_vectors(2, seed=35)
        texts_store.upsert(STORE, [base.chunk("it", 0, vectors[0], text="Printers live on the third floor.")])
        assert texts_store.lexical(STORE, "password", 10, EVERYONE) == []
        assert _ids(texts_store.lexical(STORE, "printers", 10, EVERYONE)) == ["it#0"]
        texts_store.upsert(STORE, [base.chunk("it", i, vectors[i], text=f"toner cartridge {i}") for i in range(2)])
        assert sorted(_ids(texts_store.lexical(STORE, "toner", 10, EVERYONE))) == ["it#0", "it#1"]
        assert texts_store.lexical(STORE, "printers", 10, EVERYONE) == []

    def test_an_acl_change_is_what_the_search_sees(self, texts_store: Index) -> None:
        texts_store.set_document_acl(STORE, "law", Acl.of(["user:carol"], ["group:everyone"]))
        assert texts_store.lexical(STORE, "contracts", 10, EVERYONE) == []
        assert texts_store.lexical(STORE, "contracts", 10, acl_filter(["user:carol", "group:everyone"])) == []
        (hit,) = texts_store.lexical(STORE, "contracts", 10, acl_filter(["user:carol"]))
        assert hit.chunk.acl == Acl.of(["user:carol"], ["group:everyone"]) and hit.chunk.vector is not None

    @pytest.mark.parametrize("text", JUNK, ids=range(len(JUNK)))
    def test_junk_text_is_never_an_error(self, texts_store: Index, text: str) -> None:
        hits = texts_store.lexical(STORE, text, 5, EVERYONE)
        assert len(hits) <= 5
        if "vacation" in text.lower():
            assert _ids(hits)[:1] == ["hr#0"]

    def test_a_question_without_a_searchable_word_finds_nothing(self, texts_store: Index) -> None:
        for text in ("", "   ", "the of and to what is", "?!", "\n\t"):
            assert texts_store.lexical(STORE, text, 5, EVERYONE) == []

    @pytest.mark.parametrize("k", [0, -1, 1.5, True])
    def test_k_must_be_a_positive_integer(self, texts_store: Index, k: Any) -> None:
        with pytest.raises(InvalidArgument):
            texts_store.lexical(STORE, "vacation", k, EVERYONE)

    def test_a_bad_filter_is_invalid(self, texts_store: Index) -> None:
        bad: Filter = {"field": "title", "operator": "==", "value": "x"}
        with pytest.raises(InvalidArgument):
            texts_store.lexical(STORE, "vacation", 5, bad)

    def test_an_unknown_store_is_not_found(self, index: Index) -> None:
        with pytest.raises(NotFound):
            index.lexical("nope", "vacation", 5, EVERYONE)

    def test_the_cosine_can_be_computed_from_the_hit(self, store: Index) -> None:
        vectors = base.random_vectors(6, seed=36)
        records: list[ChunkRecord] = [
            base.chunk(f"c{i}", 0, v, text=f"invoice number {i}") for i, v in enumerate(vectors)
        ]
        store.upsert(STORE, records)
        query = base.unit(base.random_vectors(1, seed=37)[0])
        dense = {h.chunk.chunk_id: h.score for h in store.exact(STORE, query, 10, EVERYONE)}
        for hit in store.lexical(STORE, "invoice", 10, EVERYONE):
            assert float(np.dot(hit.chunk.vector, query)) == pytest.approx(dense[hit.chunk.chunk_id], abs=1e-5)  # type: ignore[arg-type]
