"""The offline answerer: quotes what answers the question from the top chunks, each quote cited.

No model, no account; the answer is always verbatim text from sources the
caller may read. Each chunk is cut into units (``text_units``: sentences,
and code blocks, lists and tables that are never cut); each unit is scored
against the question (``answer_scoring``) and weighted by its chunk's rank,
gently, so the best-matching sentence of the second chunk beats a weak one
of the first. The answer quotes the best unit and up to two more that score
nearly as well (``quotes``):

- a sentence that ends on a fragment ("so that", "such as", ":", "and") is
  completed with what follows it in its chunk (or in an overlapping chunk),
  else not quoted; one that announces code or a list quotes it too; one that
  starts "This …" / "It …" comes with the sentence before it, and a matching
  sentence after it that starts so comes along;
- the same sentence in overlapping chunks (or one nearly the same) is quoted
  once and cites every chunk it is in: "… carried over. [1][3]";
- the best quote comes first; quotes of one chunk stay in reading order.

A sentence that speaks to the assistant instead of stating something
(``looks_like_instruction``) is planted text, not evidence: it is quoted only
when no other unit shares a word with the question.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from itertools import chain

from service.generation.answer_scoring import Evidence, Question, Scorer
from service.generation.planted import looks_like_instruction
from service.generation.port import Completion, Generator, Prompt
from service.generation.quotes import Candidate, Quote, announces, complete, dangling, near_duplicates, refers_back
from service.generation.text_units import split_sentences, split_units

__all__ = [
    "EXTRACTIVE_MODEL_ID",
    "ExtractiveGenerator",
    "content_terms",
    "looks_like_instruction",
    "split_sentences",
]

EXTRACTIVE_MODEL_ID = "extractive"

#: A further quote only if it scores at least this share of the best.
_KEEP_RATIO = 0.75
#: How much each step down the ranking weighs a chunk's units (1 / (1 + step × rank)).
_RANK_STEP = 0.12
#: A chunk's first unit that starts in lower case is the tail of a sentence cut by the chunker.
_FRAGMENT_WEIGHT = 0.6
#: Lines an answer stops growing at (code, lists and tables are long).
_MAX_LINES = 14
_SENTENCE_ENDS = frozenset(".!?\"'”:")


def _quotable(candidate: Candidate) -> bool:
    """A unit worth quoting: code, a list, a table, or a sentence that is not a bare heading or fragment."""
    unit = candidate.unit
    if unit.kind != "sentence":
        return len(unit.text.strip()) >= 4
    sentence = unit.lines[0]
    words = sentence.split()
    return len(sentence) >= 12 and (sentence.rstrip()[-1:] in _SENTENCE_ENDS or len(words) >= 8)


class ExtractiveGenerator(Generator):
    """Answers by quoting units of the context; never invents text."""

    def __init__(self, *, max_sentences: int = 3, context_tokens: int = 8192) -> None:
        """``max_sentences``: quotes at most (a sentence, or code, a list or a table with its lead-in)."""
        self.model_id = EXTRACTIVE_MODEL_ID
        self.context_tokens = context_tokens
        self._max_quotes = max_sentences

    def generate(self, prompt: Prompt) -> Completion:
        question = Question.read(prompt.question)
        chunks = self._candidates(prompt)
        everything = [c for units in chunks for c in units]
        scorer = Scorer(question, (c.evidence for c in everything))
        for candidate in everything:
            weight = 1.0 / (1.0 + _RANK_STEP * candidate.rank)
            unit = candidate.unit
            if unit.position == 0 and unit.kind == "sentence" and unit.lines[0][:1].islower():
                weight *= _FRAGMENT_WEIGHT
            candidate.score = scorer.score(candidate.evidence)
            candidate.score_lines(scorer)
            candidate.score *= weight
        quotes = self._choose(chunks, everything)
        if not quotes:
            return Completion(text="", model_id=self.model_id, stop_reason="no_sentences")
        # The best quote's chunk first; within a chunk, reading order.
        order: dict[int, int] = {}
        for quote in quotes:
            order.setdefault(quote.first.citation, len(order))
        quotes.sort(key=lambda q: (order[q.first.citation], q.first.unit.position))
        return Completion(
            text="\n".join(q.render() for q in quotes),
            model_id=self.model_id,
            input_tokens=0,
            output_tokens=0,
            stop_reason="eos_token",
            used_citations=tuple(sorted({n for q in quotes for n in q.citations})),
        )

    @staticmethod
    def _candidates(prompt: Prompt) -> list[list[Candidate]]:
        chunks: list[list[Candidate]] = []
        for rank, chunk in enumerate(prompt.chunks):
            units = split_units(chunk.text)
            chunks.append(
                [Candidate(rank, chunk.citation, u, Evidence.of(u.text, code=u.kind == "code")) for u in units]
            )
        return chunks

    def _choose(self, chunks: list[list[Candidate]], everything: list[Candidate]) -> list[Quote]:
        quotable = [c for c in everything if _quotable(c)]
        scored = sorted((c for c in quotable if c.score > 0), key=lambda c: (-c.score, c.rank, c.unit.position))
        # Whether a unit is planted is asked lazily, best first, only as far as the answer reads: the check costs.
        evidence = (c for c in scored if not c.planted)
        first = next(evidence, None)
        ranked: Iterable[Candidate]
        if first is not None:
            ranked = chain((first,), evidence)
        else:
            # Instructions to the assistant are quoted only when nothing else is evidence at all;
            # when nothing shares a word with the question, the best chunk's first quotable unit.
            unscored = next((c for c in quotable if not c.planted), None)
            ranked = scored or ([unscored] if unscored else quotable[:1])
        quotes: list[Quote] = []
        used: set[int] = set()  # ids of candidates quoted or merged into a quote
        best = 0.0
        for candidate in ranked:
            if len(quotes) == self._max_quotes or sum(len(q.render().splitlines()) for q in quotes) >= _MAX_LINES:
                break
            if quotes and candidate.score < _KEEP_RATIO * best:
                break
            if id(candidate) in used:
                continue
            quote = self._quote(candidate, chunks, everything, used)
            if quote is None:
                continue
            best = best or quote.score
            quotes.append(quote)
        return quotes

    @staticmethod
    def _quote(
        candidate: Candidate, chunks: list[list[Candidate]], everything: list[Candidate], used: set[int]
    ) -> Quote | None:
        """The quote that starts at ``candidate``, completed; None when it would end on a fragment."""
        units = chunks[candidate.rank]
        parts = [candidate]
        citations = {candidate.citation}
        position = candidate.unit.position
        if position > 0 and candidate.unit.kind == "sentence" and refers_back(candidate.unit.lines[0]):
            before = units[position - 1]  # "This …" needs the sentence it refers to
            if before.unit.kind == "sentence" and id(before) not in used and _quotable(before) and not before.planted:
                parts.insert(0, before)
        following = position + 1
        while parts[-1].unit.kind == "sentence" and len(parts) < 3 and following < len(units):
            sentence, after = parts[-1].unit.lines[0], units[following]
            if after.planted or id(after) in used:
                break
            goes_on = after.unit.kind == "sentence" and after.score > 0 and refers_back(after.unit.lines[0])
            if not (dangling(sentence) or goes_on or (after.unit.kind != "sentence" and announces(sentence))):
                break
            parts.append(after)
            following += 1
        last = parts[-1]
        if last.unit.kind == "sentence" and not complete(last.unit.lines[0]) and following >= len(units):
            # The chunk ends inside the sentence: an overlapping chunk may hold all of it.
            whole = _longer_version(last, everything)
            if whole is not None:
                parts[-1] = whole
                citations.add(whole.citation)
        if parts[-1].unit.kind == "sentence" and dangling(parts[-1].unit.lines[0]):
            return None
        for part in parts:
            used.add(id(part))
            for other in everything:
                # A near-duplicate shares the part's words with the question: it scores too (unless nothing does).
                if id(other) in used or other.unit.kind != part.unit.kind or (part.score > 0 and other.score <= 0):
                    continue
                if near_duplicates(part, other) and not other.planted:
                    used.add(id(other))
                    citations.add(other.citation)
        return Quote(parts, citations, max(p.score for p in parts))


def _longer_version(fragment: Candidate, everything: list[Candidate]) -> Candidate | None:
    text = fragment.unit.lines[0]
    for other in everything:
        sentence = other.unit.lines[0]
        longer = other.unit.kind == "sentence" and len(sentence) > len(text) and sentence.startswith(text)
        if longer and complete(sentence) and not other.planted:
            return other
    return None


# -------------------------------------------------- the words of a text (the test embedder reads them too)

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-]*")
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


@functools.lru_cache(maxsize=1 << 16)  # called for every word of every candidate chunk; words repeat
def _stem(word: str) -> str:
    word = word.lower().strip("'-")
    for suffix in ("ies", "es", "s", "ing", "ed", "ly"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content_terms(text: str) -> set[str]:
    """Lower-cased, lightly stemmed words of ``text`` that are not stop words."""
    return {_stem(w) for w in _WORD.findall(text) if w.lower() not in _STOPWORDS}
