"""The offline reranker's evidence, one pure function per feature, each an array over the candidates.

Every feature is computable on its own, so a benchmark can compute them once
and try weights without re-running retrieval. Words are the extractive
answerer's: lower-cased, lightly stemmed, stop words dropped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from indexer.index import ChunkRecord, SearchHit
from service.generation.extractive import content_terms
from service.generation.text_units import split_sentences

Floats = npt.NDArray[np.float64]

#: Between a document's title and its headings in the text the ``heading`` feature embeds.
HEADING_SEPARATOR = " › "
#: Characters of a passage per token a cross-encoder reads: the model cuts at its token limit, this only
#: bounds what is sent (a token is rarely longer).
CHARS_PER_TOKEN = 8


def heading_text(chunk: ChunkRecord) -> str:
    """The chunk's "title › heading › subheading" ("" when it has neither)."""
    parts = [p.strip() for p in (chunk.title, *chunk.heading_path)]
    seen: list[str] = []
    for part in parts:
        if part and (not seen or seen[-1] != part):  # a page whose first heading repeats its title
            seen.append(part)
    return HEADING_SEPARATOR.join(seen)


@lru_cache(maxsize=2048)
def terms(text: str) -> frozenset[str]:
    """``content_terms`` of ``text``, each distinct word stemmed once; remembered, as chunks recur across queries."""
    return frozenset(content_terms(" ".join(dict.fromkeys(text.lower().split()))))


def passage(chunk: ChunkRecord, max_chars: int) -> str:
    """What a cross-encoder reads of a chunk: "title › headings", a new line, the text; at most ``max_chars``."""
    heading = heading_text(chunk)
    text = f"{heading}\n{chunk.text}" if heading else chunk.text
    return text[:max_chars]


def dense(hits: Sequence[SearchHit]) -> Floats:
    """The hits' own scores (the retrieval cosine); an unknown (NaN) score counts as 0."""
    return np.nan_to_num(np.array([h.score for h in hits], dtype=np.float64), nan=0.0)


def idf(question: frozenset[str], candidates: Sequence[frozenset[str]]) -> dict[str, float]:
    """Inverse document frequency of each question word over the candidate set (smoothed, always > 0)."""
    n = len(candidates)
    return {w: math.log((n + 1.0) / (sum(1 for c in candidates if w in c) + 0.5)) for w in question}


def overlap(question: frozenset[str], weights: dict[str, float], candidates: Sequence[frozenset[str]]) -> Floats:
    """Per candidate: the idf-weighted share of the question's words it contains, in [0, 1]."""
    total = sum(weights.values())
    if not question or total <= 0:
        return np.zeros(len(candidates))
    return np.array([sum(weights[w] for w in question & c) / total for c in candidates], dtype=np.float64)


def document_bonus(hits: Sequence[SearchHit], scores: Floats, decay: float = 0.5) -> Floats:
    """Per candidate: its document's bonus for having several strong candidates (the same for all its chunks).

    A document's bonus is the sum of its candidates' scores after its best one,
    each above the weakest candidate of the set, the k-th (k ≥ 2) multiplied by
    ``decay ** (k - 2)``: one strong chunk earns nothing, a second as strong
    earns its margin, each further one less.
    """
    if not len(hits):
        return np.zeros(0)
    floor = float(scores.min())
    margins: dict[str, list[float]] = {}
    for hit, score in zip(hits, scores, strict=True):
        margins.setdefault(hit.chunk.document_id, []).append(max(float(score) - floor, 0.0))
    bonus = {
        document: sum(m * decay**k for k, m in enumerate(sorted(values, reverse=True)[1:]))
        for document, values in margins.items()
    }
    return np.array([bonus[h.chunk.document_id] for h in hits], dtype=np.float64)


def best_sentences(question: frozenset[str], text: str, count: int) -> list[str]:
    """The ``count`` sentences of ``text`` sharing most words with the question (ties: the earlier first)."""
    sentences = [s for s in split_sentences(text) if len(s) >= 12]
    if len(sentences) <= count:
        return sentences
    order = sorted(range(len(sentences)), key=lambda i: (-len(question & terms(sentences[i])), i))
    return [sentences[i] for i in order[:count]]


def cosines(question_vector: npt.NDArray[np.float32], vectors: npt.NDArray[np.float32]) -> Floats:
    """Cosine of the question to each row (rows are L2-normalised; the question is normalised here)."""
    q = np.asarray(question_vector, dtype=np.float64)
    norm = float(np.linalg.norm(q))
    if not len(vectors) or norm == 0 or not math.isfinite(norm):
        return np.zeros(len(vectors))
    return np.asarray(vectors, dtype=np.float64) @ (q / norm)
