"""Citations in generated answers: checked against the sources sent, alone and inside the query engine."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acl.model import Acl
from service.domain.queries import NO_ANSWER_GENERATED, Answer, Caller, VectorQuery
from service.domain.store import DEFAULT_PROMPT_TEMPLATE
from service.generation.citations import check_citations
from service.generation.extractive import ExtractiveGenerator
from service.generation.port import Completion, Generator
from service.generation.prompt import SYSTEM_INSTRUCTIONS, ContextChunk, Prompt
from service.query.engine import QueryEngine
from tests.unit.engine_world import STORE, World, make_world

# ------------------------------------------------------------------ check_citations alone


def test_valid_citations_leave_the_answer_as_it_is() -> None:
    answer = "Revenue rose by 12 percent [1]. Costs fell [2][3]. Both are audited [1, 3]. Margins held [1-2]."
    check = check_citations(answer, 3)
    assert check.text == answer and check.ok and check.warnings() == ()
    assert check.valid == (1, 2, 3) and check.sentences == 4


@pytest.mark.parametrize(
    ("answer", "cleaned", "missing"),
    [
        ("Revenue rose [0].", "Revenue rose.", (0,)),
        ("Revenue rose [9].", "Revenue rose.", (9,)),
        ("Revenue rose [1][9].", "Revenue rose [1].", (9,)),
        ("Revenue rose [2,3].", "Revenue rose [2].", (3,)),
        ("Revenue rose [2, 3] and costs fell [1].", "Revenue rose [2] and costs fell [1].", (3,)),
        ("Revenue rose [1-3].", "Revenue rose [1][2].", (3,)),
        ("Revenue rose [1–3].", "Revenue rose [1][2].", (3,)),
        ("[7] Revenue rose [1].", "Revenue rose [1].", (7,)),
    ],
)
def test_citations_outside_the_sources_are_removed(answer: str, cleaned: str, missing: tuple[int, ...]) -> None:
    check = check_citations(answer, 2)
    assert check.text == cleaned
    assert check.missing == missing and len(check.invalid) == 1
    assert check.warnings()[0] == (
        f"removed citations of sources that do not exist: {', '.join(f'[{n}]' for n in missing)} "
        "(its sources are [1] to [2])"
    )
    assert check.warnings(removed=False)[0].startswith("the answer cites sources that do not exist")


def test_an_absurd_range_is_removed_whole() -> None:
    check = check_citations("Revenue rose [1-100000].", 3)
    assert check.text == "Revenue rose." and check.invalid == ("[1-100000]",)
    assert "[1-100000]" in check.warnings()[0]


def test_sentences_without_a_citation_are_named() -> None:
    check = check_citations("Revenue rose by 12 percent [1]. Costs fell sharply. Margins held. [2]", 2)
    assert check.uncited == ("Costs fell sharply.",) and check.sentences == 3
    assert check.warnings() == ("1 of 3 sentences of the answer cite no source",)
    assert check_citations("Revenue rose. Costs fell.", 2).warnings() == ("the answer cites no source",)


@pytest.mark.parametrize(
    "answer",
    [
        "The list holds items[0] to items[9] [1].",  # an index is no citation
        "See [the handbook](https://intranet/handbook) [1].",  # a link's text
        "See [the handbook][9] for more [1].",  # a reference link's label
        "Run `grep [9] file` to find it [1].",  # code
        "Run this [1]:\n```\nx = values[9]\n[9]\n```",  # a fenced block
    ],
)
def test_brackets_that_are_not_citations_stay(answer: str) -> None:
    check = check_citations(answer, 1)
    assert check.text == answer and check.invalid == () and check.valid == (1,)


def test_a_list_with_its_lead_in_is_one_sentence_cited_by_any_line() -> None:
    answer = "Bring these documents [1]:\n- your passport\n- your contract\nThe badge comes later [2]."
    assert check_citations(answer, 2).ok
    check = check_citations("Bring these documents:\n- your passport\n- your contract", 2)
    assert check.uncited == ("Bring these documents: - your passport - your contract",)


def test_the_extractive_answerer_always_cites_valid_sources() -> None:
    texts = (
        "To start the server, run:\n\ndocqa serve --port 9000\n\nThe server reads its settings at start-up.",
        "The following options exist:\n\n- --port: the port\n\n- --host: the host",
        "Setting | Default\n\nport | 8080\n\nhost | 0.0.0.0",
    )
    chunks = tuple(ContextChunk(i + 1, f"d{i}", "T", t, 0.5) for i, t in enumerate(texts))
    for question in ("How do I start the server?", "Which options exist?", "What is the default port?"):
        text = ExtractiveGenerator().generate(Prompt(question, chunks, "{context}{question}", "m")).text
        assert check_citations(text, 3).ok, text


@given(st.text(alphabet="[]0123-, ab.`\n", max_size=60), st.integers(0, 4))
def test_what_is_left_cites_only_sources_that_exist(answer: str, sources: int) -> None:
    check = check_citations(answer, sources)
    assert check_citations(check.text, sources).invalid == ()
    assert all(1 <= n <= sources for n in check.valid)


def test_a_negative_number_of_sources_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="sources"):
        check_citations("x", -1)


def test_the_prompt_asks_for_a_citation_in_every_sentence() -> None:
    assert "every sentence" in SYSTEM_INSTRUCTIONS.lower() and "[1][3]" in SYSTEM_INSTRUCTIONS
    assert "every sentence" in DEFAULT_PROMPT_TEMPLATE.lower() and "[2][3]" in DEFAULT_PROMPT_TEMPLATE


# ------------------------------------------------------------------ inside the query engine


class Replying(Generator):
    """Answers every prompt with a fixed text, whole or in pieces."""

    def __init__(self, reply: str) -> None:
        self.model_id = "replying"
        self.context_tokens = 8192
        self.reply = reply
        self.prompts: list[Prompt] = []

    def generate(self, prompt: Prompt) -> Completion:
        self.prompts.append(prompt)
        return Completion(text=self.reply, model_id=self.model_id)

    def stream(self, prompt: Prompt) -> Iterator[str]:
        self.prompts.append(prompt)
        yield from self.reply.split(" ")[:1]
        yield from (" " + word for word in self.reply.split(" ")[1:])


def ask(reply: str, *, streamed: bool = False) -> tuple[Answer, Replying, list[str]]:
    world: World = make_world(max_chunks=4)
    world.add(
        "vacation.md",
        ["Employees receive 25 days of paid vacation per year.", "Unused vacation days may be carried over."],
        Acl.of(["group:everyone"]),
    )
    generator = Replying(reply)
    engine = QueryEngine(
        repository=world.repo, index=world.index, embedder_for=lambda _: world.embedder, generator=generator
    )
    pieces: list[str] = []
    query = VectorQuery(STORE, "vacation days per year", level=0)
    answer = engine.ask(Caller("bob"), query, on_text=pieces.append if streamed else None)
    assert len(generator.prompts[-1].chunks) == 2 == len(answer.chunks)
    return answer, generator, pieces


def test_an_answer_with_valid_citations_has_no_warnings() -> None:
    answer, _, _ = ask("Employees get 25 days [1]. Unused days carry over [2].")
    assert answer.answer == "Employees get 25 days [1]. Unused days carry over [2]."
    assert answer.warnings == () and answer.to_dict()["warnings"] == []


@pytest.mark.parametrize(("bad", "kept"), [("[0]", ""), ("[9]", ""), ("[2,3]", " [2]"), ("[1-3]", " [1][2]")])
def test_citations_of_sources_not_sent_are_removed_and_reported(bad: str, kept: str) -> None:
    answer, _, _ = ask(f"Employees get 25 days {bad}. Unused days carry over [2].")
    assert answer.answer == f"Employees get 25 days{kept}. Unused days carry over [2]."
    assert "do not exist" in answer.warnings[0]
    # A sentence that lost its only citation now cites no source, and says so.
    assert answer.warnings[1:] == (() if kept else ("1 of 2 sentences of the answer cite no source",))
    assert answer.to_dict()["warnings"] == list(answer.warnings)


def test_sentences_without_citations_are_reported() -> None:
    answer, _, _ = ask("Employees get 25 days. Unused days carry over [2].")
    assert answer.answer == "Employees get 25 days. Unused days carry over [2]."
    assert answer.warnings == ("1 of 2 sentences of the answer cite no source",)


def test_an_answer_of_nothing_but_bad_citations_is_no_answer() -> None:
    answer, _, _ = ask("[7]")
    assert answer.answer == NO_ANSWER_GENERATED and answer.warnings


def test_a_streamed_answer_keeps_what_was_sent_and_says_what_is_wrong() -> None:
    answer, _, pieces = ask("Employees get 25 days [9]. Unused days carry over [2].", streamed=True)
    assert "".join(pieces) == answer.answer == "Employees get 25 days [9]. Unused days carry over [2]."
    assert answer.warnings == (
        "the answer cites sources that do not exist: [9] (its sources are [1] to [2])",
        "1 of 2 sentences of the answer cite no source",
    )
