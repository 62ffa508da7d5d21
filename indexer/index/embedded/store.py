"""One open store of the embedded index: its durable table, its rows, its graph, its locks."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections import Counter
from pathlib import Path

import numpy as np

from indexer.index.embedded import graph_file, saved_rows
from indexer.index.embedded.graph import GraphKeeper
from indexer.index.embedded.graph_file import Signature
from indexer.index.embedded.graph_watch import GraphWatch
from indexer.index.embedded.hnsw import HnswGraph
from indexer.index.embedded.layout import CHECKED_NODES, apply_changed, rows_along, rows_from
from indexer.index.embedded.lexicon import Lexicon
from indexer.index.embedded.lexicon_keeper import LexiconKeeper
from indexer.index.embedded.rows import RowTable
from indexer.index.embedded.rwlock import RWLock
from indexer.index.embedded.search import Planner
from indexer.index.embedded.sqlite import ChunkTable, StoredRows

log = logging.getLogger(__name__)


def file_identity(path: Path | None) -> tuple[int, int] | None:
    """(device, inode) of the store's file; None in memory or when the file is gone."""
    if path is None:
        return None
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return None
    return (stat.st_dev, stat.st_ino)


class OpenStore:
    """State of one store. ``lock`` guards ``rows`` and the graph; ``db_lock`` the connection.

    Lock order: ``lock`` before ``db_lock``. ``reloads`` counts full reloads
    of the rows after the first load, ``catch_ups`` the incremental ones
    that applied another process's writes document by document,
    ``graph_adoptions`` the graphs another process saved that replaced the
    one served (or its absence) while the store was open.
    """

    def __init__(
        self, table: ChunkTable, path: Path | None, planner: Planner, background: bool, lexicon_postings: int = 0
    ) -> None:
        self.table = table
        self.path = path
        self.identity = file_identity(path)
        self.lock = RWLock()
        self.db_lock = threading.Lock()
        self._planner = planner
        self._background = background
        self.keeper = GraphKeeper(planner, background)
        self.lexicons = LexiconKeeper(self._read_lexicon, background)
        self.lexicons.budget(lexicon_postings)
        self.watch = None if path is None else GraphWatch(graph_file.graph_path(path), planner.graph_file_check_s)
        with self.db_lock:
            self.store_uuid = table.store_uuid()
        self.from_saved_rows = False  # the rows at open came from the graph file (caught up), not from SQLite
        self.rows = self._open_rows()
        self.compact_if_needed(planner.tombstone_ratio)  # so many saved rows went since the save (caught up)
        self.stale = False
        self.closed = False
        self.reloads = 0
        self.catch_ups = 0
        self.graph_adoptions = 0
        self.last_plan: str | None = None
        self.last_lexical: str | None = None
        self.plans: Counter[str] = Counter()

    @property
    def dimension(self) -> int:
        return self.table.dimension

    def same_file(self) -> bool:
        """False when another process dropped (or dropped and re-created) the store's file."""
        return self.path is None or file_identity(self.path) == self.identity

    def refresh(self) -> None:
        """Apply what other connections committed since the last load: their changed documents
        when the store's change log says which, else every row (``stale`` forces that)."""
        if not self.table.persistent:
            return
        self.look_for_graph()
        with self.db_lock:
            current = self.table.is_current()
        if current and not self.stale:
            return
        with self.lock.write():
            if self.closed:
                return
            with self.db_lock:
                if self.table.is_current() and not self.stale:
                    return
            self._catch_up()

    def _catch_up(self) -> None:
        """Apply the commits the rows lack: by document from the change log, else every row. Hold ``lock``
        for writing."""
        with self.db_lock:
            changed = None if self.stale else self.table.catch_up()
            stored = self.table.load() if changed is None else None
        if changed is not None:
            try:
                self._apply(*changed)
            except BaseException:
                self.stale = True  # the table's mark is past these changes: only a full reload is right now
                raise
            self.catch_ups += 1
        elif stored is not None:
            self.rows = rows_from(stored, self.dimension)
            self.keeper.invalidate()
            self.reloads += 1
        self.stale = False

    def _apply(self, documents: list[str], stored: StoredRows) -> None:
        apply_changed(self.rows, documents, stored)
        self.compact_if_needed(self._planner.tombstone_ratio)

    def compact_if_needed(self, tombstone_ratio: float) -> None:
        """Drop tombstones (and the graph over them) once they exceed the ratio. Hold ``lock``."""
        rows = self.rows
        if rows.dead and rows.dead > tombstone_ratio * rows.n:
            self.rows = rows.compacted()
            self.keeper.invalidate()

    def save_graph(self, graph: HnswGraph) -> None:
        """Write ``graph`` next to the SQLite file if it still serves the rows."""
        if self.path is None:
            return
        with self.lock.read():
            rows = self.rows
            if self.closed or self.keeper.graph_for(rows) is not graph:
                return
            count = graph.ntotal
            data = graph.serialize()
            node_seqs = np.where(rows.alive[:count], rows.seqs[:count], -1)
            with self.db_lock:
                mark = None if self.stale else self.table.change_mark()  # stale: the rows lack a write the mark has
            table = None if mark is None else (mark, saved_rows.encode(rows, count))
        path = graph_file.graph_path(self.path)
        if self.watch is not None and not self.watch.is_known(graph_file.signature(path)):
            claimed = graph_file.nodes_claimed(path, self.store_uuid)
            if claimed is not None and claimed > count:
                return  # another process saved a larger graph since: ``look_for_graph`` decides, not this
        written = graph_file.save(path, self.store_uuid, graph, data, node_seqs, table)
        if self.watch is not None:
            self.watch.known(written)

    def look_for_graph(self) -> None:
        """Adopt a graph file another process saved since, if it covers more live rows than the graph served.

        One ``stat`` at most every ``graph_file_check_s``; the file is read,
        checked and laid out along the rows off the query path, then swapped
        in under the write lock. Call without the lock.
        """
        seen = None if self.watch is None or self.closed else self.watch.changed()
        if seen is not None and self.watch is not None:
            self.watch.look(self._adopt_newer_graph, seen, self._background)

    def _adopt_newer_graph(self, seen: Signature) -> None:
        assert self.path is not None and self.watch is not None
        path = graph_file.graph_path(self.path)
        claimed = graph_file.nodes_claimed(path, self.store_uuid)
        with self.lock.read():
            served = self._served_rows()
        if claimed is not None and claimed <= served:
            self.watch.known(seen)  # it covers no more rows than the graph served (ours, or an older one)
            return
        try:
            saved = graph_file.load(path, self.store_uuid, self.dimension, with_rows=False)
            if saved is None:
                return
            # Laid out as a fresh process would (``rows_along``), from a snapshot read over a
            # connection of its own; the documents changed after it are caught up once swapped in.
            change, stored = ChunkTable.snapshot(self.path, self.dimension)
            rows = rows_along(stored, self.dimension, saved, self._planner.tombstone_ratio)
        except graph_file.GraphFileError as exc:
            log.warning("ignoring the HNSW graph file %s another process saved (%s)", path, exc)
            self.watch.known(seen)
            return
        self.watch.known(saved.signature)
        covered = _live_in(rows, saved.graph)
        with self.lock.write():
            if self.closed or covered <= self._served_rows():
                return
            self.rows = rows  # a new generation: a build of our own under way stops at its next slice
            self.keeper.adopt(saved.graph, rows.generation)
            with self.db_lock:
                self.table.rewind(change)
            # Before any query sees these rows: a query whose ``refresh`` ran already would otherwise answer
            # from the snapshot, e.g. with an ACL revoked since.
            self._catch_up()
            self.graph_adoptions += 1
        log.info("adopted the HNSW graph of %d rows another process saved in %s", saved.graph.ntotal, path)

    def _served_rows(self) -> int:
        """Live rows the served graph covers (0 without one). Hold ``lock``."""
        graph = self.keeper.graph_for(self.rows)
        return 0 if graph is None else _live_in(self.rows, graph)

    def _open_rows(self) -> RowTable:
        """The rows at open, laid out along the saved graph when there is a good one, and that graph adopted.

        From the rows saved with the graph, caught up to the store through its change log, when the log
        still holds the entry they were saved at; else from every row read out of SQLite. A bad file is
        logged, removed and rebuilt, never served.
        """
        if self.path is None:
            return self._read_all()
        path = graph_file.graph_path(self.path)
        try:
            saved = graph_file.load(path, self.store_uuid, self.dimension)
            if saved is None:
                return self._read_all()
            rows = self._caught_up(saved)
            if rows is None:
                with self.db_lock:
                    stored = self.table.load()
                rows = rows_along(stored, self.dimension, saved, self._planner.tombstone_ratio)
        except graph_file.GraphFileError as exc:
            log.warning("ignoring the HNSW graph file %s (%s); it will be rebuilt", path, exc)
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
            self.keeper.want()
            return self._read_all()
        if self.watch is not None:
            self.watch.known(saved.signature)
        self.keeper.adopt(saved.graph, rows.generation)
        self.from_saved_rows = saved.rows is not None and rows is saved.rows.table
        return rows

    def _read_all(self) -> RowTable:
        with self.db_lock:
            return rows_from(self.table.load(), self.dimension)

    def _caught_up(self, saved: graph_file.StoredGraph) -> RowTable | None:
        """The rows saved with the graph, with every document changed since re-read from the store; None when
        the file has none or the store's change log cannot say what changed (rows saved against another
        history included). Raises GraphFileError when a sample of them disagrees with the store."""
        if saved.rows is None:
            return None
        with self.db_lock:
            if not self.table.resume(saved.rows.mark):
                log.info("the rows saved with %s are not this store file's history; reading every row", self.path)
                return None
            changed = self.table.catch_up()
        if changed is None:
            return None
        rows = saved.rows.table
        saved_count = rows.n
        apply_changed(rows, *changed)
        with self.db_lock:
            agrees = _sample_agrees(self.table, rows, saved.rows.sections, saved_count)
        if not agrees:
            raise graph_file.GraphFileError("the rows saved with it are not the store's")
        return rows

    def _read_lexicon(self, max_postings: int, cancel: threading.Event) -> Lexicon | None:
        if self.path is None:
            with self.db_lock:
                return None if self.closed else self.table.lexicon(max_postings, cancel)
        return ChunkTable.lexicon_of(self.path, self.store_uuid, max_postings, cancel)

    def close(self) -> None:
        """Stop graph and lexicon work and close the connection."""
        self.keeper.stop()
        self.lexicons.stop()
        if self.watch is not None:
            self.watch.join()
        with self.lock.write():
            self.closed = True
            with self.db_lock:
                self.table.close()


def _sample_agrees(table: ChunkTable, rows: RowTable, sections: saved_rows.Sections, saved_count: int) -> bool:
    """Whether up to ``CHECKED_NODES`` saved rows still live after the catch-up hold what the store holds for
    them: the same row, chunk id, allow and deny principals and vector. Hold ``db_lock``."""
    candidates = np.flatnonzero(rows.alive[:saved_count])
    rng = np.random.default_rng()
    sample = np.sort(rng.choice(candidates, min(CHECKED_NODES, len(candidates)), replace=False))
    if not len(sample):
        return True
    stored = table.sample(rows.seqs[sample].tolist())
    allows = saved_rows.live_acl(sections, "acl_allow", sample)
    denies = saved_rows.live_acl(sections, "acl_deny", sample)
    for row in sample.tolist():
        found = stored.get(int(rows.seqs[row]))
        if found is None:
            return False
        chunk_id, allow, deny, vector = found
        if chunk_id != rows.chunk_ids[row] or set(allow) != allows[row] or set(deny) != denies[row]:
            return False
        if vector != rows.vectors[row].tobytes():
            return False
    return True


def _live_in(rows: RowTable, graph: HnswGraph) -> int:
    """The live rows among those ``graph`` holds (its nodes are the first rows of ``rows``)."""
    return int(np.count_nonzero(rows.alive[: graph.ntotal]))
