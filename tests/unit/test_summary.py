"""Summaries (issue 18, item 4): extractive offline, whole or map-reduce with a language model, NOT_FOUND as queries."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acl.errors import InvalidArgument, NotFound
from acl.model import Acl
from service.domain.analysis import SummaryLength, SummaryRequest, parse_length
from service.domain.queries import Caller
from service.generation.extractive_summary import ExtractiveSummarizer, lexrank, most_central
from service.query.sections import sections
from tests.fakes_service import RecordingGenerator
from tests.unit.analysis_world import EVERYONE, FINANCE, HANDBOOK, add_sections, extractive_world, with_generator
from tests.unit.engine_world import STORE, make_world

ALICE = Caller("alice")


def test_lexrank_puts_the_sentence_most_others_resemble_first() -> None:
    hub = np.array([1.0, 1.0, 1.0, 0.0]) / np.sqrt(3)
    rows = np.array([hub, [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], dtype=np.float64)
    scores = lexrank(rows)
    assert scores.sum() == pytest.approx(1.0)
    assert int(np.argmax(scores)) == 0
    assert scores[4] == min(scores)  # linked to nothing else
    assert most_central(scores, 2) == sorted(most_central(scores, 2))  # document order


def test_the_extractive_summary_quotes_central_sentences_and_leaves_out_the_stray_ones() -> None:
    picks = ExtractiveSummarizer().sections([" ".join(p) for _, p in HANDBOOK], 2)
    quoted = " ".join(s for p in picks for s in p.sentences)
    for stray in ("soup", "parking garage", "painting"):
        assert stray not in quoted
    assert all(p.sentences for p in picks)
    assert "vacation days" in picks[0].best.lower() and "badge" in picks[2].best.lower()


def test_an_offline_summary_is_extractive_in_document_order_and_cites_every_section() -> None:
    world = extractive_world()
    add_sections(world, "handbook", HANDBOOK, EVERYONE)
    summary = world.engine.summarize(ALICE, SummaryRequest(STORE, "handbook", "medium"))
    assert summary.extractive and summary.method == "extractive" and not summary.llm_called
    assert any("extractive" in w and "not written by a language model" in w for w in summary.warnings)
    text = " ".join(world.docs["handbook"])
    quoted = re.split(r"\s*\[\d+\]\s*", summary.summary)
    positions = [text.index(q) for q in quoted if q]  # every sentence is quoted verbatim ...
    assert positions == sorted(positions)  # ... in the document's order
    assert [s.citation for s in summary.sections] == [1, 2, 3]
    assert summary.sections_covered == 3 and all(s.cited and s.summary for s in summary.sections)
    assert summary.sections[0].heading_path == ("HANDBOOK", "Vacation")
    assert summary.sections[0].chunk_ids == ("handbook#0", "handbook#1") and summary.sections[0].pages == (1, 2)
    assert {c.chunk_id for c in summary.sources} == {f"handbook#{i}" for i in range(4)}
    assert [d.document_id for d in summary.documents] == ["handbook"]


def test_a_short_summary_quotes_fewer_sentences_than_a_long_one() -> None:
    world = extractive_world()
    many = [
        (f"Part {i}", [f"Rule {i} says badges open door {i}. Door {i} closes at night for rule {i}."]) for i in range(9)
    ]
    add_sections(world, "rules", many, EVERYONE)
    short = world.engine.summarize(ALICE, SummaryRequest(STORE, "rules", SummaryLength.SHORT))
    long = world.engine.summarize(ALICE, SummaryRequest(STORE, "rules", "LONG"))
    assert short.sections_covered == SummaryLength.SHORT.sentences < long.sections_covered == 9


@pytest.mark.parametrize("bad", ["tiny", "", 3, ["short"]])
def test_a_bad_length_is_invalid(bad: object) -> None:
    with pytest.raises(InvalidArgument, match="short, medium, long"):
        parse_length(bad)


def test_unreadable_and_nonexistent_documents_read_the_same() -> None:
    world = with_generator(make_world(), RecordingGenerator())
    add_sections(world, "secret", HANDBOOK, FINANCE)
    # A store the caller may read nothing of is not found, as an unknown store is: not "document not found".
    unreadable_store = []
    for store in (STORE, "nope"):
        with pytest.raises(NotFound) as caught:
            world.engine.summarize(ALICE, SummaryRequest(store, "secret"))
        unreadable_store.append(caught.value.message.replace(repr(store), "'X'"))
    assert unreadable_store == ["store 'X' not found"] * 2
    add_sections(world, "public", HANDBOOK, EVERYONE)  # now alice may read something in the store
    messages = []
    for document_id in ("secret", "missing"):
        with pytest.raises(NotFound) as caught:
            world.engine.summarize(ALICE, SummaryRequest(STORE, document_id))
        messages.append(caught.value.message.replace(document_id, "X"))
    assert messages[0] == messages[1]
    assert world.generator.prompts == []  # type: ignore[attr-defined]
    with pytest.raises(NotFound, match="store"):
        world.engine.summarize(ALICE, SummaryRequest("nope", "secret"))
    with pytest.raises(InvalidArgument):
        world.engine.summarize(ALICE, SummaryRequest(STORE, ""))


def test_a_revoked_document_is_not_found_although_the_index_still_allows_it() -> None:
    generator = RecordingGenerator()
    world = with_generator(make_world(), generator)
    add_sections(world, "handbook", HANDBOOK, FINANCE, index_acl=EVERYONE)  # the index copy is stale
    with pytest.raises(NotFound):
        world.engine.summarize(ALICE, SummaryRequest(STORE, "handbook"))
    assert generator.prompts == []


def test_a_document_that_fits_is_summarised_whole_in_one_prompt_citing_sections() -> None:
    generator = RecordingGenerator()
    world = with_generator(make_world(), generator)
    add_sections(world, "handbook", HANDBOOK, EVERYONE)
    add_sections(world, "other", HANDBOOK, EVERYONE)
    summary = world.engine.summarize(ALICE, SummaryRequest(STORE, "handbook", "short"))
    assert summary.method == "whole" and not summary.extractive and summary.llm_called
    (prompt,) = generator.prompts
    assert [c.document_id for c in prompt.chunks] == ["handbook"] * 3
    assert "Vacation" in prompt.chunks[0].title and "at most 5 sentences" in prompt.question
    assert summary.summary == "answer from [1] [2] [3]" and summary.sections_covered == 3
    assert summary.model_id == "recording"


def test_a_long_document_is_mapped_by_section_then_reduced() -> None:
    generator = RecordingGenerator(context_tokens=260)
    world = with_generator(make_world(context_tokens=260), generator)
    add_sections(world, "handbook", HANDBOOK, EVERYONE)
    summary = world.engine.summarize(ALICE, SummaryRequest(STORE, "handbook"))
    assert summary.method == "map_reduce" and summary.llm_called
    maps = [p for p in generator.prompts if p.question.startswith("Summarise the document section")]
    final = generator.prompts[-1]
    assert len(maps) >= 3 and all(len(p.chunks) == 1 for p in maps)  # one section (part) per map step
    assert generator.prompts[: len(maps)] == maps  # every map before any reduce
    assert all(c.document_id == "handbook" for p in generator.prompts for c in p.chunks)
    assert all(s.summary.startswith("answer from") for s in summary.sections)  # citations stripped, text kept
    assert summary.sections_covered >= 1
    assert set(re.findall(r"\[(\d+)\]", summary.summary)) <= {"1", "2", "3"}
    assert final.question.startswith("Write a summary of the whole document")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(allowed=st.lists(st.booleans(), min_size=3, max_size=3), stale=st.booleans())
def test_only_readable_documents_are_summarised_and_only_their_text_reaches_the_generator(
    allowed: list[bool], stale: bool
) -> None:
    generator = RecordingGenerator()
    world = with_generator(make_world(), generator)
    for i, ok in enumerate(allowed):
        acl = EVERYONE if ok else FINANCE
        add_sections(
            world,
            f"d{i}",
            [(f"H{i}", [f"Document {i} says topic {i} matters. Topic {i} is long."])],
            acl,
            index_acl=EVERYONE if stale else acl,
        )
    for i, ok in enumerate(allowed):
        before = len(generator.prompts)
        if not ok:
            with pytest.raises(NotFound):
                world.engine.summarize(ALICE, SummaryRequest(STORE, f"d{i}"))
            assert len(generator.prompts) == before
            continue
        summary = world.engine.summarize(ALICE, SummaryRequest(STORE, f"d{i}"))
        assert {c.document_id for c in summary.sources} <= {f"d{i}"}
        assert all(c.document_id == f"d{i}" for p in generator.prompts[before:] for c in p.chunks)


def test_sections_group_by_heading_and_stay_bounded() -> None:
    world = extractive_world()
    records = add_sections(
        world, "many", [(f"S{i}", [f"Text {i} here and more."]) for i in range(30)], Acl.of(["user:x"])
    )
    assert len(sections(records)) == 30
    assert len(sections(records, limit=7)) <= 7
    assert [c.chunk_id for s in sections(records, limit=7) for c in s.chunks] == [r.chunk_id for r in records]
