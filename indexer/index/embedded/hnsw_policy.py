"""How much efSearch a graph needs for its recall target, measured on the graph itself.

Filtered HNSW recall depends on the data and on the graph as much as on the
filter: with efConstruction 40, recall@10 on 1M clustered vectors stalled near
0.93 whatever efSearch was, while 100k passed 0.99 at efSearch 128; a filter
passing 5 % of the rows needed 2048 on one data set and 256 on another. So
every build is calibrated: held-out rows (added to the graph only after
calibration: a query that is itself a node finds its neighbours through its
own links, which flatters the graph) are searched under random filters of a
few selectivities at doubling efSearch and compared with exact answers; the
policy keeps a safety factor over what met the target. It tells the planner
what efSearch a filter needs, or that the graph may not serve it at all; then
the planner searches exactly, so recall is never traded away silently.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from indexer.index.embedded.ef_policy import WIDE_K, EfPolicy, Points
from indexer.index.embedded.hnsw import HnswGraph

CALIBRATION_QUERIES = 64
HOLDOUT_SHARE = 0.02  # rows held out of the graph until calibrated; queries spread over them
# 1.0 (a caller who may read every row) first: filters narrow the graph walk, so without its own point
# the broadest caller paid for 0.5's efSearch (3-4x the efSearch it needs on 100k rows, ~8 ms a question).
CALIBRATION_SELECTIVITIES = (1.0, 0.5, 0.2, 0.1, 0.05)
# The policy keeps twice the efSearch that first met the target: 64 held-out
# queries are a small sample (at 1M rows, efSearch 128 met 0.99 on them and
# gave 0.979 on the benchmark's queries; 256 gave 0.998).
SAFETY_FACTOR = 2


def holdout_rows(count: int) -> int:
    """How many of ``count`` rows to keep out of a new graph until it is calibrated (0: none)."""
    if count < 20 * CALIBRATION_QUERIES:
        return 0
    return max(CALIBRATION_QUERIES, int(HOLDOUT_SHARE * count))


def calibrate(
    graph: HnswGraph,
    vectors: npt.NDArray[np.float32],
    held_out: npt.NDArray[np.float32],
    k: int,
    target: float,
    ef_max: int,
    seed: int = 0,
    wide_k: int = WIDE_K,
) -> EfPolicy:
    """Measure the efSearch the graph needs for recall@k ≥ ``target``, and for recall@``wide_k`` (seconds at
    1M rows).

    ``vectors`` are the graph's rows ``0 .. graph.ntotal-1``; queries are
    spread over ``held_out``, rows not in the graph.
    """
    count = graph.ntotal
    rng = np.random.default_rng(seed)
    step = max(1, len(held_out) // CALIBRATION_QUERIES)
    queries = np.ascontiguousarray(held_out[::step][:CALIBRATION_QUERIES])
    scores = np.empty((count, len(queries)), np.float32)
    for start in range(0, count, 65536):  # blocks bound the temporary memory
        stop = min(count, start + 65536)
        scores[start:stop] = vectors[start:stop] @ queries.T

    points = _needed(graph, queries, scores, rng, k, target, ef_max)
    wide = _needed(graph, queries, scores, rng, wide_k, target, ef_max) if points and wide_k > k else None
    return EfPolicy(points, wide=wide)


def _needed(
    graph: HnswGraph,
    queries: npt.NDArray[np.float32],
    scores: npt.NDArray[np.float32],
    rng: np.random.Generator,
    k: int,
    target: float,
    ef_max: int,
) -> Points:
    """(selectivity, efSearch) that met recall@k ≥ ``target`` at each calibrated selectivity, broadest first."""
    count = graph.ntotal
    needed: dict[float, int] = {}
    ef = max(16, k)
    for selectivity in CALIBRATION_SELECTIVITIES:
        allowed = rng.random(count) < selectivity
        if np.count_nonzero(allowed) < 4 * k:
            break  # too small to say anything about this selectivity
        truths = _truths(scores, allowed, k)
        while ef <= ef_max and _recall(graph, queries, allowed, truths, k, ef) < target:
            ef *= 2
        if ef > ef_max:
            break
        needed[selectivity] = min(ef * SAFETY_FACTOR, ef_max)
    return tuple(sorted(needed.items(), reverse=True))


def _truths(scores: npt.NDArray[np.float32], allowed: npt.NDArray[np.bool_], k: int) -> list[set[int]]:
    rows = np.flatnonzero(allowed)
    masked = scores[rows]
    truths = []
    for column in range(scores.shape[1]):
        top = np.argpartition(-masked[:, column], k)[:k]
        truths.append(set(rows[top].tolist()))
    return truths


def _recall(
    graph: HnswGraph,
    queries: npt.NDArray[np.float32],
    allowed: npt.NDArray[np.bool_],
    truths: list[set[int]],
    k: int,
    ef: int,
) -> float:
    found = total = 0
    for query, truth in zip(queries, truths, strict=True):
        found += len(truth & set(graph.search(query, k, allowed, ef).tolist()))
        total += len(truth)
    return found / max(total, 1)
