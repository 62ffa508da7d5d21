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
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from service.generation.boilerplate import statement
from service.generation.text_units import split_units

#: Cosine similarity at which two sentences count as linked (LexRank's threshold).
LINK_FLOOR = 0.1
#: PageRank's damping factor, and the power iteration's bounds.
_DAMPING = 0.85
_ITERATIONS = 100
_TOLERANCE = 1e-6
#: A sentence worth quoting has at least this many words (headings and stray fragments have fewer).
MIN_WORDS = 4
#: The longest sentence quoted (longer "sentences" are unsplit tables or run-on extraction artefacts).
MAX_SENTENCE_CHARS = 600
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


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


def lexrank(vectors: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """LexRank centrality of the rows of ``vectors`` (L2-normalised; a zero row is isolated), summing to 1."""
    n = vectors.shape[0]
    if n == 0:
        return np.zeros(0)
    similarity = vectors @ vectors.T
    links = (similarity >= LINK_FLOOR).astype(np.float64)
    np.fill_diagonal(links, 0.0)  # a sentence does not vouch for itself
    degree = links.sum(axis=1, keepdims=True)
    # A sentence like no other spreads its vote evenly (PageRank's dangling rows): it gains nothing from it.
    transition = np.where(degree > 0, links / np.where(degree > 0, degree, 1.0), 1.0 / n)
    rank = np.full(n, 1.0 / n)
    for _ in range(_ITERATIONS):
        following = (1 - _DAMPING) / n + _DAMPING * (transition.T @ rank)
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


class ExtractiveSummarizer:
    """Quotes the most central sentences of each section, then of the document."""

    def sections(self, texts: Sequence[str], per_section: int) -> list[SectionPicks]:
        """Each section's ``per_section`` most central sentences (none for a section without prose)."""
        from sklearn.feature_extraction.text import TfidfVectorizer  # type: ignore[import-untyped,unused-ignore]

        sentences = [quotable_sentences(t) for t in texts]
        everything = [s for section in sentences for s in section]
        if not everything:
            return [SectionPicks((), 0.0) for _ in texts]
        try:
            matrix = TfidfVectorizer(sublinear_tf=True, stop_words="english").fit_transform(everything)
        except ValueError:  # no word left after stop words: every sentence is as central as any other
            return [SectionPicks(tuple(s[:per_section]), 0.0, s[0] if s else "") for s in sentences]
        dense_centroid = np.asarray(matrix.mean(axis=0)).ravel()
        norm = float(np.linalg.norm(dense_centroid)) or 1.0
        picks: list[SectionPicks] = []
        start = 0
        for section in sentences:
            rows = matrix[start : start + len(section)]
            start += len(section)
            if not section:
                picks.append(SectionPicks((), 0.0))
                continue
            scores = lexrank(rows.toarray())
            chosen = most_central(scores, per_section)
            best = max(chosen, key=lambda i: (scores[i], -i))
            weight = float(rows[best].toarray().ravel() @ dense_centroid) / norm
            picks.append(SectionPicks(tuple(section[i] for i in chosen), weight, section[best]))
        return picks

    @staticmethod
    def document(picks: Sequence[SectionPicks], sentences: int) -> list[int]:
        """The sections whose best sentence the document summary quotes: the ``sentences`` most central to the
        whole document, in document order."""
        candidates = [i for i, p in enumerate(picks) if p.sentences]
        chosen = most_central([picks[i].weight for i in candidates], sentences)
        return [candidates[i] for i in chosen]
