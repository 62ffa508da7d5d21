from __future__ import annotations

from service.generation.extractive import ExtractiveGenerator, split_sentences
from service.generation.port import ContextChunk, Prompt


def prompt(question: str, *texts: str) -> Prompt:
    chunks = tuple(ContextChunk(i + 1, f"d{i}", f"T{i}", t, 0.5) for i, t in enumerate(texts))
    return Prompt(question, chunks, "{context}{question}", "extractive")


def test_quotes_the_best_sentence_verbatim_with_its_citation() -> None:
    completion = ExtractiveGenerator().generate(
        prompt(
            "How many vacation days do employees get?",
            "Heading only\n\nEmployees receive 25 days of paid vacation per year. The cafeteria opens at noon.",
            "Vacation requests go through the HR portal.",
        )
    )
    first = completion.text.splitlines()[0]
    assert first == "Employees receive 25 days of paid vacation per year. [1]"
    assert "cafeteria" not in completion.text and "Heading only" not in completion.text
    assert 1 in completion.used_citations


def test_never_invents_text() -> None:
    texts = ("Alpha beta gamma delta epsilon.", "Zeta eta theta iota kappa lambda.")
    completion = ExtractiveGenerator().generate(prompt("gamma theta", *texts))
    for line in completion.text.splitlines():
        sentence = line.rsplit(" [", 1)[0]
        assert any(sentence in t for t in texts)


def test_split_sentences() -> None:
    assert split_sentences("One thing. Two things!\n\nThree") == ["One thing.", "Two things!", "Three"]
