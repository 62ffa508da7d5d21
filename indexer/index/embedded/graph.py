"""When and how a store's HNSW graph is built, extended and dropped.

The graph is bought, not assumed: until one exists, queries that HNSW would
have served faster run exactly and add the time HNSW would have saved to a
debt; when the debt reaches the estimated build cost the graph is built
(rent-or-buy, so a store that is rarely searched broadly never pays for one).
The initial build runs off the lock over an immutable snapshot of the rows,
then the graph is calibrated (``hnsw_policy``) before it serves a query; a
graph that cannot reach the recall target is dropped and not bought again.
Rows appended later are added in slices of about 10 ms under the store's
write lock, which lets the queries waiting meanwhile in between slices.
Rows not yet in the graph are searched exactly, so answers never wait for it.
A graph that is current is saved with the store (``graph_file``) after its
build and whenever it has grown by a tenth since, and adopted by the next
process that opens the store.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from typing import Protocol

import numpy as np
import numpy.typing as npt

from indexer.index.embedded.ef_policy import CALIBRATION_K
from indexer.index.embedded.hnsw import HnswGraph
from indexer.index.embedded.hnsw_policy import calibrate, holdout_rows
from indexer.index.embedded.rows import RowTable
from indexer.index.embedded.rwlock import RWLock
from indexer.index.embedded.search import Planner

log = logging.getLogger(__name__)

_BUILD_SLICE = 8192  # rows per add() while building off the lock (stop checks between)
# Rows per add() under the write lock, sized so that one add takes about _EXTEND_PAUSE_S:
# that bounds a query's wait (the lock lets waiting queries in between slices).
# Fixed 256-row slices took 0.1-0.5 s each on the loaded 2-core machine.
_EXTEND_PAUSE_S = 0.01
_EXTEND_SLICE_MIN, _EXTEND_SLICE_MAX = 4, 1024
_REBUILD_GROWTH = 2.0  # rebuild (and so recalibrate) once the graph doubled since its build
_SAVE_GROWTH = 1.1  # save a grown graph again once it has a tenth more rows than the saved one

_keepers: weakref.WeakSet[GraphKeeper] = weakref.WeakSet()


class GraphHost(Protocol):
    """What the keeper needs from a store: its lock, its current rows, and where graphs are saved."""

    lock: RWLock
    rows: RowTable

    def save_graph(self, graph: HnswGraph) -> None:
        """Persist ``graph`` if it still serves the store's rows (call without the lock)."""


class GraphKeeper:
    """Owns one store's optional HNSW graph. Reads of ``graph_for`` need the read lock."""

    def __init__(self, planner: Planner, background: bool) -> None:
        self._planner = planner
        self._background = background
        self._graph: HnswGraph | None = None
        self._generation = -1
        self._debt_us = 0.0
        self._wanted = False
        self.builds = 0
        self.policy = planner.default_policy()  # the last graph's (assumed before any)
        self.loaded = False  # the graph came from the store's graph file
        self._saved: tuple[HnswGraph, int] | None = None  # (graph, its size) last saved or loaded
        self._work_lock = threading.Lock()
        self._extend_slice = 64  # rows per add() under the write lock, adapted to _EXTEND_PAUSE_S
        self._worker: threading.Thread | None = None
        self._stop = threading.Event()
        _keepers.add(self)

    def graph_for(self, rows: RowTable) -> HnswGraph | None:
        """The graph if it indexes ``rows``' generation (it may lack the newest rows)."""
        if self._graph is not None and self._generation == rows.generation:
            return self._graph
        return None

    def adopt(self, graph: HnswGraph, generation: int) -> None:
        """Serve ``graph`` (read from the graph file) for ``generation``: before any query, or under the write lock."""
        self._graph, self._generation, self.loaded = graph, generation, True
        self._wanted = True  # rows added from now on join it as they would have in its builder
        self._saved = (graph, graph.ntotal)
        if graph.policy is not None:
            self.policy = graph.policy

    def want(self) -> None:
        """Build at the next query that may use a graph (a saved one was rejected)."""
        self._wanted = True

    def invalidate(self) -> None:
        """Forget the graph (rows were compacted or reloaded). Call under the write lock."""
        self._graph = None
        self._generation = -1

    def note_query(self, host: GraphHost, saving_us: float, used_graph: bool) -> None:
        """Account for a finished query; start graph work when it has become worth it.

        ``saving_us`` is what HNSW would have saved under ``policy``. Call
        without holding the store's lock.
        """
        rows = host.rows
        if not self.policy.usable:
            return
        if not used_graph and saving_us > 0:
            self._debt_us += saving_us
            if self._debt_us >= self._planner.build_cost_us_per_row * rows.n:
                self._wanted = True
        if self._wanted and self._needs_work(rows):
            self._schedule(host)

    def _needs_work(self, rows: RowTable) -> bool:
        graph = self.graph_for(rows)
        if graph is None or self._outgrown(graph):
            return rows.n >= self._planner.min_graph_rows
        return rows.n - graph.ntotal >= self._planner.tail_rows

    @staticmethod
    def _outgrown(graph: HnswGraph) -> bool:
        return graph.ntotal >= _REBUILD_GROWTH * max(graph.calibrated_rows, 1)

    def _schedule(self, host: GraphHost) -> None:
        if not self._background:
            self.prepare(host)
            return
        if self._work_lock.locked() or self._stop.is_set():
            return
        worker = threading.Thread(target=self._run, args=(host,), name="docqa-hnsw", daemon=True)
        self._worker = worker
        worker.start()

    def _run(self, host: GraphHost) -> None:
        try:
            self.prepare(host)
        except Exception:  # a failed build only costs speed: exact search still answers
            log.exception("building the embedded index's HNSW graph failed")

    def prepare(self, host: GraphHost) -> None:
        """Build or extend the graph now until it holds every row (blocking).

        Does nothing for stores smaller than the planner's ``min_graph_rows``.
        Call without holding the store's lock.
        """
        with self._work_lock:
            self._wanted = True
            while not self._stop.is_set():
                with host.lock.read():
                    rows = host.rows
                    graph = self.graph_for(rows)
                    generation, count, vectors = rows.generation, rows.n, rows.vectors
                    if graph is not None and graph.ntotal >= count and not self._outgrown(graph):
                        break
                if graph is None or self._outgrown(graph):
                    if count < self._planner.min_graph_rows or not self.policy.usable:
                        return
                    self._build(host, generation, count, vectors)
                else:
                    self._extend(host, graph)
            else:
                return
            if self._saved is None or self._saved[0] is not graph or graph.ntotal >= _SAVE_GROWTH * self._saved[1]:
                try:
                    host.save_graph(graph)
                except OSError:  # a graph that is not saved only costs the next process a rebuild
                    log.exception("saving the embedded index's HNSW graph failed")
                self._saved = (graph, graph.ntotal)

    def _build(self, host: GraphHost, generation: int, count: int, vectors: npt.NDArray[np.float32]) -> None:
        # Rows 0..count-1 of this generation never change, so the snapshot can
        # be read without the lock while writers append behind it.
        graph = HnswGraph(host.rows.dimension)
        held_out = holdout_rows(count) if self._planner.calibrate else 0
        for start in range(0, count, _BUILD_SLICE):
            if self._stop.is_set() or host.rows.generation != generation:
                return
            stop = min(count, start + _BUILD_SLICE)
            if start < count - held_out <= stop:
                graph.add(vectors[start : count - held_out])
                self._calibrate(graph, vectors, held_out=vectors[count - held_out : count])
                graph.add(vectors[count - held_out : stop])
            else:
                graph.add(vectors[start:stop])
        if not held_out:
            self._calibrate(graph, vectors, held_out=None)
        with host.lock.write():
            if host.rows.generation == generation:
                self.builds += 1
                self._debt_us = 0.0
                if graph.policy is not None and graph.policy.usable:
                    self._graph, self._generation = graph, generation
                else:
                    log.warning(
                        "HNSW graph of %d rows misses recall %.2f at every efSearch up to %d;"
                        " searching exactly instead",
                        count,
                        self._planner.recall_target,
                        self._planner.ef_max,
                    )

    def _calibrate(
        self,
        graph: HnswGraph,
        vectors: npt.NDArray[np.float32],
        held_out: npt.NDArray[np.float32] | None,
    ) -> None:
        if held_out is None:  # calibration off, or too few rows to calibrate on
            graph.policy = self._planner.default_policy()
        else:
            graph.policy = calibrate(
                graph,
                vectors[: graph.ntotal],
                held_out,
                CALIBRATION_K,
                self._planner.recall_target,
                self._planner.ef_max,
            )
        graph.calibrated_rows = graph.ntotal + (0 if held_out is None else len(held_out))
        self.policy = graph.policy

    def _extend(self, host: GraphHost, graph: HnswGraph) -> None:
        with host.lock.write():
            rows = host.rows
            if self.graph_for(rows) is not graph:
                return
            start, count = graph.ntotal, min(max(self._extend_slice, _EXTEND_SLICE_MIN), _EXTEND_SLICE_MAX)
            began = time.perf_counter()
            graph.add(rows.vectors[start : min(rows.n, start + count)])
            took = time.perf_counter() - began
        if took > 2 * _EXTEND_PAUSE_S:
            self._extend_slice = max(_EXTEND_SLICE_MIN, count // 2)
        elif took < _EXTEND_PAUSE_S / 2 and start + count <= rows.n:
            self._extend_slice = min(_EXTEND_SLICE_MAX, count * 2)

    def stop(self) -> None:
        """Stop background work at the next slice and wait for it."""
        self._stop.set()
        worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join()


@atexit.register
def _stop_all() -> None:
    # A daemon thread inside faiss while the interpreter tears down could read
    # freed memory; stop every builder at its next slice first.
    for keeper in list(_keepers):
        keeper.stop()
