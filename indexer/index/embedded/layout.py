"""Laying a store's stored rows out in memory: in ``seq`` order, or along a saved graph's nodes."""

from __future__ import annotations

import numpy as np

from indexer.index.embedded.graph_file import GraphFileError, StoredGraph
from indexer.index.embedded.rows import NO_ATTRIBUTES, RowTable
from indexer.index.embedded.sqlite import StoredRows

#: Graph nodes whose vectors are compared with the stored rows' before a saved graph is served.
CHECKED_NODES = 1024


def append_stored(rows: RowTable, stored: StoredRows) -> None:
    """Add every row of ``stored`` at the end of ``rows``, in ``seq`` order."""
    rows.append(
        stored.seqs,
        stored.chunk_ids,
        stored.document_ids,
        stored.allows,
        stored.denies,
        stored.vectors,
        stored.attributes,
    )


def apply_changed(rows: RowTable, documents: list[str], stored: StoredRows) -> None:
    """Make ``stored`` the rows of ``documents`` in ``rows``: every row of a changed document, and any row
    holding one of ``stored``'s chunk ids, becomes a tombstone (added, removed and re-ACLed alike), then
    ``stored`` is appended."""
    rows.tombstone(
        np.union1d(rows.live_rows_of("document_id", documents), rows.live_rows_of("chunk_id", stored.chunk_ids))
    )
    append_stored(rows, stored)


def rows_from(stored: StoredRows, dimension: int) -> RowTable:
    """A fresh row table holding ``stored`` (a new generation)."""
    rows = RowTable(dimension, capacity=max(1024, len(stored.seqs)))
    append_stored(rows, stored)
    return rows


def rows_along(stored: StoredRows, dimension: int, saved: StoredGraph, tombstone_ratio: float) -> RowTable:
    """A fresh row table whose row ``i`` is graph node ``i``'s row, then the rows the graph lacks.

    A node whose row is gone is a tombstone. Raises GraphFileError when the
    graph's vectors are not the rows' (a sample is compared) or when so many
    of its rows are gone that the table would be compacted at once.
    """
    nodes = len(saved.node_seqs)
    seqs = np.asarray(stored.seqs, np.int64)  # ascending: ``load`` reads in seq order
    where = np.minimum(np.searchsorted(seqs, saved.node_seqs), max(len(seqs) - 1, 0))
    found = (saved.node_seqs >= 0) & (seqs[where] == saved.node_seqs) if len(seqs) else np.zeros(nodes, np.bool_)
    present = where[found]
    gone = nodes - len(present)
    total = nodes + len(seqs) - len(present)
    if gone and gone > tombstone_ratio * total:
        raise GraphFileError(f"{gone} of its {nodes} rows are gone")
    rng = np.random.default_rng(0)
    sample = np.sort(rng.choice(np.flatnonzero(found), min(CHECKED_NODES, len(present)), replace=False))
    if len(sample) and not np.array_equal(saved.graph.vectors(sample), stored.vectors[where[sample]]):
        raise GraphFileError("its vectors are not the store's")

    order = np.full(nodes, -1, np.int64)
    order[found] = present
    rest = np.setdiff1d(np.arange(len(seqs)), present, assume_unique=True)
    picks = np.concatenate([order, rest]).tolist()
    rows = RowTable(dimension, capacity=max(1024, len(picks)))
    vectors = np.zeros((len(picks), dimension), np.float32)
    live = np.asarray(picks) >= 0
    vectors[live] = stored.vectors[np.asarray(picks)[live]]
    rows.append(
        [int(stored.seqs[i]) if i >= 0 else -1 for i in picks],
        [stored.chunk_ids[i] if i >= 0 else f"\0gone:{row}" for row, i in enumerate(picks)],
        [stored.document_ids[i] if i >= 0 else "\0gone" for i in picks],
        [stored.allows[i] if i >= 0 else [] for i in picks],
        [stored.denies[i] if i >= 0 else [] for i in picks],
        vectors,
        [stored.attributes[i] if i >= 0 else NO_ATTRIBUTES for i in picks],
    )
    rows.tombstone(np.flatnonzero(~live))
    return rows
