"""Exact search over chosen rows, and the cost model that picks exact or HNSW per query.

The cost model's constants were measured on the 2-core development machine
with 384-d clustered vectors (``bench/retrieval.py``): scoring one allowed row
exactly costs ~0.12 µs (faiss ``fvec_inner_products_by_idx``, no gather copy;
up to ~0.35 µs for sparse rows at 1M); filtered HNSW costs ~3 µs per unit of
efSearch; so at 100k rows exact wins below ~17 % selectivity. The efSearch a
filter needs comes from the graph's calibration (``hnsw_policy``); before a
graph exists the planner assumes ``efSearch = 12·k/s``, which held recall@10
≥ 0.98 at 100k rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import faiss
import numpy as np

from indexer.index.embedded.ef_policy import EfPolicy
from indexer.index.embedded.rows import Rows
from indexer.index.validation import Vector32

# Scores closer than this to the k-th best may be a tie after float64 rescoring.
_TIE_SLACK = 1e-5


@dataclass(frozen=True, slots=True)
class Planner:
    """When to search exactly, when to use the HNSW graph, when to build it, when to look for another's."""

    exact_row_cost_us: float = 0.125
    hnsw_ef_cost_us: float = 3.0
    ef_per_k_over_selectivity: float = 12.0
    ef_min: int = 64
    ef_max: int = 4096
    calibrate: bool = True
    recall_target: float = 0.99
    build_cost_us_per_row: float = 250.0
    min_graph_rows: int = 2048
    tail_rows: int = 4096
    tombstone_ratio: float = 0.3
    graph_file_check_s: float = 1.0  # how often a query looks for a graph file another process saved

    def default_policy(self) -> EfPolicy:
        """The efSearch policy assumed before (or instead of) calibration."""
        return EfPolicy.model(self.ef_min, self.ef_per_k_over_selectivity)

    def choose(self, k: int, allowed: int, total: int, policy: EfPolicy) -> tuple[int, float]:
        """(efSearch, estimated µs saved over exact) when HNSW should serve; (0, 0.0) if not.

        Exact wins when few rows are allowed, when the filter is narrower
        than the graph was calibrated for, and when the efSearch that keeps
        recall would exceed ``ef_max``.
        """
        if total < self.min_graph_rows or allowed <= k:
            return 0, 0.0
        ef = policy.ef(k, allowed / total)
        if ef is None or ef > self.ef_max:
            return 0, 0.0
        saving = self.exact_row_cost_us * allowed - self.hnsw_ef_cost_us * ef
        return (ef, saving) if saving > 0 else (0, 0.0)


def exact_candidates(vectors: Vector32, rows: Rows, query: Vector32, k: int) -> Rows:
    """Rows among ``rows`` that can be in the exact top ``k`` (ties at the cut kept).

    Scores are float32 inner products computed in place (no gathered copy).
    """
    count = len(rows)
    if count <= k:
        return rows
    scores = np.empty(count, np.float32)
    faiss.fvec_inner_products_by_idx(  # type: ignore[attr-defined]
        faiss.swig_ptr(scores),
        faiss.swig_ptr(query),
        faiss.swig_ptr(vectors),
        faiss.swig_ptr(rows),
        vectors.shape[1],
        1,
        count,
    )
    top = np.argpartition(scores, count - k)[count - k :]
    kth = float(scores[top].min())
    return rows[scores >= kth - _TIE_SLACK]


def rank(
    vectors: Vector32,
    rows: Rows,
    query: Vector32,
    k: int,
    chunk_ids: Sequence[str],
) -> list[tuple[int, float]]:
    """The best ``k`` of ``rows`` as (row, cosine score), score descending, ties by chunk id.

    Rescored in float64 row by row, so equal vectors get exactly equal scores
    whatever their position.
    """
    if len(rows) == 0:
        return []
    unique = np.unique(rows)
    scores = (vectors[unique].astype(np.float64) * query.astype(np.float64)).sum(axis=1)
    order = sorted(
        zip(unique.tolist(), np.clip(scores, -1.0, 1.0).tolist(), strict=True),
        key=lambda pair: (-pair[1], chunk_ids[pair[0]]),
    )
    return order[:k]
