"""Topics across documents: chunk vectors of several documents aligned by cosine similarity.

Greedy leader clustering over the chunks of every document, in document and
reading order: a chunk joins the topic whose centroid is nearest when the
cosine reaches ``floor``, else it starts a topic. Each topic then names, per
document that has it, the chunk nearest its centroid. Deterministic, and
linear in chunks × topics. The quoted statement of an entry is the sentence of
its chunk that shares most words with what the other documents say of the
topic (or with the question).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from service.generation.extractive import content_terms
from service.generation.extractive_summary import quotable_sentences

#: Cosine at which two chunks speak of the same topic (all-MiniLM-L6-v2 puts paraphrases above ~0.6).
TOPIC_FLOOR = 0.55
#: Chunks aligned between two checks that the request is still wanted.
_CHECK_EVERY = 64
#: The longest statement quoted when a chunk has no sentence worth quoting.
_STATEMENT_CHARS = 300

Matrix = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class AlignedTopic:
    """One topic: per document that has it (index into the documents given), its best chunk and cosine;
    ``centroid`` is the unit mean of the topic's chunks; ``size`` their number; ``first`` where it began."""

    best: dict[int, tuple[int, float]]
    centroid: Matrix
    size: int
    first: tuple[int, int]


def align(
    documents: Sequence[Matrix], floor: float = TOPIC_FLOOR, check: Callable[[], None] | None = None
) -> list[AlignedTopic]:
    """Topics of the chunks of ``documents`` (one matrix of unit row vectors per document), in order of
    first appearance. ``check`` is called every ``_CHECK_EVERY`` chunks (it raises to stop: a cancelled
    request)."""
    dimension = next((m.shape[1] for m in documents if m.size), 0)
    # One row per topic, at most one topic per chunk: allocated once, not grown row by row.
    sums = np.zeros((sum(m.shape[0] for m in documents if m.size), dimension), np.float64)
    members: list[list[tuple[int, int]]] = []
    seen = 0
    for d, matrix in enumerate(documents):
        for c, vector in enumerate(matrix):
            seen += 1
            if check is not None and seen % _CHECK_EVERY == 0:
                check()
            if len(members):
                found = sums[: len(members)]
                norms = np.linalg.norm(found, axis=1)
                similarity = (found @ vector) / np.where(norms == 0, 1.0, norms)
                nearest = int(np.argmax(similarity))
                if similarity[nearest] >= floor:
                    sums[nearest] += vector
                    members[nearest].append((d, c))
                    continue
            sums[len(members)] = vector
            members.append([(d, c)])
    topics: list[AlignedTopic] = []
    for total, chunks in zip(sums[: len(members)], members, strict=True):
        centroid = (total / (np.linalg.norm(total) or 1.0)).astype(np.float32)
        best: dict[int, tuple[int, float]] = {}
        for d, c in chunks:
            score = float(documents[d][c] @ centroid)
            if d not in best or score > best[d][1]:
                best[d] = (c, score)
        topics.append(AlignedTopic(best, centroid, len(chunks), chunks[0]))
    return topics


def rank(topics: Sequence[AlignedTopic], question: Matrix | None) -> list[tuple[AlignedTopic, float | None]]:
    """Topics with their cosine to ``question``: by that cosine when there is a question; else shared topics
    first (more documents, then more chunks), then in order of first appearance."""
    if question is not None:
        scored = [(t, float(t.centroid @ question)) for t in topics]
        return sorted(scored, key=lambda pair: (-(pair[1] or 0.0), pair[0].first))
    return [(t, None) for t in sorted(topics, key=lambda t: (-len(t.best), -t.size, t.first))]


def statement(text: str, others: Sequence[str], question: str | None = None) -> str:
    """The sentence of ``text`` that shares most words with ``others`` (and the question), else its first."""
    sentences = quotable_sentences(text)
    if not sentences:
        flat = " ".join(text.split())
        return flat if len(flat) <= _STATEMENT_CHARS else flat[: _STATEMENT_CHARS - 1].rstrip() + "…"
    wanted = set().union(*(content_terms(o) for o in others)) if others else set()
    asked = content_terms(question) if question else set()
    scores = [2 * len(content_terms(s) & asked) + len(content_terms(s) & wanted) for s in sentences]
    return sentences[max(range(len(sentences)), key=lambda i: (scores[i], -i))]
