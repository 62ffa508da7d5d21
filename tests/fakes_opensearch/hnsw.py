"""A stand-in for a segment's HNSW graph: layer 0 as a k-nearest-neighbour graph, searched best-first.

The graph links each vector to its ``M`` nearest neighbours (cosine), plus the reverse links; a few
evenly spaced nodes stand in for the upper layers and pick the entry point. The search is HNSW's
``search_layer`` with a beam of ``ef``: good recall when ``ef`` is generous, misses when it is small.
Two ways to apply a filter, as the two engines do:

- ``filter_aware=False`` (faiss with an ID selector): the walk ignores the filter and only the results are
  filtered, so a narrow filter leaves few accepted nodes among those visited (fewer than k);
- ``filter_aware=True`` (Lucene): only accepted nodes fill the beam, so the walk goes on until it has
  ``ef`` of them, within a visit limit; running out of visits marks the search incomplete.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

#: Links per node (the ``m`` parameter's default, KNNSettings.INDEX_KNN_DEFAULT_ALGO_PARAM_M).
M = 16
_BLOCK = 1024


@dataclass(frozen=True, slots=True)
class Graph:
    """Row ``i`` of the segment's vectors and its neighbours' rows."""

    neighbours: list[np.ndarray]
    #: Rows standing in for the upper layers: the entry point is the best of them.
    upper: np.ndarray


@dataclass(frozen=True, slots=True)
class Walk:
    """What a search found: accepted rows best first, and whether it ran out of visits."""

    rows: list[int]
    incomplete: bool


def build(matrix: np.ndarray) -> Graph:
    """The graph of the rows of ``matrix`` (computed in blocks: memory stays O(n * block))."""
    count = len(matrix)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)
    links = min(M, count - 1)
    nearest: list[set[int]] = [set() for _ in range(count)]
    for start in range(0, count, _BLOCK):
        block = unit[start : start + _BLOCK] @ unit.T
        for offset in range(len(block)):
            block[offset, start + offset] = -np.inf
        if links > 0:
            chosen = np.argpartition(-block, links - 1, axis=1)[:, :links]
            for offset, row in enumerate(chosen):
                nearest[start + offset].update(int(n) for n in row)
    for node in range(count):
        for neighbour in list(nearest[node]):
            nearest[neighbour].add(node)
    stride = max(1, count // 64)
    return Graph([np.asarray(sorted(n), dtype=np.int64) for n in nearest], np.arange(0, count, stride))


def search(
    graph: Graph,
    similarity: np.ndarray,
    ef: int,
    accepted: set[int] | None,
    *,
    filter_aware: bool,
    visit_limit: int | None = None,
) -> Walk:
    """Best-first search for the rows most similar (``similarity[row]``) among ``accepted`` (None: all)."""
    if not len(similarity):
        return Walk([], False)
    entry = int(graph.upper[np.argmax(similarity[graph.upper])])

    def counts(row: int) -> bool:
        return not filter_aware or accepted is None or row in accepted

    visited = {entry}
    candidates = [(-float(similarity[entry]), entry)]
    beam: list[tuple[float, int]] = []  # min-heap of the ef best rows that count
    if counts(entry):
        beam.append((float(similarity[entry]), entry))
    incomplete = False
    while candidates and not incomplete:
        negative, row = heapq.heappop(candidates)
        if len(beam) >= ef and -negative < beam[0][0]:
            break
        for neighbour in graph.neighbours[row]:
            neighbour = int(neighbour)
            if neighbour in visited:
                continue
            if visit_limit is not None and len(visited) >= visit_limit:
                incomplete = True
                break
            visited.add(neighbour)
            score = float(similarity[neighbour])
            if len(beam) < ef or score > beam[0][0]:
                heapq.heappush(candidates, (-score, neighbour))
                if counts(neighbour):
                    heapq.heappush(beam, (score, neighbour))
                    if len(beam) > ef:
                        heapq.heappop(beam)
    pool = visited if not filter_aware else {row for _, row in beam}
    found = [row for row in pool if accepted is None or row in accepted]
    found.sort(key=lambda row: (-float(similarity[row]), row))
    return Walk(found, incomplete)
