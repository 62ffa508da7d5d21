"""Lexical (BM25) search in the embedded index: SQLite FTS5 ranks, the in-memory filter mask decides.

The filter is applied inside the search, as ``knn`` applies it: FTS5 ranks the
matching rows best first and the rows that fail the filter's mask are skipped
without counting toward ``k``. When few rows pass the filter the FTS5 query
is restricted to them (``rowid IN (...)``), so a caller who may read 0.5 % of
a store pays for that 0.5 %; otherwise the ranked rows are read in a window
sized from the filter's selectivity and widened (at most to every match) while
too few of them passed, so ``k`` hits come back whenever ``k`` readable rows
contain a word of the question.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from acl.errors import IndexUnavailable, InvalidArgument, NotFound
from indexer.index.embedded.filters import filter_mask
from indexer.index.embedded.fulltext import match_expression
from indexer.index.embedded.rows import Mask, RowTable
from indexer.index.embedded.sqlite import ChunkTable
from indexer.index.embedded.store import OpenStore
from indexer.index.filters import Filter, validate
from indexer.index.lexical import query_terms
from indexer.index.port import SearchHit

#: Rows passing the filter up to which the FTS5 query is restricted to them.
NARROW_ROWS = 4096
_RETRIES = 3
_Ranked = list[tuple[int, int, float]]  # (row, seq, score)


def lexical_search(store: OpenStore, store_id: str, text: str, k: int, filter_: Filter | None) -> list[SearchHit]:
    """The best ``k`` rows of ``store`` for the words of ``text`` among those matching ``filter_``."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidArgument(f"k must be a positive integer, got {k!r}")
    if filter_ is not None:
        validate(filter_)
    match = match_expression(query_terms(text))
    for _ in range(_RETRIES):
        store.refresh()
        with store.lock.read():
            if store.closed:
                raise NotFound(f"store {store_id!r} does not exist")
            rows = store.rows
            mask = filter_mask(filter_, rows)
            allowed = int(np.count_nonzero(mask))
            if not match or allowed == 0:
                return []
            with store.db_lock:
                found = _ranked_allowed(store.table, rows, mask, allowed, match, k)
                records = {} if found is None else store.table.fetch([seq for _, seq, _ in found])
            if found is not None and len(records) == len(found):
                return [
                    SearchHit(dataclasses.replace(records[seq], vector=rows.vectors[row].copy()), score)
                    for row, seq, score in found
                ]
        store.stale = True  # the database changed under the rows: another process wrote
    raise IndexUnavailable("the embedded index kept changing during the search; retry")


def _ranked_allowed(table: ChunkTable, rows: RowTable, mask: Mask, allowed: int, match: str, k: int) -> _Ranked | None:
    """The best ``k`` (row, seq, score) passing ``mask``; None when a ranked row is not the row in memory."""
    if allowed <= NARROW_ROWS and allowed < rows.live:
        only = rows.seqs[np.flatnonzero(mask)].tolist()
        return _keep(table.ranked(match, k, only), rows, mask, k)
    # Rows to read so that about 2k of them pass a filter of this selectivity, plus slack.
    window = k + math.ceil(2 * k * rows.live / allowed) + 64
    while True:
        page = table.ranked(match, window)
        kept = _keep(page, rows, mask, k)
        if kept is None or len(kept) >= k or len(page) < window or window == -1:
            return kept
        window = -1 if window * 4 >= rows.live else window * 4


def _keep(page: list[tuple[int, str, float]], rows: RowTable, mask: Mask, k: int) -> _Ranked | None:
    kept: _Ranked = []
    for seq, chunk_id, score in page:
        row = rows.chunk_rows.get(chunk_id)
        if row is None or int(rows.seqs[row]) != seq:
            return None
        if mask[row]:
            kept.append((row, seq, score))
            if len(kept) == k:
                break
    return kept
