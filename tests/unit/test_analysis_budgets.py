"""Summaries and comparisons are bounded (issue 37, item 1): a long document is sampled evenly, in order, within
``analysis.max_sentences`` / ``analysis.max_chunks``, and the result says how much of it was considered."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import pytest

from acl.errors import ConfigurationError, DeadlineExceeded
from service.config import load_settings
from service.domain.analysis import ComparisonRequest, SummaryRequest, evenly
from service.domain.limits import Limits
from service.domain.queries import Caller
from service.generation.extractive import ExtractiveGenerator
from service.generation.extractive_summary import quotable_sentences
from service.query.cancellation import Cancellation
from service.query.engine import QueryEngine
from tests.unit.analysis_world import EVERYONE, add_sections, extractive_world
from tests.unit.engine_world import STORE, World

ROOT = Path(__file__).resolve().parents[2]
ALICE = Caller("alice")
#: Real words to write long documents with: the sample corpus and the benchmark questions (~2,400 words).
_SOURCES = [*sorted((ROOT / "examples" / "acme").rglob("*.*")), *sorted((ROOT / "bench" / "quality").glob("*.yaml"))]
WORDS = sorted({w for p in _SOURCES for w in re.findall(r"\b[a-z]{3,12}\b", p.read_text(encoding="utf-8").lower())})


def _paragraphs(chars: int, paragraph_chars: int, seed: int) -> list[str]:
    """About ``chars`` characters of prose without a heading: sentences of 8-20 real words, in paragraphs."""
    rng = random.Random(seed)
    paragraphs: list[str] = []
    size = 0
    while size < chars:
        sentences: list[str] = []
        while sum(len(s) + 1 for s in sentences) < paragraph_chars:
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20)))
            sentences.append(words[0].upper() + words[1:] + ".")
        paragraphs.append(" ".join(sentences))
        size += len(paragraphs[-1]) + 2
    return paragraphs


def _long_document(world: World, document_id: str, chars: int, paragraph_chars: int, seed: int) -> list[str]:
    """A document of one section (no heading of its own), indexed one chunk per paragraph."""
    paragraphs = _paragraphs(chars, paragraph_chars, seed)
    add_sections(world, document_id, [("", paragraphs)], EVERYONE)
    return paragraphs


def _engine(world: World, limits: Limits) -> QueryEngine:
    return QueryEngine(
        repository=world.repo,
        index=world.index,
        embedder_for=lambda _: world.embedder,
        generator=ExtractiveGenerator(),
        limits=limits,
    )


def test_a_700_kb_text_without_headings_is_summarised_from_an_even_sample_of_its_sentences() -> None:
    world = extractive_world()
    paragraphs = _long_document(world, "long", 700_000, 2000, seed=37)
    everything = quotable_sentences("\n\n".join(paragraphs))  # one section: the chunks' text, in order
    assert len(everything) > 2 * Limits().max_sentences  # what made one request take 2.36 GB and 34.5 s

    summary = world.engine.summarize(ALICE, SummaryRequest(STORE, "long", "long"))
    budget = Limits().max_sentences
    long_note = f"the document is long: {budget} of {len(everything)} sentences were considered"
    assert long_note in summary.warnings
    considered = [everything[i] for i in evenly(len(everything), budget)]
    quoted = summary.sections[0].summary
    assert quoted and all(sentence in considered for sentence in _sentences_of(quoted, considered))
    assert summary.summary.removesuffix(" [1]") in considered  # the section's most central sentence

    small = _engine(world, Limits(max_sentences=300)).summarize(ALICE, SummaryRequest(STORE, "long", "short"))
    assert f"the document is long: 300 of {len(everything)} sentences were considered" in small.warnings


def _sentences_of(quoted: str, candidates: list[str]) -> list[str]:
    """The candidates ``quoted`` is made of, in order (every quoted sentence is one of them, verbatim)."""
    found = [c for c in dict.fromkeys(candidates) if c in quoted]
    assert sum(len(f) for f in found) + len(found) - 1 >= len(quoted)
    return found


def test_a_short_document_is_summarised_whole_without_a_warning() -> None:
    world = extractive_world()
    _long_document(world, "short", 20_000, 2000, seed=1)
    summary = world.engine.summarize(ALICE, SummaryRequest(STORE, "short", "medium"))
    assert not any("is long" in w for w in summary.warnings)


def test_a_comparison_aligns_an_even_sample_of_each_long_documents_chunks() -> None:
    world = extractive_world()
    a = _long_document(world, "a", 300_000, 400, seed=2)
    b = _long_document(world, "b", 100_000, 400, seed=3)
    budget = 200
    assert len(a) > Limits().max_compared_chunks > len(b) > budget
    engine = _engine(world, Limits(max_compared_chunks=budget))
    comparison = engine.compare(ALICE, ComparisonRequest(STORE, ("a", "b"), "release notes"))
    assert f"document a is long: {budget} of {len(a)} chunks were considered" in comparison.warnings
    assert f"document b is long: {budget} of {len(b)} chunks were considered" in comparison.warnings
    considered = {d: {f"{d}#{i}" for i in evenly(n, budget)} for d, n in (("a", len(a)), ("b", len(b)))}
    assert comparison.sources and all(c.chunk_id in considered[c.document_id] for c in comparison.sources)

    default = world.engine.compare(ALICE, ComparisonRequest(STORE, ("a", "b")))  # 400 chunks each at most
    assert [w for w in default.warnings if "is long" in w] == [
        f"document a is long: 400 of {len(a)} chunks were considered"
    ]


def test_the_budgets_are_settings_that_fail_loudly(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("analysis:\n  max_sentences: 500\n  max_chunks: 50\n")
    assert (load_settings(config).analysis.max_sentences, load_settings(config).analysis.max_chunks) == (500, 50)
    config.write_text("analysis:\n  max_sentences: 1\n")
    with pytest.raises(ConfigurationError, match=r"analysis\.max_sentences"):
        load_settings(config)


def test_evenly_spreads_a_budget_over_the_whole_in_order() -> None:
    assert evenly(5, 10) == [0, 1, 2, 3, 4]
    picked = evenly(7000, 2000)
    assert len(picked) == 2000 == len(set(picked)) and picked == sorted(picked)
    gaps = {b - a for a, b in pairwise(picked)}
    assert picked[0] == 0 and gaps == {3, 4} and picked[-1] + 4 >= 7000  # from start to end, no stretch left out


class Ticks:
    """A clock that moves one second each time it is read: the deadline passes after so many checks."""

    def __init__(self) -> None:
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return float(self.reads)


@pytest.mark.parametrize("checks", [2, 5, 9])
def test_a_summary_and_a_comparison_stop_at_the_check_after_their_deadline(checks: int) -> None:
    world = extractive_world()
    _long_document(world, "long", 300_000, 2000, seed=11)
    _long_document(world, "other", 150_000, 300, seed=12)
    work: list[Callable[[Cancellation], object]] = [
        lambda cancel: world.engine.summarize(ALICE, SummaryRequest(STORE, "long"), cancel=cancel),
        lambda cancel: world.engine.compare(ALICE, ComparisonRequest(STORE, ("long", "other")), cancel=cancel),
    ]
    for run in work:
        ticks = Ticks()
        with pytest.raises(DeadlineExceeded):
            run(Cancellation(checks + 0.5, ticks))
        assert ticks.reads == checks + 1  # the work checked between its pieces, and stopped at the first late one


def test_a_language_models_summary_of_a_long_document_reads_an_even_sample_of_its_chunks() -> None:
    from tests.fakes_service import RecordingGenerator
    from tests.unit.engine_world import make_world

    generator = RecordingGenerator(context_tokens=2000)
    world = make_world(context_tokens=2000)
    paragraphs = _long_document(world, "long", 120_000, 400, seed=5)
    budget = 40
    assert len(paragraphs) > 4 * budget
    world.engine = QueryEngine(
        repository=world.repo,
        index=world.index,
        embedder_for=lambda _: world.embedder,
        generator=generator,
        limits=Limits(max_compared_chunks=budget),
    )
    summary = world.engine.summarize(ALICE, SummaryRequest(STORE, "long", "short"))
    assert summary.llm_called and not summary.extractive
    assert f"the document is long: {budget} of {len(paragraphs)} chunks were considered" in summary.warnings
    sampled = {paragraphs[i] for i in evenly(len(paragraphs), budget)}
    shown = "\n\n".join(c.text for p in generator.prompts for c in p.chunks if p.question.startswith("Summarise"))
    read = [p for p in paragraphs if p in shown]
    assert read and set(read) <= sampled  # no chunk outside the sample reached the model
    assert sum(len(c.chunk_ids) for c in summary.sections) == budget  # the sections are the ones it read
