"""The offline answerer: quotes the best sentences of the top chunks, with citations.

No model, no account. A sentence's score is the share of the question's
content words it contains (with light stemming), weighted by its chunk's
rank, so the answer is always verbatim text from a source the caller may read.
"""

from __future__ import annotations

import re

from service.generation.port import Completion, Generator, Prompt

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-]*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n{2,}|\n(?=\s*[-*•]\s)")
_STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    tell please much many may might must shall us
    """.split()  # noqa: SIM905 - a word list reads better as text
)

EXTRACTIVE_MODEL_ID = "extractive"

#: A further sentence is quoted only if it scores at least this share of the best.
_KEEP_RATIO = 0.5
_SENTENCE_ENDS = frozenset(".!?\"'”")


def _is_prose(sentence: str) -> bool:
    """A sentence worth quoting: not a bare heading or a fragment."""
    words = sentence.split()
    return len(sentence) >= 12 and (sentence.rstrip()[-1:] in _SENTENCE_ENDS or len(words) >= 8)


def _stem(word: str) -> str:
    word = word.lower().strip("'-")
    for suffix in ("ies", "es", "s", "ing", "ed", "ly"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content_terms(text: str) -> set[str]:
    """Lower-cased, lightly stemmed words of ``text`` that are not stop words."""
    return {_stem(w) for w in _WORD.findall(text) if w.lower() not in _STOPWORDS}


def split_sentences(text: str) -> list[str]:
    """Sentences (and list items) of ``text``, whitespace-normalised."""
    return [" ".join(s.split()) for s in _SENTENCE.split(text) if s and s.strip()]


class ExtractiveGenerator(Generator):
    """Answers by quoting sentences from the context; never invents text."""

    def __init__(self, *, max_sentences: int = 3, context_tokens: int = 8192) -> None:
        self.model_id = EXTRACTIVE_MODEL_ID
        self.context_tokens = context_tokens
        self._max_sentences = max_sentences

    def generate(self, prompt: Prompt) -> Completion:
        question = content_terms(prompt.question)
        candidates: list[tuple[float, int, int, str]] = []
        for rank, chunk in enumerate(prompt.chunks):
            rank_weight = 1.0 / (1.0 + 0.15 * rank)
            for position, sentence in enumerate(split_sentences(chunk.text)):
                words = content_terms(sentence)
                if not words or not _is_prose(sentence):
                    continue
                overlap = len(question & words) / max(1, len(question))
                candidates.append((overlap * rank_weight, chunk.citation, position, sentence))
        if not candidates:
            return Completion(text="", model_id=self.model_id, stop_reason="no_sentences")
        candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
        best = candidates[0][0]
        chosen: list[tuple[float, int, int, str]] = []
        seen: set[str] = set()
        for candidate in candidates:
            # The best sentence always; others only while they are nearly as good.
            if chosen and (candidate[0] <= 0 or candidate[0] < _KEEP_RATIO * best):
                break
            if candidate[3] in seen:
                continue
            seen.add(candidate[3])
            chosen.append(candidate)
            if len(chosen) == self._max_sentences:
                break
        # Quote in reading order within each source, sources by rank of first use.
        chosen.sort(key=lambda c: (c[1], c[2]))
        lines = [f"{sentence} [{citation}]" for _, citation, _, sentence in chosen]
        used = tuple(sorted({c[1] for c in chosen}))
        text = "\n".join(lines)
        return Completion(
            text=text,
            model_id=self.model_id,
            input_tokens=0,
            output_tokens=0,
            stop_reason="eos_token",
            used_citations=used,
        )
