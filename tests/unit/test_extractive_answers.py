"""The extractive answer quotes what answers the question: whole units, completed, merged, cited."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.generation.answer_scoring import Evidence, Question, Scorer
from service.generation.citations import check_citations
from service.generation.extractive import ExtractiveGenerator
from service.generation.prompt import ContextChunk, Prompt
from service.generation.quotes import dangling
from service.generation.text_units import split_sentences, split_units
from tests.answer_cases import CASES, AnswerCase

_MARKS = re.compile(r"(?:\s*\[\d+\])+$")


def prompt(question: str, *texts: str) -> Prompt:
    chunks = tuple(ContextChunk(i + 1, f"d{i}", f"T{i}", t, 0.5) for i, t in enumerate(texts))
    return Prompt(question, chunks, "{context}{question}", "extractive")


def answer(question: str, *texts: str) -> str:
    return ExtractiveGenerator().generate(prompt(question, *texts)).text


def quoted_lines(text: str) -> list[str]:
    """The answer's lines without citation marks and code fences."""
    lines = [_MARKS.sub("", line) for line in text.splitlines()]
    return [line for line in lines if line.strip() and line.strip() != "```"]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_answer_quotes_the_answering_term(case: AnswerCase) -> None:
    text = answer(case.question, *case.chunks)
    assert case.key in text, text
    # Verbatim, cited, short, and never ending on a fragment.
    words = " ".join(" ".join(chunk.split()) for chunk in case.chunks)
    for line in quoted_lines(text):
        assert " ".join(line.split()) in words or line.strip() in "\n".join(case.chunks), line
    assert check_citations(text, len(case.chunks)).ok, text
    lines = text.splitlines()
    for line, after in zip(lines, [*lines[1:], ""], strict=True):
        # A fragment ("so that", ":") is quoted only with what completes it right after.
        if dangling(_MARKS.sub("", line)):
            assert after == "```" or after.startswith("- "), text
    assert len(text.splitlines()) <= 18


def test_the_sentence_that_answers_beats_sentences_that_share_more_words() -> None:
    # The report: the top chunk says it, and the answer quoted three other sentences.
    case = next(c for c in CASES if c.name == "issue-example")
    assert answer(case.question, *case.chunks) == "Up to five unused days may be carried over. [1]"


def test_the_best_sentence_of_the_second_chunk_beats_a_weak_one_of_the_first() -> None:
    text = answer(
        "What is the refund deadline for cancelled trips?",
        "Trips are booked through the travel portal. Cancelled trips should be reported to the travel team.",
        "Refunds for cancelled trips must be claimed within 60 days of the cancellation.",
    )
    assert text.splitlines()[0] == "Refunds for cancelled trips must be claimed within 60 days of the cancellation. [2]"


def test_of_two_equal_sentences_the_higher_ranked_chunk_wins() -> None:
    text = answer("When does the office open?", "The office opens at 7:00.", "The office opens at 8:00.")
    assert text.splitlines()[0] == "The office opens at 7:00. [1]"


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How long is the trial period?", "The trial period lasts six months."),
        ("Which option sets the trial period?", "Set --trial-months to change the trial period."),
        ("Can I end the trial period early?", "You may end the trial period early with one week's notice."),
    ],
)
def test_the_kind_of_question_picks_the_kind_of_sentence(question: str, expected: str) -> None:
    text = answer(
        question,
        "The trial period is described in the contract. The trial period lasts six months. "
        "Set --trial-months to change the trial period. You may end the trial period early with one week's notice.",
    )
    assert text.splitlines()[0] == f"{expected} [1]"


def test_a_code_block_is_quoted_whole_with_the_sentence_that_introduces_it() -> None:
    text = answer(
        "How do I list the users in the database?",
        "To list the users in the database, run:\n\nSELECT id, name\nFROM users\n    WHERE active = 1\nORDER BY name;"
        "\n\nThe users table has one row per account.",
    )
    assert text == (
        "To list the users in the database, run: [1]\n```\nSELECT id, name\nFROM users\n    WHERE active = 1\n"
        "ORDER BY name;\n```"
    )


def test_a_fenced_block_keeps_its_lines_and_blank_lines_do_not_cut_it() -> None:
    units = split_units("Configure it like this:\n```\nserver:\n  port: 9000\n\n  host: 0.0.0.0\n```\nDone.")
    assert [(u.kind, u.lines) for u in units] == [
        ("sentence", ("Configure it like this:",)),
        ("code", ("server:", "  port: 9000", "  host: 0.0.0.0")),
        ("sentence", ("Done.",)),
    ]


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("Run these commands:\n$ docqa index\n$ docqa serve", [("sentence", 1), ("code", 2)]),
        ("server:\n  port: 9000\n  host: 0.0.0.0", [("code", 3)]),
        ("SELECT id\nFROM users\nWHERE active = 1;", [("code", 3)]),
        ("Install it with\n    pip install docqa\nand then run it.", [("sentence", 1), ("code", 1), ("sentence", 1)]),
        ("- first item\n  wrapped onto a second line\n\n- second item", [("list", 2)]),
        ("1. Open the portal.\n\n2. Click Save.\n\nThat is all.", [("list", 2), ("sentence", 1)]),
        ("Name | Default\n\nport | 8080", [("table", 2)]),
        ("zstd --train samples/* -o dict", [("code", 1)]),
        ("% make test", [("code", 1)]),
        ("cmake", [("sentence", 1)]),  # a heading that names a program is no command
        # A numbered list's commands stay inside it (the loaders write each as a block of its own).
        ("1. Create the dictionary\n\nzstd --train in/* -o dict\n\n2. Use it\n\nzstd -D dict FILE", [("list", 4)]),
        # Prose wrapped at line ends (PDFs, soft breaks) is prose, joined.
        (
            "The value of the option is read at start-up; see the\nmanual for details and the\nlist of settings.",
            [("sentence", 1)],
        ),
    ],
)
def test_units_are_code_lists_tables_or_sentences(text: str, kinds: list[tuple[str, int]]) -> None:
    assert [(u.kind, len(u.lines)) for u in split_units(text)] == kinds


def test_a_sentence_that_refers_back_comes_with_the_sentence_it_refers_to() -> None:
    text = answer(
        "What status is returned when the ABI argument is wrong?",
        "ffi_prep_cif returns a libffi status code, of type ffi_status. This will be either FFI_OK if everything "
        "worked properly, or FFI_BAD_ABI if the abi parameter is invalid. The cif must be prepared once.",
    )
    assert text.splitlines()[0] == (
        "ffi_prep_cif returns a libffi status code, of type ffi_status. This will be either FFI_OK if everything "
        "worked properly, or FFI_BAD_ABI if the abi parameter is invalid. [1]"
    )


def test_a_word_inside_an_identifier_counts_less_than_the_word_itself() -> None:
    question = Question.read("cmake build")
    inside, itself = Evidence.of("CMAKE_BUILD_TYPE is Release."), Evidence.of("A cmake build is provided.")
    scorer = Scorer(question, [inside, itself])
    assert scorer.score(itself) > scorer.score(inside) > 0


def test_a_command_on_its_own_is_code_and_is_cited_after_its_fence() -> None:
    text = answer("Which command reindexes a store?", "docqa index --store handbook --full")
    assert text == "```\ndocqa index --store handbook --full\n```\n[1]"


def test_a_list_is_quoted_whole_and_a_long_one_by_the_items_that_match() -> None:
    text = answer(
        "What documents do I need to bring?",
        "Please bring the following documents:\n\n- your passport\n\n- your signed contract\n\n- your bank details",
    )
    assert (
        text
        == "Please bring the following documents: [1]\n- your passport\n- your signed contract\n- your bank details"
    )
    items = "\n\n".join(f"- colour {n}: shade {n}" for n in range(30))
    long = answer("Which shade is colour 17?", items)
    assert long.splitlines()[0] == "- colour 17: shade 17 [1]"


def test_a_table_is_quoted_with_its_header() -> None:
    rows = "\n\n".join(f"setting_{n} | {n} | meaning {n}" for n in range(20))
    text = answer("What is the default of setting_7?", f"Setting | Default | Meaning\n\n{rows}")
    assert text.splitlines()[0] == "Setting | Default | Meaning" and "setting_7 | 7 | meaning 7" in text


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("Use a fast disk, e.g. NVMe storage. It helps.", ["Use a fast disk, e.g. NVMe storage.", "It helps."]),
        ("Fruit, i.e. Apples, keep well. Buy some.", ["Fruit, i.e. Apples, keep well.", "Buy some."]),
        ("Pens, paper etc. Are in the cupboard.", ["Pens, paper etc. Are in the cupboard."]),
        ("See Fig. 3 for the layout. It is new.", ["See Fig. 3 for the layout.", "It is new."]),
        ("Form No. 12 is needed. Ask HR.", ["Form No. 12 is needed.", "Ask HR."]),
        ("Version 2.19.1 works. So does 3.0.", ["Version 2.19.1 works.", "So does 3.0."]),
        ("It costs 3.5 euros. Pay at once.", ["It costs 3.5 euros.", "Pay at once."]),
        ("Call `stop. Now` first. Then wait.", ["Call `stop. Now` first.", "Then wait."]),
        ("Ask J. Smith. He knows.", ["Ask J. Smith.", "He knows."]),
        ("One thing. Two things!\n\nThree", ["One thing.", "Two things!", "Three"]),
    ],
)
def test_sentences_are_not_cut_at_abbreviations_numbers_or_code(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


def test_a_sentence_that_ends_on_a_fragment_is_completed_or_left_out() -> None:
    # "so that" at the chunk's end: the overlapping chunk holds the whole sentence.
    case = next(c for c in CASES if c.name == "so-that-cut")
    text = answer(case.question, *case.chunks)
    assert text == (
        "The journal is flushed to disk every second so that a crash loses at most one second of writes. [2]"
    )
    # A fragment nothing completes is not quoted; the next best sentence is.
    text = answer(
        "How are backups encrypted?",
        "Backups are encrypted at rest. Backups are encrypted with AES-256 so that",
        "Backups are stored in two regions.",
    )
    assert text.splitlines()[0] == "Backups are encrypted at rest. [1]" and "so that" not in text


def test_a_sentence_ending_on_a_colon_goes_on_into_what_follows() -> None:
    text = answer("How do I install the extra?", "To install the extra, run:\n\npip install 'docqa[watsonx]'")
    assert text == "To install the extra, run: [1]\n```\npip install 'docqa[watsonx]'\n```"


def test_a_sentence_in_overlapping_chunks_is_quoted_once_citing_both() -> None:
    shared = "Up to five unused days may be carried over to the next calendar year."
    text = answer(
        "How many unused days may be carried over?",
        f"Employees receive 25 days of paid vacation per year. {shared}",
        "Public holidays are not vacation days.",
        f"{shared} Carried-over days expire on March 31.",
    )
    assert text.count(shared) == 1 and f"{shared} [1][3]" in text


def test_a_nearly_identical_sentence_is_merged_too() -> None:
    text = answer(
        "How many unused days may be carried over?",
        "Up to five unused days may be carried over to the next calendar year.",
        "Up to five unused days may be carried over into the next calendar year.",
    )
    assert text == "Up to five unused days may be carried over to the next calendar year. [1][2]"


def test_at_most_three_quotes_best_first_and_in_reading_order_within_a_chunk() -> None:
    text = answer(
        "vacation days carry over",
        "Vacation days carry over in March. Vacation days carry over within the team. Vacation days carry over "
        "at most twice.",
        "Vacation days carry over for managers.",
    )
    assert text.splitlines() == [
        "Vacation days carry over in March. [1]",
        "Vacation days carry over within the team. [1]",
        "Vacation days carry over at most twice. [1]",
    ]


def test_no_shared_word_quotes_the_first_sentence_of_the_best_chunk() -> None:
    text = answer(
        "Whereabouts of the kettle?", "Heading\n\nLunch is served at noon in the canteen.", "Other text here."
    )
    assert text == "Lunch is served at noon in the canteen. [1]"


def test_an_empty_context_gives_no_sentences() -> None:
    completion = ExtractiveGenerator().generate(prompt("anything?", "Heading"))
    assert completion.text == "" and completion.stop_reason == "no_sentences"


_PIECES = st.sampled_from(
    [*"abcdef ABC.,:;!?-*`|[]()0123456789_\n", "\n\n", "so that", "e.g.", "```", "- ", "1. ", "$ ", "SELECT ", " | "]
)
_TEXT = st.lists(_PIECES, max_size=40).map("".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=4), _TEXT)
def test_any_text_gives_an_answer_of_its_own_words_with_valid_citations(texts: list[str], question: str) -> None:
    text = answer(question, *texts)
    assert check_citations(text, len(texts)).invalid == ()
    source = " ".join(" ".join(t.split()) for t in texts)
    for line in quoted_lines(text):
        assert " ".join(line.split()) in source or any(line.strip() in t for t in texts), line
