"""Comparisons (issue 18, item 5): topics aligned across documents, NOT_FOUND for the whole request, bad input."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acl.errors import InvalidArgument, NotFound
from service.domain.analysis import ComparisonRequest
from service.domain.queries import Caller
from service.generation.topic_alignment import align, rank, statement
from tests.fakes_service import RecordingGenerator
from tests.unit.analysis_world import EVERYONE, FINANCE, add_sections, extractive_world, with_generator
from tests.unit.engine_world import STORE, make_world

ALICE = Caller("alice")
OLD = [
    ("Vacation", ["Employees get twenty vacation days per year. Vacation days carry over for one year."]),
    ("Expenses", ["Travel expenses are reimbursed within thirty days with receipts."]),
    ("Parking", ["The parking garage is free for employees with a badge."]),
]
NEW = [
    ("Leave", ["Employees get twenty-five vacation days per year. Vacation days never carry over."]),
    ("Travel", ["Travel expenses are reimbursed within ten days with receipts."]),
    ("Remote work", ["Remote work is allowed two days per week with approval."]),
]


def _unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_alignment_on_constructed_vectors_pairs_topics_and_finds_the_unique_ones() -> None:
    a = np.stack([_unit(1, 0, 0, 0), _unit(0, 1, 0, 0), _unit(0, 0, 1, 0)])
    b = np.stack([_unit(0, 1, 0.1, 0), _unit(1, 0.1, 0, 0), _unit(0, 0, 0, 1)])
    topics = align([a, b], floor=0.8)
    by_members = {tuple(sorted((d, c) for d, (c, _) in t.best.items())) for t in topics}
    assert by_members == {((0, 0), (1, 1)), ((0, 1), (1, 0)), ((0, 2),), ((1, 2),)}
    ranked = rank(topics, None)
    assert [len(t.best) for t, _ in ranked] == [2, 2, 1, 1]  # shared topics first
    asked = rank(topics, _unit(0, 0, 0, 1))
    assert asked[0][0].best == {1: (2, pytest.approx(1.0))} and asked[0][1] == pytest.approx(1.0)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), documents=st.integers(2, 5), floor=st.floats(0.1, 0.95))
def test_every_chunk_lands_in_one_topic_and_each_entry_is_its_documents_nearest(
    seed: int, documents: int, floor: float
) -> None:
    rng = np.random.default_rng(seed)
    matrices = []
    for _ in range(documents):
        m = rng.standard_normal((int(rng.integers(0, 6)), 8)).astype(np.float32)
        matrices.append(m / np.linalg.norm(m, axis=1, keepdims=True) if len(m) else np.zeros((0, 8), np.float32))
    topics = align(matrices, floor)
    assert sum(t.size for t in topics) == sum(len(m) for m in matrices)
    for t in topics:
        for d, (c, score) in t.best.items():
            assert score == pytest.approx(float(matrices[d][c] @ t.centroid), abs=1e-5)


def test_statement_prefers_the_sentence_the_other_documents_share() -> None:
    text = "The lobby has a painting on the wall. Employees get twenty vacation days per year."
    assert (
        statement(text, ["Employees get twenty-five vacation days."]) == "Employees get twenty vacation days per year."
    )
    assert statement(text, [], "what is on the lobby wall?").startswith("The lobby")


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        (("old",), "2 to 5"),
        (("a", "b", "c", "d", "e", "f"), "2 to 5"),
        (("old", "old"), "twice"),
        (("old", ""), "non-empty"),
        ((), "2 to 5"),
        (("old", "new\udcff"), "lone surrogate"),  # the CLI's argument for a byte that is not UTF-8
    ],
)
def test_bad_document_lists_are_invalid_and_nothing_is_read(ids: tuple[str, ...], message: str) -> None:
    generator = RecordingGenerator()
    world = with_generator(make_world(), generator)
    add_sections(world, "old", OLD, EVERYONE)
    with pytest.raises(InvalidArgument, match=message):
        world.engine.compare(ALICE, ComparisonRequest(STORE, ids))
    assert generator.prompts == []


def test_one_unreadable_or_unknown_id_makes_the_whole_comparison_not_found() -> None:
    generator = RecordingGenerator()
    world = with_generator(make_world(), generator)
    add_sections(world, "old", OLD, EVERYONE)
    add_sections(world, "new", NEW, EVERYONE)
    add_sections(world, "secret", NEW, FINANCE, index_acl=EVERYONE)  # revoked, index copy still open
    messages = []
    for other in ("secret", "missing"):
        with pytest.raises(NotFound) as caught:
            world.engine.compare(ALICE, ComparisonRequest(STORE, ("old", other, "new")))
        messages.append(caught.value.message.replace(other, "X"))
    assert messages[0] == messages[1]
    assert generator.prompts == []


def test_an_offline_comparison_quotes_each_document_per_topic_and_cites_every_statement() -> None:
    world = extractive_world()
    add_sections(world, "old", OLD, EVERYONE)
    add_sections(world, "new", NEW, EVERYONE)
    result = world.engine.compare(ALICE, ComparisonRequest(STORE, ("old", "new")))
    assert result.extractive and not result.llm_called and "extractive comparison" in result.warnings[0]
    shared = [t for t in result.topics if t.only_in is None]
    unique = {t.only_in for t in result.topics if t.only_in is not None}
    assert shared and unique <= {"old", "new"}
    vacation = next(t for t in shared if "vacation" in t.entries[0].statement.lower())
    assert [e.document_id for e in vacation.entries] == ["old", "new"]
    assert {e.chunk.chunk_id for e in vacation.entries} == {"old#0", "new#0"}
    for line in result.comparison.splitlines():
        assert re.search(r"\[\d+\]", line)  # every statement cites its chunk
    assert [c.chunk_id for c in result.sources] == [e.chunk.chunk_id for t in result.topics for e in t.entries]
    assert all(result.sources[e.citation - 1].chunk_id == e.chunk.chunk_id for t in result.topics for e in t.entries)


def test_a_question_ranks_the_topics_and_the_model_sees_only_the_aligned_chunks() -> None:
    generator = RecordingGenerator()
    world = with_generator(make_world(), generator)
    add_sections(world, "old", OLD, EVERYONE)
    add_sections(world, "new", NEW, EVERYONE)
    add_sections(world, "bystander", NEW, EVERYONE)
    result = world.engine.compare(ALICE, ComparisonRequest(STORE, ("old", "new"), "travel expenses reimbursed"))
    assert "travel" in result.topics[0].label.lower() or "expenses" in result.topics[0].label.lower()
    relevances = [t.relevance for t in result.topics]
    assert relevances == sorted(relevances, reverse=True)  # type: ignore[type-var]
    (prompt,) = generator.prompts
    assert {c.document_id for c in prompt.chunks} == {"old", "new"}
    assert "travel expenses reimbursed" in prompt.question
    assert not result.extractive and result.llm_called and result.comparison.startswith("answer from [1]")


@pytest.mark.parametrize(("question", "message"), [("what changed?\ud800", "lone surrogate"), ("a\x00b", "control")])
def test_a_comparison_question_that_no_database_can_store_is_invalid(question: str, message: str) -> None:
    generator = RecordingGenerator()
    world = with_generator(make_world(), generator)
    add_sections(world, "old", OLD, EVERYONE)
    with pytest.raises(InvalidArgument, match=message):
        world.engine.compare(ALICE, ComparisonRequest(STORE, ("old", "new"), question))
    assert generator.prompts == []
