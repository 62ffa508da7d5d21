"""What BM25 reads of a store's FTS5 index when it ranks over the rows a caller may read.

FTS5's own ``bm25()`` takes its statistics (the row count, the average row
length, the rows that hold each word) from every row of the index, readable
or not, so a document the caller cannot read would move the caller's scores.
Where a filter leaves rows out, ``lexical`` therefore scores in numpy
(``lexicon.bm25``) from what this module reads: each row's length in tokens
(FTS5's ``docsize`` table) and, per phrase of the question, the rows that
hold it and its weighted frequency there (FTS5's index, through
``fts5vocab``), so the statistics can be those of the readable rows alone.
A phrase of several tokens (a word FTS5 splits) is matched as FTS5 matches
it: the tokens at consecutive offsets of one column.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import numpy.typing as npt

from indexer.index.embedded.fulltext import COLUMNS, WEIGHTS
from indexer.index.embedded.lexicon import COLUMN_WEIGHT, VOCAB

Seqs = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]

_SIZES = (
    "SELECT count(*), group_concat(id), group_concat(hex(sz), '')"
    " FROM (SELECT id, sz FROM chunks_fts_docsize ORDER BY id)"
)
_AMONG = " AND doc IN (SELECT seq FROM temp.lexical_among)"
_TOKEN = (
    "SELECT group_concat(doc), group_concat(f) FROM ("
    f" SELECT doc, sum(CASE col {COLUMN_WEIGHT} ELSE 1.0 END) AS f FROM temp.lexicon_vocab WHERE term = ?{{among}}"
    " GROUP BY doc ORDER BY doc)"
)
_INSTANCES = "SELECT doc, col, offset FROM temp.lexicon_vocab WHERE term = ?{among}"
_WEIGHT = dict(zip(COLUMNS, WEIGHTS, strict=True))


def row_sizes(conn: sqlite3.Connection) -> tuple[Seqs, Floats]:
    """Every indexed row's seq (sorted) and its length in tokens over all columns, as ``bm25()`` reads it."""
    count, ids, hexed = conn.execute(_SIZES).fetchone()
    if not count:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    seqs = _numbers(ids).astype(np.int64)
    data = np.frombuffer(bytes.fromhex(hexed), np.uint8)
    # One SQLite varint per column: big-endian groups of 7 bits, the high bit set on all but the last byte.
    last = data < 0x80
    ends = np.flatnonzero(last)
    if len(ends) != len(COLUMNS) * count or not last[-1]:
        raise sqlite3.DatabaseError("the full-text index's row sizes are not one number per column")
    which = np.zeros(len(data), np.int64)
    which[1:] = np.cumsum(last[:-1])
    shifted = (data & 0x7F).astype(np.int64) << (7 * (ends[which] - np.arange(len(data))))
    values = np.bincount(which, weights=shifted.astype(np.float64), minlength=len(ends))
    return seqs, values.reshape(count, len(COLUMNS)).sum(axis=1)


def phrase_postings(
    conn: sqlite3.Connection, phrases: Sequence[Sequence[str]], among: Sequence[int] | None
) -> list[tuple[Seqs, Floats]]:
    """Per phrase (its tokens), the seqs of the rows holding it (sorted) and its weighted frequency in each
    (``fulltext.WEIGHTS`` per column), read in one transaction; ``among``: of these seqs only."""
    conn.execute(VOCAB)
    with _among(conn, among):
        where = "" if among is None else _AMONG
        return [_phrase(conn, tokens, where) for tokens in phrases]


def _phrase(conn: sqlite3.Connection, tokens: Sequence[str], where: str) -> tuple[Seqs, Floats]:
    if not tokens:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)  # FTS5 matches an empty phrase nowhere
    if len(tokens) == 1:
        docs, freqs = conn.execute(_TOKEN.format(among=where), (tokens[0],)).fetchone()
        if docs is None:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        return _numbers(docs).astype(np.int64), _numbers(freqs)
    # Several tokens: a phrase instance starts where token i sits at its offset + i in the same column.
    starts: set[tuple[int, str, int]] | None = None
    for i, token in enumerate(tokens):
        found = conn.execute(_INSTANCES.format(among=where), (token,))
        at = {(int(doc), str(col), int(offset) - i) for doc, col, offset in found}
        starts = at if starts is None else starts & at
        if not starts:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
    weighted: dict[int, float] = {}
    for doc, col, _ in sorted(starts or ()):
        weighted[doc] = weighted.get(doc, 0.0) + _WEIGHT.get(col, 1.0)
    return np.fromiter(weighted, np.int64, len(weighted)), np.fromiter(weighted.values(), np.float64, len(weighted))


@contextmanager
def _among(conn: sqlite3.Connection, among: Sequence[int] | None) -> Iterator[None]:
    """A read transaction; with ``among``, those seqs in ``temp.lexical_among`` until it is rolled back."""
    if among is not None:
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS lexical_among (seq INTEGER PRIMARY KEY)")
    conn.execute("BEGIN")
    try:
        if among is not None:
            conn.executemany("INSERT INTO temp.lexical_among (seq) VALUES (?)", ((int(seq),) for seq in among))
        yield
    finally:
        conn.execute("ROLLBACK")


def _numbers(listed: str | int | float) -> Floats:
    # group_concat of one value is that value's text; of several, comma-separated decimals.
    return np.array(str(listed).split(","), dtype=np.float64)
