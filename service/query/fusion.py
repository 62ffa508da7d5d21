"""Fusing the dense (vector) ranking and the lexical (BM25) ranking of one search into one ranking.

Pure functions over lists of hits, best first. Methods (a store's ``fusion``):

- ``rrf``: reciprocal rank fusion, ``2·((1 − w)/(60 + dense rank) + w/(60 + lexical rank))``
  with ranks from 1 and a missing rank contributing nothing; ``w = 0.5`` is plain RRF;
- ``weighted``: each list's scores min-max normalised to [0, 1] (a missing hit 0; a list whose
  scores are all equal, 1), then ``(1 − w)·dense + w·lexical``;
- ``dense``: the dense ranking alone (the lexical search is not run);
- ``lexical``: the lexical ranking alone (for benchmarks).

``w`` is the store's ``lexical_weight``. Whatever the method, every fused hit's ``score`` is the
chunk's cosine similarity to the question — its dense score, or for a hit only the lexical search
found, the dot product of the question's and the chunk's unit vectors — because the store's
relevancy threshold is on the cosine scale. Equal fused values are ordered by cosine, then chunk id.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from acl.errors import InvalidArgument
from indexer.index import SearchHit
from indexer.index.port import Vector
from service.domain.retrieval_settings import FUSION_METHODS

#: The rank constant of reciprocal rank fusion (Cormack, Clarke and Büttcher, 2009).
RRF_K = 60


def runs_dense(method: str) -> bool:
    """Whether ``method`` needs the dense search."""
    return method != "lexical"


def runs_lexical(method: str) -> bool:
    """Whether ``method`` needs the lexical search."""
    return method != "dense"


def fuse(
    method: str,
    dense: Sequence[SearchHit],
    lexical: Sequence[SearchHit],
    question_vector: Vector,
    lexical_weight: float,
) -> list[SearchHit]:
    """One ranking of the hits of both lists (each chunk once), best first, each scored by its cosine."""
    if method not in FUSION_METHODS:
        raise InvalidArgument(f"unknown fusion method {method!r}")
    if not 0.0 <= lexical_weight <= 1.0:
        raise InvalidArgument(f"lexical_weight must be between 0 and 1, got {lexical_weight!r}")
    dense = _unique(dense) if runs_dense(method) else []
    lexical = _unique(lexical) if runs_lexical(method) else []
    cosine = {h.chunk.chunk_id: h for h in dense}
    for hit in lexical:
        if hit.chunk.chunk_id not in cosine and hit.chunk.vector is not None:
            cosine[hit.chunk.chunk_id] = SearchHit(hit.chunk, _cosine(question_vector, hit.chunk.vector))
    if method == "dense":
        return list(dense)
    if method == "lexical":
        return [cosine[h.chunk.chunk_id] for h in lexical if h.chunk.chunk_id in cosine]
    fused = (_rrf if method == "rrf" else _weighted)(dense, lexical, lexical_weight)
    order = sorted(
        (chunk_id for chunk_id in fused if chunk_id in cosine),
        key=lambda chunk_id: (-fused[chunk_id], -cosine[chunk_id].score, chunk_id),
    )
    return [cosine[chunk_id] for chunk_id in order]


def _unique(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """``hits`` with each chunk once (its first, best, appearance)."""
    seen: set[str] = set()
    kept = []
    for hit in hits:
        if hit.chunk.chunk_id not in seen:
            seen.add(hit.chunk.chunk_id)
            kept.append(hit)
    return kept


def _cosine(question: Vector, vector: Vector) -> float:
    value = float(np.dot(np.asarray(question, np.float64), np.asarray(vector, np.float64)))
    return min(1.0, max(-1.0, value))


def _rrf(dense: Sequence[SearchHit], lexical: Sequence[SearchHit], weight: float) -> dict[str, float]:
    fused: dict[str, float] = {}
    for share, hits in ((1.0 - weight, dense), (weight, lexical)):
        for rank, hit in enumerate(hits, start=1):
            chunk_id = hit.chunk.chunk_id
            fused[chunk_id] = fused.get(chunk_id, 0.0) + 2.0 * share / (RRF_K + rank)
    return fused


def _normalised(hits: Sequence[SearchHit]) -> dict[str, float]:
    if not hits:
        return {}
    scores = [h.score for h in hits]
    low, high = min(scores), max(scores)
    if high <= low:
        return {h.chunk.chunk_id: 1.0 for h in hits}
    return {h.chunk.chunk_id: (h.score - low) / (high - low) for h in hits}


def _weighted(dense: Sequence[SearchHit], lexical: Sequence[SearchHit], weight: float) -> dict[str, float]:
    fused: dict[str, float] = {}
    for share, hits in ((1.0 - weight, dense), (weight, lexical)):
        for chunk_id, value in _normalised(hits).items():
            fused[chunk_id] = fused.get(chunk_id, 0.0) + share * value
    return fused
