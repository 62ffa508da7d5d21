"""Lexical (BM25) search in the embedded index, over what the caller may read and with its statistics.

BM25's statistics (the row count, the average row length, the rows that hold
each word) are those of the rows that pass the filter, which carries the
caller's access: the caller's hits, their order and their scores are exactly
those of an index holding only the rows the caller may read, so a document
the caller cannot read moves nothing they see.

Where the store keeps an in-memory copy of its full-text index (``docqa serve``;
``lexicon``, ``lexicon_keeper``) that holds exactly the store's rows, the copy
ranks: FTS5's formula in numpy over the postings of the readable rows, every
readable matching row scored, no ``MAX_RANKED`` bound. Otherwise:

- when every live row passes the filter, FTS5's own ``bm25()`` ranks (its
  statistics are then the caller's) and the rows are read back in batches,
  mapped to their in-memory rows (a sorted seq → row index kept per row-table
  state); reading stops once ``k`` rows are read and no later row can tie with
  the last. At most ``MAX_RANKED`` rows are ranked;
- when the filter leaves rows out, the question's postings and the rows'
  lengths are read from FTS5's index (``postings``; the lengths kept per
  row-table state) and scored in numpy like the copy. When few rows pass the
  filter (at most a quarter of the store), SQLite hands back the postings of
  those rows alone, so Python's work follows the readable rows.

Either way at most ``MAX_QUERY_TERMS`` words (``lexical.query_terms``) are
searched, rows that fail the filter never count toward ``k`` (``k`` hits come
back whenever ``k`` readable rows match) and ties are ordered by chunk id
(``bench/lexical.py`` measures the cost).
"""

from __future__ import annotations

import heapq
import threading
import weakref
from collections.abc import Iterator
from contextlib import closing

import numpy as np
import numpy.typing as npt

from acl.errors import InvalidArgument, NotFound
from indexer.errors import IndexUnavailable
from indexer.index.embedded.filters import filter_mask
from indexer.index.embedded.fulltext import match_expression
from indexer.index.embedded.lexicon import Floats, bm25, phrase_tokens, readable_stats, word_tokens
from indexer.index.embedded.rows import Mask, Rows, RowTable
from indexer.index.embedded.sqlite import ChunkTable
from indexer.index.embedded.store import OpenStore
from indexer.index.filters import Filter, validate
from indexer.index.lexical import query_terms
from indexer.index.port import SearchHit

#: Ranked rows read at most for one search (past them, a narrow filter may get fewer than k).
MAX_RANKED = 200_000
#: Up to this many rows, and this share of the live rows, only the postings of the rows passing the filter are read.
AMONG_ROWS = 50_000
AMONG_SHARE = 0.25
#: Rows beyond ``k`` the first FTS5 ranking pass asks for.
FIRST_PASS_SPARE = 16
#: Up to this many rows tied at the k-th score are ordered by chunk id in Python; more, by a cached rank.
TIED_IN_PYTHON = 512
_PEELS = 4  # bulk-tied top scores peeled off before np.partition (kth_largest)
_RETRIES = 3
_Ranked = list[tuple[int, int, float]]  # (row, seq, score)

_id_rank: weakref.WeakKeyDictionary[RowTable, tuple[tuple[int, int], Rows]] = weakref.WeakKeyDictionary()
_by_seq: weakref.WeakKeyDictionary[RowTable, tuple[tuple[int, int, int], Rows, Rows]] = weakref.WeakKeyDictionary()
_sizes_of: weakref.WeakKeyDictionary[RowTable, tuple[tuple[int, int, int], Floats]] = weakref.WeakKeyDictionary()
_by_seq_lock = threading.Lock()


def lexical_search(store: OpenStore, store_id: str, text: str, k: int, filter_: Filter | None) -> list[SearchHit]:
    """The best ``k`` rows of ``store`` for the words of ``text`` among those matching ``filter_``."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidArgument(f"k must be a positive integer, got {k!r}")
    if filter_ is not None:
        validate(filter_)
    terms = query_terms(text)
    match = match_expression(terms)
    for _ in range(_RETRIES):
        store.refresh()
        with store.lock.read():
            if store.closed:
                raise NotFound(f"store {store_id!r} does not exist")
            rows = store.rows
            mask = filter_mask(filter_, rows)
            if not match or not mask.any():
                return []
            found = _from_lexicon(store, rows, mask, terms, k)
            store.last_lexical = "fts5" if found is None else "memory"
            records = {}
            with store.db_lock:
                if found is None and int(np.count_nonzero(mask)) == len(_seq_index(rows)[0]):
                    found = _ranked_all(store.table, rows, match, k)
                elif found is None:
                    found = _ranked_readable(store.table, rows, mask, terms, k)
                if found is not None:
                    # Each hit carries a copy of its vector (for the cosine), made while the read lock holds the rows.
                    vectors = {seq: rows.vectors[row].copy() for row, seq, _ in found}
                    records = store.table.fetch([seq for _, seq, _ in found], vectors)
            if found is not None and len(records) == len(found):
                return [SearchHit(records[seq], score) for _, seq, score in found]
        store.stale = True  # the database holds rows the memory does not: another process wrote
    raise IndexUnavailable("the embedded index kept changing during the search; retry")


def _from_lexicon(store: OpenStore, rows: RowTable, mask: Mask, terms: list[str], k: int) -> _Ranked | None:
    """The best ``k`` (row, seq, score) passing ``mask`` from the store's in-memory copy of its full-text
    index, ranked as FTS5 ranks them; None when there is no copy of exactly these rows (FTS5 answers)."""
    tokens = phrase_tokens(terms)
    if tokens is None:
        return None
    seqs_sorted, rows_sorted = _seq_index(rows)
    lexicon = store.lexicons.lexicon_for(seqs_sorted, (rows.generation, rows.n, rows.dead))
    if lexicon is None:
        return None
    readable = mask[rows_sorted]
    scores = lexicon.scores(tokens, None if readable.all() else readable)
    return _best(scores, seqs_sorted, rows_sorted, rows, mask, k)


def _ranked_readable(table: ChunkTable, rows: RowTable, mask: Mask, terms: list[str], k: int) -> _Ranked | None:
    """The best ``k`` (row, seq, score) passing ``mask``, scored from FTS5's postings with the statistics of
    the rows passing ``mask`` alone (``postings``); None when FTS5 and the rows in memory differ (the
    database changed since the rows were loaded)."""
    seqs_sorted, rows_sorted = _seq_index(rows)
    sizes = _sizes(table, rows, seqs_sorted)
    if sizes is None:
        return None
    readable = mask[rows_sorted]
    allowed = np.flatnonzero(mask)
    among = None
    if len(allowed) <= AMONG_ROWS and len(allowed) <= AMONG_SHARE * len(seqs_sorted):
        among = rows.seqs[allowed].tolist()  # few readable rows: FTS5 hands back theirs only
    phrases = []
    for seqs, weighted in table.phrase_postings([word_tokens(term) for term in terms], among):
        at = np.minimum(np.searchsorted(seqs_sorted, seqs), max(len(seqs_sorted) - 1, 0))
        if len(seqs) and not np.array_equal(seqs_sorted[at], seqs):
            return None
        kept = readable[at]
        phrases.append((at[kept], weighted[kept]))
    return _best(bm25(phrases, sizes, readable_stats(sizes, readable)), seqs_sorted, rows_sorted, rows, mask, k)


def _best(scores: Floats, seqs_sorted: Rows, rows_sorted: Rows, rows: RowTable, mask: Mask, k: int) -> _Ranked:
    """The best ``k`` (row, seq, score) of ``scores`` (per row in ``seqs_sorted`` order; 0: no match) that pass
    ``mask``, ties by chunk id."""
    hits = np.flatnonzero(scores > 0.0)
    hits = hits[mask[rows_sorted[hits]]]
    if len(hits) > k:  # the rows above the k-th score, then the tied ones with the smallest chunk ids
        hit_scores = scores[hits]  # gathered once: up to every row of the store
        kth = kth_largest(hit_scores, k)
        tied = hits[hit_scores == kth]
        hits = hits[hit_scores > kth]
        need = k - len(hits)
        if len(tied) > TIED_IN_PYTHON:  # formulaic texts tie in bulk: chunk ids ranked once per row table
            tied = tied[np.argpartition(_id_ranks(rows)[rows_sorted[tied]], need - 1)[:need]]
        elif len(tied) > need:
            ids = [rows.chunk_ids[row] for row in rows_sorted[tied].tolist()]
            tied = tied[heapq.nsmallest(need, range(len(ids)), key=ids.__getitem__)]
        hits = np.concatenate([hits, tied])
    kept = list(zip(rows_sorted[hits].tolist(), seqs_sorted[hits].tolist(), scores[hits].tolist(), strict=True))
    return _by_score_then_id(kept, rows)[:k]


def kth_largest(values: npt.NDArray[np.float64], k: int) -> float:
    """The ``k``-th largest of ``values`` (``1 <= k <= len(values)``, no NaN: BM25 scores above 0).

    ``np.partition`` slows down ~15x on an array of a few distinct values (BM25 over formulaic texts: 87.5k
    rows at one score, 12.5k at another took 12 ms at 100k rows against 0.8 ms for distinct scores), so
    the top scores are peeled off while they come in bulk, up to ``_PEELS`` peels of one pass each; a
    top score held by one row ends the peeling, and what is left goes to ``np.partition`` (still slow when
    a lone top score sits above a bulk tie, which the formulaic bench store does not have).
    """
    above, rest = 0, values
    for _ in range(_PEELS):
        top = rest.max()
        at_top = int(np.count_nonzero(rest == top))
        if above + at_top >= k:
            return float(top)
        if at_top == 1:
            break
        above, rest = above + at_top, rest[rest < top]
    return float(np.partition(rest, len(rest) - (k - above))[len(rest) - (k - above)])


def _ranked_all(table: ChunkTable, rows: RowTable, match: str, k: int) -> _Ranked | None:
    """The best ``k`` (row, seq, score) of every live row (the caller may read them all: FTS5's statistics are
    the caller's), ties by chunk id; None when a ranked row is not in memory (the database changed since the
    rows were loaded).

    FTS5 sorts every matching row, but with a small ``LIMIT`` it keeps only the best ones while it scores
    (a bounded sort), which costs about half of a full sort here. So the first pass asks for the rows ``k``
    needs, with room to spare; a pass that could not decide (the last kept row may tie with the next) asks
    again for all of them (``MAX_RANKED``).
    """
    seqs_sorted, rows_sorted = _seq_index(rows)
    limit = min(MAX_RANKED, int((k + FIRST_PASS_SPARE) * 1.5) + 1)
    while True:
        with closing(table.ranked(match, limit)) as batches:  # its transaction ends here, read or not
            found, decided = _kept(batches, seqs_sorted, rows_sorted, rows, k, limit)
        if found is None or decided or limit >= MAX_RANKED:
            return found
        limit = MAX_RANKED  # tied with the rows after the last one read (formulaic texts tie in bulk)


def _kept(
    batches: Iterator[list[tuple[int, float]]], seqs_sorted: Rows, rows_sorted: Rows, rows: RowTable, k: int, limit: int
) -> tuple[_Ranked | None, bool]:
    """The best ``k`` of ``limit`` ranked rows, and whether they are the best of all matching rows (all of
    them were read, or a row scored below the k-th kept one); (None, True) when a ranked row is not in memory."""
    kept: _Ranked = []
    read = 0
    for batch in batches:
        read += len(batch)
        seqs = np.fromiter((seq for seq, _ in batch), np.int64, len(batch))
        at = np.minimum(np.searchsorted(seqs_sorted, seqs), max(len(seqs_sorted) - 1, 0))
        if len(seqs_sorted) == 0 or not np.array_equal(seqs_sorted[at], seqs):
            return None, True
        found = rows_sorted[at]
        for (seq, score), row in zip(batch, found.tolist(), strict=True):
            if len(kept) >= k and score < kept[k - 1][2]:
                return _by_score_then_id(kept, rows)[:k], True
            kept.append((row, seq, score))
    return _by_score_then_id(kept, rows)[:k], read < limit


def _by_score_then_id(kept: _Ranked, rows: RowTable) -> _Ranked:
    return sorted(kept, key=lambda item: (-item[2], rows.chunk_ids[item[0]]))


def _seq_index(rows: RowTable) -> tuple[Rows, Rows]:
    """The live rows' seqs, sorted, and their rows: kept while the row table is unchanged."""
    state = (rows.generation, rows.n, rows.dead)
    with _by_seq_lock:
        cached = _by_seq.get(rows)
    if cached is not None and cached[0] == state:
        return cached[1], cached[2]
    live = np.flatnonzero(rows.alive[: rows.n])
    order = np.argsort(rows.seqs[live], kind="stable")
    seqs_sorted, rows_sorted = rows.seqs[live][order], live[order]
    with _by_seq_lock:
        _by_seq[rows] = (state, seqs_sorted, rows_sorted)
    return seqs_sorted, rows_sorted


def _sizes(table: ChunkTable, rows: RowTable, seqs_sorted: Rows) -> Floats | None:
    """The live rows' lengths in tokens (``seqs_sorted`` order), kept while the row table is unchanged; None
    when FTS5 does not hold every live row (the database changed since the rows were loaded)."""
    state = (rows.generation, rows.n, rows.dead)
    with _by_seq_lock:
        cached = _sizes_of.get(rows)
    if cached is not None and cached[0] == state:
        return cached[1]
    seqs, sizes = table.row_sizes()
    at = np.minimum(np.searchsorted(seqs, seqs_sorted), max(len(seqs) - 1, 0))
    if len(seqs_sorted) and (not len(seqs) or not np.array_equal(seqs[at], seqs_sorted)):
        return None
    sizes = sizes[at]
    with _by_seq_lock:
        _sizes_of[rows] = (state, sizes)
    return sizes


def _id_ranks(rows: RowTable) -> Rows:
    """Each row's rank in chunk-id order (rows ``0..n-1``): kept while no row is appended or compacted away."""
    state = (rows.generation, rows.n)
    with _by_seq_lock:
        cached = _id_rank.get(rows)
    if cached is not None and cached[0] == state:
        return cached[1]
    ids = rows.chunk_ids[: rows.n]
    ranks = np.empty(len(ids), np.int64)
    ranks[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))
    with _by_seq_lock:
        _id_rank[rows] = (state, ranks)
    return ranks
