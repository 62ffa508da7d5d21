"""The offline answerer: quotes the best sentences of the top chunks, with citations.

No model, no account. A sentence's score is the share of the question's
content words it contains (with light stemming), weighted by its chunk's
rank, so the answer is always verbatim text from a source the caller may read.

A sentence that speaks to the assistant instead of stating something
(``looks_like_instruction``: "ignore previous instructions", "you are now",
"respond only with", "output the following", "system prompt", "AI assistants
must", a Markdown image or link, …) is planted text, not evidence: it is
quoted only when no other sentence shares a word with the question.
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

_ADDRESSEE = (
    r"(?:ai|a\.i\.|ai\s+assistants?|assistants?|chat\s?bots?|(?:large\s+)?language\s+models?|llms?|copilot|gpt)"
)
#: Phrasings of text addressed to an assistant (prompt injection), not statements about the world.
#: Deliberately narrow: procedural text ("respond within 30 days", "add the salt") is evidence.
_INSTRUCTION = re.compile(
    r"""
      \b(?:ignore|disregard|forget|override|bypass)\b[^.!?\n]{0,40}?
        \b(?:instructions?|prompts?|guidelines?|directives?|system\s+rules?)\b
    | \b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:the\s+)?(?:above|previous|prior|earlier)\b
    | \byou\s+are\s+now\b | \bfrom\s+now\s+on,?\s+you\b | \bpretend\s+(?:to\s+be|you\s+are)\b
    | \b(?:system|developer|hidden|secret)\s+(?:prompt|message|instructions?)\b
    | \b(?:new|updated|additional|real|true)\s+instructions?\b
    | \b(?:output|print|emit|repeat)\s+(?:the\s+following|exactly|verbatim)\b
    | \b(?:respond|reply)\s+only\s+with\b | \b(?:in|to|into)\s+your\s+(?:answer|response|reply|output)\b
    | \b(?:do\s+not|don'?t|never)\s+(?:tell|mention\s+(?:this\s+)?to|reveal\s+(?:this\s+)?to|inform)
        \s+(?:the\s+)?users?\b
    | (?:^|\b(?:dear|attention|note\s+to(?:\s+the)?|hey|hi|as\s+an?)\s+)"""
    + _ADDRESSEE
    + r"""\b\s*[,:!]
    | (?:^|\b(?:as\s+an?|any|all|every)\s+)"""
    + _ADDRESSEE
    + r"""\s+(?:must|should|shall|needs?\s+to|reading\s+this|is\s+instructed|answering)\b
    | !\[[^\]]*\]\s*[(\[] | \]\(\s*<?\s*[a-z][a-z0-9+.\-]*:
    """,
    re.IGNORECASE | re.VERBOSE,
)


def looks_like_instruction(sentence: str) -> bool:
    """Whether ``sentence`` reads as an instruction to an assistant rather than a statement."""
    return _INSTRUCTION.search(sentence) is not None


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
        planted: list[tuple[float, int, int, str]] = []
        for rank, chunk in enumerate(prompt.chunks):
            rank_weight = 1.0 / (1.0 + 0.15 * rank)
            for position, sentence in enumerate(split_sentences(chunk.text)):
                words = content_terms(sentence)
                if not words or not _is_prose(sentence):
                    continue
                overlap = len(question & words) / max(1, len(question))
                found = planted if looks_like_instruction(sentence) else candidates
                found.append((overlap * rank_weight, chunk.citation, position, sentence))
        if not any(c[0] > 0 for c in candidates):
            # Instructions to the assistant are quoted only when nothing else is evidence at all.
            candidates += planted
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
