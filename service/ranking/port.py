"""The reranker port: orders a query's readable candidates, best first.

Only chunks the caller may read ever reach a reranker: the query engine calls
it after the authoritative access check, never before.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from indexer.index import SearchHit
from indexer.index.port import Vector


@dataclass(frozen=True, slots=True)
class Reranked:
    """A candidate and the reranker's score for it (higher is better; its scale is the reranker's own)."""

    hit: SearchHit
    score: float


class Reranker(ABC):
    """Orders candidates by how well they answer a question.

    ``rerank`` returns every hit it is given exactly once, best first, ties in
    the order given. It raises ``service.ranking.errors.RerankerUnavailable`` (an
    ``Unavailable``) when its model cannot answer; the caller then keeps the
    order it had.
    """

    #: What the reranker is, for logs, ``docqa doctor`` and timings ("offline", "watsonx:<model>", ...).
    name: str
    #: A warning for the answer when this reranker stands in for the one configured (None: it is that one).
    notice: str | None = None

    @abstractmethod
    def rerank(self, question: str, question_vector: Vector, hits: Sequence[SearchHit]) -> list[Reranked]:
        """``hits`` (already access-checked), best first, each with its score."""

    def for_store(self, store_id: str) -> Reranker:
        """This reranker for one store; the default ignores the store, the adapted one returns its model."""
        return self

    def for_model(self, embedding_model: str) -> Reranker:
        """This reranker for a store whose question and chunk vectors come from ``embedding_model``.

        The default ignores the model; a reranker that embeds text itself returns one bound to that model.
        """
        return self

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections or models; the default does nothing."""


def ranked(hits: Sequence[SearchHit], scores: Sequence[float]) -> list[Reranked]:
    """``hits`` with their ``scores``, best first, ties (and NaN, last) in the order given."""
    if len(hits) != len(scores):
        raise ValueError(f"{len(scores)} scores for {len(hits)} hits")
    keyed = [(-s if not math.isnan(s) else math.inf, i) for i, s in enumerate(float(s) for s in scores)]
    keyed.sort()
    return [Reranked(hits[i], float(scores[i])) for _, i in keyed]
