"""Is the new model better than what the store ranks with now? Measured on held-out pseudo-queries.

Each held-out query's candidates are found as a query finds them: the store's dense and BM25 searches
within the training scope, fused by the store's fusion setting, the best ``candidates`` kept. The current
ranking (the store's installed model when it has a usable one, else the offline reranker) and the new one
each order them; a query scores by the rank of the first chunk of the document it was made from (hit@1,
hit@5, MRR, as ``docqa eval`` counts documents). The held-out queries are split in two: the blend of the
model's score with the offline one is chosen on the first half, and the decision is taken on the second.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from indexer.embedder import Embedder
from service.adaptation.dataset import HeldOut
from service.query.fusion import fuse
from service.query.guarded import TrainingReads
from service.ranking.adapted import blended_order
from service.ranking.adapted_model import PairScorer
from service.ranking.features import CHARS_PER_TOKEN, passage
from service.ranking.port import Reranked, Reranker

#: The blends of model and offline score tried (0 would be the offline order).
BLENDS = (0.25, 0.5, 0.75, 1.0)


@dataclass(frozen=True, slots=True)
class Ranks:
    """hit@1, hit@5 and MRR over some queries (the rank of the answering document; 0 when absent)."""

    queries: int
    hit1: float
    hit5: float
    mrr: float

    @classmethod
    def of(cls, ranks: Sequence[int]) -> Ranks:
        n = max(1, len(ranks))
        return cls(
            len(ranks),
            sum(1 for r in ranks if r == 1) / n,
            sum(1 for r in ranks if 1 <= r <= 5) / n,
            sum(1.0 / r for r in ranks if r >= 1) / n,
        )

    def as_dict(self) -> dict[str, float]:
        return {
            "queries": self.queries,
            "hit@1": round(self.hit1, 4),
            "hit@5": round(self.hit5, 4),
            "mrr": round(self.mrr, 4),
        }


@dataclass(frozen=True, slots=True)
class Case:
    """A held-out query, its vector, its candidates in the offline reranker's order, and its answer."""

    query: HeldOut
    vector: np.ndarray
    offline: list[Reranked]


def rank_of(order: Sequence[Reranked], document_id: str) -> int:
    """The 1-based rank of the first candidate from ``document_id``; 0 when none is."""
    for i, item in enumerate(order, 1):
        if item.hit.chunk.document_id == document_id:
            return i
    return 0


def cases(
    reads: TrainingReads,
    embedder: Embedder,
    offline: Reranker,
    held_out: Sequence[HeldOut],
    *,
    fusion: str,
    lexical_weight: float,
    candidates: int,
    on_progress: Callable[[int, int], None],
) -> list[Case]:
    vectors = embedder.embed_documents([q.query for q in held_out]) if held_out else np.zeros((0, 1), np.float32)
    found: list[Case] = []
    for i, (q, vector) in enumerate(zip(held_out, vectors, strict=True)):
        dense = reads.nearest(vector, candidates)
        lexical = reads.keyword(q.query, candidates)
        hits = fuse(fusion, dense, lexical, vector, lexical_weight)[:candidates]
        found.append(Case(q, vector, offline.rerank(q.query, vector, hits) if hits else []))
        on_progress(i + 1, len(held_out))
    return found


def model_orders(scorer: PairScorer, cases_: Sequence[Case], depth: int, max_tokens: int) -> list[np.ndarray]:
    """The model's score of each case's first ``depth`` offline candidates."""
    max_chars = max_tokens * CHARS_PER_TOKEN
    return [scorer.score(c.query.query, [passage(r.hit.chunk, max_chars) for r in c.offline[:depth]]) for c in cases_]


def ranks_with(cases_: Sequence[Case], scores: Sequence[np.ndarray] | None, blend: float) -> Ranks:
    """The ranks of the cases ordered by the offline reranker (scores None) or blended with the model's."""
    ranks = []
    for c, s in zip(cases_, scores if scores is not None else [None] * len(cases_), strict=True):
        order = c.offline if s is None or len(s) < 2 else blended_order([r.hit for r in c.offline], c.offline, s, blend)
        ranks.append(rank_of(order, c.query.document_id))
    return Ranks.of(ranks)


def choose_blend(cases_: Sequence[Case], scores: Sequence[np.ndarray]) -> tuple[float, Ranks]:
    """The blend with the best MRR on these cases (the smallest of equals: the least change)."""
    best: tuple[float, Ranks] | None = None
    for blend in BLENDS:
        r = ranks_with(cases_, scores, blend)
        if best is None or r.mrr > best[1].mrr + 1e-9:
            best = (blend, r)
    assert best is not None
    return best
