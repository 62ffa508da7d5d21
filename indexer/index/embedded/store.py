"""One open store of the embedded index: its durable table, its rows, its graph, its locks."""

from __future__ import annotations

import os
import threading
from collections import Counter
from pathlib import Path

from indexer.index.embedded.graph import GraphKeeper
from indexer.index.embedded.rows import RowTable
from indexer.index.embedded.rwlock import RWLock
from indexer.index.embedded.search import Planner
from indexer.index.embedded.sqlite import ChunkTable, StoredRows


def rows_from(stored: StoredRows, dimension: int) -> RowTable:
    """A fresh row table holding ``stored`` (a new generation)."""
    rows = RowTable(dimension, capacity=max(1024, len(stored.seqs)))
    rows.append(
        stored.seqs,
        stored.chunk_ids,
        stored.document_ids,
        stored.allows,
        stored.denies,
        stored.vectors,
        stored.attributes,
    )
    return rows


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

    Lock order: ``lock`` before ``db_lock``.
    """

    def __init__(self, table: ChunkTable, path: Path | None, planner: Planner, background: bool) -> None:
        self.table = table
        self.path = path
        self.identity = file_identity(path)
        self.lock = RWLock()
        self.db_lock = threading.Lock()
        with self.db_lock:
            self.rows = rows_from(table.load(), table.dimension)
        self.keeper = GraphKeeper(planner, background)
        self.stale = False
        self.closed = False
        self.last_plan: str | None = None
        self.plans: Counter[str] = Counter()

    @property
    def dimension(self) -> int:
        return self.table.dimension

    def same_file(self) -> bool:
        """False when another process dropped (or dropped and re-created) the store's file."""
        return self.path is None or file_identity(self.path) == self.identity

    def refresh(self) -> None:
        """Reload rows from the table if another connection committed since the last load."""
        if not self.table.persistent:
            return
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
                stored = self.table.load()
            self.rows = rows_from(stored, self.dimension)
            self.keeper.invalidate()
            self.stale = False

    def compact_if_needed(self, tombstone_ratio: float) -> None:
        """Drop tombstones (and the graph over them) once they exceed the ratio. Hold ``lock``."""
        rows = self.rows
        if rows.dead and rows.dead > tombstone_ratio * rows.n:
            self.rows = rows.compacted()
            self.keeper.invalidate()

    def close(self) -> None:
        """Stop graph work and close the connection."""
        self.keeper.stop()
        with self.lock.write():
            self.closed = True
            with self.db_lock:
                self.table.close()
