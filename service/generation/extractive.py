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
from collections.abc import Callable, Iterable, Sequence
from itertools import chain

from service.generation.answer_scoring import Evidence, Question, Scorer
from service.generation.planted import looks_like_instruction
from service.generation.port import Completion, Generator
from service.generation.prompt import Prompt
from service.generation.quote_spans import boilerplate, build_quote, orphan, quotable
from service.generation.quotes import Candidate, Quote
from service.generation.text_units import split_sentences, split_units

__all__ = [
    "EXTRACTIVE_MODEL_ID",
    "ExtractiveGenerator",
    "content_terms",
    "looks_like_instruction",
    "split_sentences",
]

EXTRACTIVE_MODEL_ID = "extractive"
#: The cosine of a question with each of some texts, in an embedding model: (model, question, texts).
Similarity = Callable[[str, str, Sequence[str]], Sequence[float]]

#: A further quote only if it scores at least this share of the best.
_KEEP_RATIO = 0.75
#: How much each step down the ranking weighs a chunk's units (1 / (1 + step × rank)).
_RANK_STEP = 0.12
#: A chunk's first unit that starts in lower case is the tail of a sentence cut by the chunker.
_FRAGMENT_WEIGHT = 0.6
#: Units (the best by their words) whose meaning is compared with the question's by default; how much a cosine
#: counts above its floor; the characters of a unit compared (a long one is judged by its start).
SEMANTIC_UNITS = 6
_SEMANTIC_WEIGHT = 3.0
_SEMANTIC_FLOOR = 0.2
_SEMANTIC_CHARS = 160
#: How much a sentence that points back at nothing quotable weighs ("This shows …" after a heading).
_ORPHAN_WEIGHT = 0.5
#: How much a sentence of the context that is itself a question weighs.
_QUESTION_WEIGHT = 0.3
#: How much a sentence weighs that many chunks of the context repeat (``quote_spans.boilerplate``).
_BOILERPLATE_WEIGHT = 0.5
#: How much the sentence a definition starts with counts toward its later sentences' scores.
_TOPIC_WEIGHT = 0.6
#: How much a unit the previous answer of the conversation quoted weighs.
_REPEAT_WEIGHT = 0.3
#: Lines an answer stops growing at (code, lists and tables are long).
_MAX_LINES = 14


class ExtractiveGenerator(Generator):
    """Answers by quoting units of the context; never invents text."""

    quotes_verbatim = True

    def __init__(
        self,
        *,
        max_sentences: int = 3,
        context_tokens: int = 8192,
        similarity: Similarity | None = None,
        semantic_units: int = SEMANTIC_UNITS,
    ) -> None:
        """``max_sentences``: quotes at most (a sentence, or code, a list or a table with its lead-in).
        ``similarity(model, question, texts)``: the cosine of the question with each text in the store's
        embedding model; the ``semantic_units`` best units by their words are compared so. Without it units are
        scored on their words alone."""
        self.model_id = EXTRACTIVE_MODEL_ID
        self.context_tokens = context_tokens
        self._max_quotes = max_sentences
        self._similarity = similarity
        self._semantic_units = semantic_units

    def generate(self, prompt: Prompt) -> Completion:
        question = Question.read(prompt.question)
        chunks = self._candidates(prompt)
        said = " ".join(prompt.earlier[-1].answer.split()) if prompt.earlier else ""
        everything = [c for units in chunks for c in units]
        common = boilerplate(everything)
        scorer = Scorer(question, (c.evidence for c in everything))
        for candidate in everything:
            weight = 1.0 / (1.0 + _RANK_STEP * candidate.rank)
            unit = candidate.unit
            if unit.position == 0 and unit.kind == "sentence" and unit.lines[0][:1].islower():
                weight *= _FRAGMENT_WEIGHT
            candidate.score = scorer.score(candidate.evidence)
            candidate.score_lines(scorer)
            if unit.head is not None and candidate.score > 0:
                # A later sentence of a definition ("The default is five minutes.") speaks of what it defines.
                candidate.score += _TOPIC_WEIGHT * scorer.score(chunks[candidate.rank][unit.head].evidence)
            candidate.score *= weight
            if orphan(candidate, chunks[candidate.rank]):
                candidate.score *= _ORPHAN_WEIGHT
            if unit.kind == "sentence" and unit.text.rstrip().endswith("?"):
                candidate.score *= _QUESTION_WEIGHT  # a question in the text (an FAQ heading) asks, not answers
            if unit.kind == "sentence" and " ".join(unit.text.split()).casefold() in common:
                candidate.score *= _BOILERPLATE_WEIGHT
            if said and " ".join(unit.text.split()) in said:
                candidate.score *= _REPEAT_WEIGHT  # a follow-up is not answered with what was just said
        if self._similarity is not None and self._semantic_units and prompt.embedding_model:
            self._add_meaning(prompt.embedding_model, prompt.question, everything)
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

    def _add_meaning(self, model: str, question: str, everything: list[Candidate]) -> None:
        """Raise the units nearest the question in meaning (the embedding model), among the best by words: a
        sentence that says "enable" answers "what do I have to switch on?"."""
        assert self._similarity is not None
        pool = sorted((c for c in everything if c.score > 0 and quotable(c)), key=lambda c: -c.score)
        pool = pool[: self._semantic_units]
        if not pool:
            return
        cosines = self._similarity(model, question, [c.unit.text[:_SEMANTIC_CHARS] for c in pool])
        for candidate, cosine in zip(pool, cosines, strict=True):
            weight = 1.0 / (1.0 + _RANK_STEP * candidate.rank)
            candidate.score += _SEMANTIC_WEIGHT * max(0.0, cosine - _SEMANTIC_FLOOR) * weight

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
        worth = [c for c in everything if quotable(c)]
        scored = sorted((c for c in worth if c.score > 0), key=lambda c: (-c.score, c.rank, c.unit.position))
        # Whether a unit is planted is asked lazily, best first, only as far as the answer reads: the check costs.
        evidence = (c for c in scored if not c.planted)
        first = next(evidence, None)
        ranked: Iterable[Candidate]
        if first is not None:
            ranked = chain((first,), evidence)
        else:
            # Instructions to the assistant are quoted only when nothing else is evidence at all;
            # when nothing shares a word with the question, the best chunk's first quotable unit.
            unscored = next((c for c in worth if not c.planted), None)
            ranked = scored or ([unscored] if unscored else worth[:1])
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
            quote = build_quote(candidate, chunks, everything, used)
            if quote is None:
                continue
            best = best or quote.score
            quotes.append(quote)
        return quotes


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
