"""Hybrid retrieval through the engine: the store's fusion method, cosine scores, the threshold, the candidates."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from acl.model import Acl
from indexer.index import Filter, SearchHit
from service.domain.queries import MultiDocumentQuery, VectorQuery
from service.query.context import QueryContext
from service.query.guarded import Within
from service.query.retrieval import CANDIDATES
from tests.fakes import FakeIndex
from tests.unit.engine_world import STORE, World, make_world

EVERYONE = Acl.of(["group:everyone"])
QUESTION = "Which form do contractors sign?"


def _unit(vector: np.ndarray) -> np.ndarray:
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def _revector(world: World, document_id: str, vector: np.ndarray) -> None:
    """Give every chunk of the document ``vector`` in the index (its text unchanged)."""
    chunks = [
        h.chunk
        for h in world.index.exact(STORE, vector, 100, {"field": "document_id", "operator": "==", "value": document_id})
    ]
    world.index.upsert(STORE, [dataclasses.replace(c, vector=vector) for c in chunks])


class CountingIndex(FakeIndex):
    """The fake index, recording the k of every lexical search."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[int] = []

    def lexical(self, store_id: str, text: str, k: int, filter: Filter) -> list[SearchHit]:
        self.asked.append(k)
        return super().lexical(store_id, text, k, filter)


@pytest.fixture
def world() -> World:
    """Two documents: ``words`` shares the question's rare words but points away from it; ``meaning`` has none
    of its words but the question's very vector."""
    w = make_world(max_chunks=1, level=0.5, min_threshold=0.0, max_threshold=0.5, index=CountingIndex())
    question = w.embedder.embed_query(QUESTION)
    w.add("words.md", ["Contractors sign form C-12 before starting."], EVERYONE)
    w.add("meaning.md", ["Everyone signs nothing here."], EVERYONE)
    away = _unit(question + 2.0 * _unit(np.roll(question, 7) - question))
    _revector(w, "words.md", away)
    _revector(w, "meaning.md", question)
    return w


def _ask(world: World, query: VectorQuery | MultiDocumentQuery) -> list[tuple[str, float]]:
    answer = world.ask("anyone", query)
    return [(c.document_id, c.score) for c in answer.chunks]


def _cosine(world: World, document_id: str) -> float:
    question = world.embedder.embed_query(QUESTION)
    (hit,) = world.index.exact(STORE, question, 1, {"field": "document_id", "operator": "==", "value": document_id})
    return hit.score


@pytest.mark.parametrize(
    ("fusion", "weight", "first"),
    [("dense", 0.3, "meaning.md"), ("lexical", 0.3, "words.md"), ("rrf", 0.5, "words.md"), ("rrf", 0.0, "meaning.md")],
)
def test_the_store_s_fusion_decides_and_every_score_is_the_cosine(
    world: World, fusion: str, weight: float, first: str
) -> None:
    world.repo.update_store(STORE, fusion=fusion, lexical_weight=weight)
    for query in (
        VectorQuery(STORE, QUESTION, level=0),
        MultiDocumentQuery(STORE, QUESTION, ("words.md", "meaning.md"), level=0),
    ):
        got = _ask(world, query)
        assert [d for d, _ in got] == [first]
        assert got[0][1] == pytest.approx(_cosine(world, first), abs=1e-5)


def test_the_threshold_is_on_the_cosine_even_for_a_hit_only_lexical_search_found(world: World) -> None:
    world.repo.update_store(STORE, fusion="lexical")
    assert _cosine(world, "words.md") < 0.25  # the threshold at level 0.5
    answer = world.ask("anyone", VectorQuery(STORE, QUESTION, level=0.5))
    assert answer.no_relevant_document and not answer.chunks
    world.repo.update_store(STORE, fusion="rrf", lexical_weight=0.5)
    assert [c.document_id for c in world.ask("anyone", VectorQuery(STORE, QUESTION, level=0.5)).chunks] == [
        "meaning.md"
    ]


def test_timings_have_a_lexical_lap_only_when_it_ran(world: World) -> None:
    world.repo.update_store(STORE, fusion="rrf")
    assert {"search", "lexical", "access"} <= set(world.ask("anyone", VectorQuery(STORE, QUESTION, level=0)).timings_ms)
    world.repo.update_store(STORE, fusion="dense")
    assert "lexical" not in world.ask("anyone", VectorQuery(STORE, QUESTION, level=0)).timings_ms


def test_candidates_are_more_than_k_and_the_scope_cuts(world: World) -> None:
    for i in range(40):
        world.add(f"extra{i:02d}.md", [f"Contractors and forms, note {i}."], EVERYONE)
    world.repo.update_store(STORE, fusion="rrf")
    store = world.repo.get_store(STORE)
    assert store is not None
    ctx = QueryContext(store, QUESTION, 0.0, frozenset({"group:everyone"}))
    vector, found = world.engine._retrieval.candidates(  # the reranker's input, before the cut
        ctx, None, 1, Within(), exact=False
    )
    np.testing.assert_array_equal(vector, world.embedder.embed_query(QUESTION))
    assert len(found) == CANDIDATES
    assert len({h.chunk.chunk_id for h in found}) == CANDIDATES
    assert len(_ask(world, VectorQuery(STORE, QUESTION, level=0, max_chunks=3))) == 3


def test_a_revocation_the_index_has_not_seen_is_dropped_and_the_search_widens(world: World) -> None:
    """The index copy still lets everyone read 100 documents the database now denies, all ranked above the
    readable ones: they never come back, and the search widens past them to every readable match."""
    for i in range(100):
        world.add(
            f"secret{i:02d}.md",
            [f"Contractors sign form C-12, secret {i}."],
            Acl.of(["group:board"]),
            index_acl=EVERYONE,
        )
    for i in range(5):
        world.add(f"open{i}.md", [f"A form, page {i}."], EVERYONE)
    world.repo.update_store(STORE, fusion="lexical")
    assert isinstance(world.index, CountingIndex)
    world.index.asked.clear()
    got = _ask(world, VectorQuery(STORE, "contractors sign form", level=0, max_chunks=10))
    assert sorted(d for d, _ in got) == ["open0.md", "open1.md", "open2.md", "open3.md", "open4.md", "words.md"]
    assert world.index.asked == [60, 240]


def test_hits_below_the_threshold_do_not_widen_the_lexical_search(world: World) -> None:
    """An unanswerable question that shares a common word with 100 chunks costs one search, not five."""
    question = world.embedder.embed_query(QUESTION)
    away = _unit(np.roll(question, 11) - question)
    for i in range(100):
        world.add(f"form{i:03d}.md", [f"Form number {i}."], EVERYONE)
    for document_id in [*(f"form{i:03d}.md" for i in range(100)), "words.md", "meaning.md"]:
        _revector(world, document_id, away)
    assert isinstance(world.index, CountingIndex)
    for fusion in ("rrf", "lexical"):
        world.repo.update_store(STORE, fusion=fusion)
        world.index.asked.clear()
        answer = world.ask("anyone", VectorQuery(STORE, QUESTION, level=0.9))
        assert answer.no_relevant_document
        assert world.index.asked == [60]


def test_the_caller_is_never_told_about_chunks_they_cannot_read(world: World) -> None:
    world.add("board.md", ["Contractors sign form C-12 in the board minutes."], Acl.of(["group:board"]))
    world.repo.update_store(STORE, fusion="lexical")
    mine = world.ask("anyone", VectorQuery(STORE, QUESTION, level=0, max_chunks=5))
    assert all(c.document_id != "board.md" for c in mine.chunks)
    world.access.add_member("group:board", "user:bee", "test")
    theirs = world.ask("bee", VectorQuery(STORE, QUESTION, level=0, max_chunks=5))
    assert "board.md" in {c.document_id for c in theirs.chunks}


def test_a_chunk_record_keeps_its_text_whatever_the_fusion(world: World) -> None:
    world.repo.update_store(STORE, fusion="weighted", lexical_weight=0.7)
    answer = world.ask("anyone", VectorQuery(STORE, QUESTION, level=0, max_chunks=2))
    texts = {c.document_id: c.text for c in answer.chunks}
    assert texts == {
        "words.md": "Contractors sign form C-12 before starting.",
        "meaning.md": "Everyone signs nothing here.",
    }
