"""Extractive summaries: a text's most central sentences, quoted, in the text's own order.

Centrality is LexRank (Erkan & Radev, 2004): sentences are TF-IDF vectors
(scikit-learn, the IDF learnt from the whole document), two sentences are
linked when their cosine similarity reaches a floor, and a sentence is central
when central sentences link to it (PageRank over that graph, by power
iteration). A section's summary is its most central sentences; the document's
summary is the most central of those section picks, at most one per section,
in document order. Nothing is written, only quoted: callers say so
(``extractive: true``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from service.domain.analysis import evenly
from service.domain.limits import Limits
from service.generation.boilerplate import statement
from service.generation.text_units import split_units

#: Cosine similarity at which two sentences count as linked (LexRank's threshold).
LINK_FLOOR = 0.1
#: PageRank's damping factor, and the power iteration's bounds.
_DAMPING = 0.85
_ITERATIONS = 100
_TOLERANCE = 1e-6
#: Rows of the similarity matrix computed at once (a band: this many × n).
_BAND = 256
#: A sentence worth quoting has at least this many words (headings and stray fragments have fewer).
MIN_WORDS = 4
#: The longest sentence quoted (longer "sentences" are unsplit tables or run-on extraction artefacts).
MAX_SENTENCE_CHARS = 600
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
#: Sentences ranked at most, by default (``analysis.max_sentences``).
MAX_SENTENCES = Limits().max_sentences


def quotable_sentences(text: str) -> list[str]:
    """The prose sentences of ``text`` a summary may quote, in order (code, lists and tables, headings and
    boilerplate are left out)."""
    return [
        u.text.strip()
        for u in split_units(text)
        if u.kind == "sentence"
        and len(_WORD.findall(u.text)) >= MIN_WORDS
        and len(u.text) <= MAX_SENTENCE_CHARS
        and statement(u.text)
    ]


def lexrank(vectors: npt.NDArray[np.float64] | Any, check: Callable[[], None] | None = None) -> npt.NDArray[np.float64]:
    """LexRank centrality of the rows of ``vectors`` (L2-normalised, dense or sparse; a zero row is isolated),
    summing to 1. Holds one n × n matrix (n: the rows) and a band of it, never one of n × vocabulary;
    ``check`` is called between bands and iterations (it raises to stop: a cancelled request)."""
    n = vectors.shape[0]
    if n == 0:
        return np.zeros(0)
    links = np.zeros((n, n))
    for start in range(0, n, _BAND):
        if check is not None:
            check()
        band = vectors[start : start + _BAND] @ vectors.T
        links[start : start + _BAND] = (band.toarray() if hasattr(band, "toarray") else np.asarray(band)) >= LINK_FLOOR
    np.fill_diagonal(links, 0.0)  # a sentence does not vouch for itself
    degree = links.sum(axis=1)
    linked = degree > 0
    share = np.where(linked, 1.0 / np.where(linked, degree, 1.0), 0.0)
    # A sentence like no other spreads its vote evenly (PageRank's dangling rows): it gains nothing from it.
    rank = np.full(n, 1.0 / n)
    for iteration in range(_ITERATIONS):
        if check is not None and iteration % 10 == 9:
            check()
        spread = float(rank[~linked].sum()) / n
        following = (1 - _DAMPING) / n + _DAMPING * (links.T @ (rank * share) + spread)
        if float(np.abs(following - rank).sum()) < _TOLERANCE:
            return np.asarray(following)
        rank = following
    return rank


def most_central(scores: Sequence[float] | npt.NDArray[np.float64], count: int) -> list[int]:
    """Positions of the ``count`` highest scores (ties: the earlier), in ascending (document) order."""
    order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))
    return sorted(order[: max(count, 0)])


@dataclass(frozen=True, slots=True)
class SectionPicks:
    """One section's quoted summary: its central sentences in order, and how central its best one is
    in the document's own TF-IDF space (what the document summary ranks sections by)."""

    sentences: tuple[str, ...]
    weight: float
    #: The section's most central sentence ("" without prose): what the document summary quotes of it.
    best: str = ""


@dataclass(frozen=True, slots=True)
class Ranked:
    """Each section's picks, and how many of the document's sentences were ranked (``considered``) of how many
    it has (``total``): fewer when the budget sampled them."""

    sections: list[SectionPicks]
    considered: int
    total: int


class ExtractiveSummarizer:
    """Quotes the most central sentences of each section, then of the document.

    ``max_sentences`` bounds the work: a document with more quotable sentences has that many of them ranked,
    sampled evenly over the whole document in order, so its TF-IDF matrix and similarity graph stay bounded.
    """

    def __init__(self, max_sentences: int = MAX_SENTENCES) -> None:
        self._max_sentences = max_sentences

    def sections(self, texts: Sequence[str], per_section: int) -> list[SectionPicks]:
        """Each section's ``per_section`` most central sentences (none for a section without prose)."""
        return self.rank(texts, per_section).sections

    def rank(self, texts: Sequence[str], per_section: int, check: Callable[[], None] | None = None) -> Ranked:
        """``sections``, with the count of sentences considered; ``check`` is called between sections (it
        raises to stop the work: a cancelled request)."""
        from sklearn.feature_extraction.text import TfidfVectorizer  # type: ignore[import-untyped,unused-ignore]

        found = [quotable_sentences(t) for t in texts]
        total = sum(len(section) for section in found)
        sentences = _sampled(found, self._max_sentences)
        everything = [s for section in sentences for s in section]
        if not everything:
            return Ranked([SectionPicks((), 0.0) for _ in texts], 0, total)
        try:
            matrix = TfidfVectorizer(sublinear_tf=True, stop_words="english").fit_transform(everything)
        except ValueError:  # no word left after stop words: every sentence is as central as any other
            alike = [SectionPicks(tuple(s[:per_section]), 0.0, s[0] if s else "") for s in sentences]
            return Ranked(alike, len(everything), total)
        dense_centroid = np.asarray(matrix.mean(axis=0)).ravel()
        norm = float(np.linalg.norm(dense_centroid)) or 1.0
        picks: list[SectionPicks] = []
        start = 0
        for section in sentences:
            if check is not None:
                check()
            rows = matrix[start : start + len(section)]
            start += len(section)
            if not section:
                picks.append(SectionPicks((), 0.0))
                continue
            scores = lexrank(rows, check)
            chosen = most_central(scores, per_section)
            best = max(chosen, key=lambda i: (scores[i], -i))
            weight = float(rows[best].toarray().ravel() @ dense_centroid) / norm
            picks.append(SectionPicks(tuple(section[i] for i in chosen), weight, section[best]))
        return Ranked(picks, len(everything), total)

    @staticmethod
    def document(picks: Sequence[SectionPicks], sentences: int) -> list[int]:
        """The sections whose best sentence the document summary quotes: the ``sentences`` most central to the
        whole document, in document order."""
        candidates = [i for i, p in enumerate(picks) if p.sentences]
        chosen = most_central([picks[i].weight for i in candidates], sentences)
        return [candidates[i] for i in chosen]


def _sampled(sections: Sequence[list[str]], budget: int) -> list[list[str]]:
    """The sections' sentences, at most ``budget`` in all: sampled evenly over the whole document, in order."""
    total = sum(len(section) for section in sections)
    if total <= budget:
        return [list(section) for section in sections]
    kept = iter(evenly(total, budget))
    wanted = next(kept, None)
    sampled: list[list[str]] = []
    position = 0
    for section in sections:
        chosen = []
        for sentence in section:
            if position == wanted:
                chosen.append(sentence)
                wanted = next(kept, None)
            position += 1
        sampled.append(chosen)
    return sampled
