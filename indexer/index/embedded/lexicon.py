"""A store's full-text index copied into memory, ranked as FTS5's ``bm25()`` ranks it, bit for bit.

FTS5 scores every matching row through its auxiliary-function API before the
first comes back: about 1.5 µs a row, so a question whose words are in most
of a store's chunks pays tens of milliseconds. This copy holds, per token,
the rows that contain it (as positions in the sorted seqs) and the token's
weighted frequency there (``fulltext.WEIGHTS`` per column), plus each row's
size in tokens, so a question costs one vectorised pass per word over that
word's rows.

Nothing here tokenizes on its own: the postings are read from FTS5's own
index (``fts5vocab``), and a question's words are tokenized by FTS5 too (a
private in-memory FTS5 table with the same tokenizer), so the tokens are the
ones FTS5 would match. The score is FTS5's formula (``fts5_aux.c``, k1 1.2,
b 0.75, IDF floored at 1e-6) evaluated in the same order in float64, so it is
the same number, and ties are ordered by chunk id as ``lexical`` orders them.
Given the rows a caller may read, the statistics (row count, average length,
rows per token) are computed over those rows alone: the scores FTS5 would
give in an index holding only them (``bm25``, shared with ``postings``).
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache

import numpy as np
import numpy.typing as npt

from indexer.index.embedded.fulltext import COLUMNS, TOKENIZER, WEIGHTS
from indexer.index.embedded.rows import Mask

K1 = 1.2  # FTS5's bm25() constants
B = 0.75
_IDF_FLOOR = 1e-6
#: Per ``Lexicon``, the most bm25 terms (floats) it keeps of tokens questions searched over every row: 16 MB,
#: or a quarter of its postings where that is more (at 1M chunks a common word's terms are 1M floats, so 16 MB
#: kept two and every question recomputed the rest: 13 % of its CPU; a quarter is ~5 % of the copy's memory).
TERMS_KEPT = 2_000_000
TERMS_KEPT_SHARE = 4  # of the postings

COLUMN_WEIGHT = " ".join(f"WHEN '{column}' THEN {weight!r}" for column, weight in zip(COLUMNS, WEIGHTS, strict=True))
VOCAB = "CREATE VIRTUAL TABLE IF NOT EXISTS temp.lexicon_vocab USING fts5vocab(main, chunks_fts, instance)"
# One row per token: its rows' seqs, token counts and weighted frequencies as aligned comma-separated lists
# (parsed in numpy, not row by row in Python: the inner query's rows are the store's (token, row) pairs).
_POSTINGS = f"""
    SELECT term, group_concat(doc), group_concat(n), group_concat(f) FROM (
        SELECT term, doc, count(*) AS n, sum(CASE col {COLUMN_WEIGHT} ELSE 1.0 END) AS f
        FROM temp.lexicon_vocab GROUP BY term, doc
    ) GROUP BY term
"""
_PAIRS = "CREATE VIRTUAL TABLE IF NOT EXISTS temp.lexicon_rows USING fts5vocab(main, chunks_fts, row)"

Floats = npt.NDArray[np.float64]
Positions = npt.NDArray[np.int32]
Indices = npt.NDArray[np.int32] | npt.NDArray[np.int64]  # rows, as positions in ``seqs``


@dataclass(frozen=True, slots=True)
class Lexicon:
    """FTS5's index of one store as one read transaction saw it. Immutable; shared by queries."""

    seqs: npt.NDArray[np.int64]  # every indexed row's seq, sorted: a posting's position indexes it
    sizes: Floats  # tokens per row, all columns
    avgdl: float
    spans: dict[str, tuple[int, int]]  # token -> [start, end) in positions/freqs
    positions: Positions
    freqs: npt.NDArray[np.float32]  # weighted frequency (small integers: exact in float32)
    #: Per row, bm25's length term ``k1 * (1 - b + b * D / avgdl)``: the same values every query computed per
    #: posting (the same operations in the same order), once.
    norms: Floats = field(init=False, repr=False, compare=False)
    #: Per token searched over every row (by its span's start), bm25's term for each of its rows: the same
    #: values every such question computed (``bm25_terms``), kept up to ``terms_kept`` floats in all.
    _terms: dict[int, Floats] = field(init=False, repr=False, compare=False)
    _terms_lock: threading.Lock = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "norms", K1 * ((1 - B) + B * self.sizes / self.avgdl))
        object.__setattr__(self, "_terms", {})
        object.__setattr__(self, "_terms_lock", threading.Lock())

    @property
    def postings(self) -> int:
        return len(self.positions)

    @property
    def terms_kept(self) -> int:
        """The most bm25 terms (floats) it keeps (``TERMS_KEPT``, or a ``TERMS_KEPT_SHARE``-th of its postings)."""
        return max(TERMS_KEPT, self.postings // TERMS_KEPT_SHARE)

    @property
    def budget_size(self) -> int:
        """Its size as a budget counts it (``budget_size``)."""
        return budget_size(self.postings, len(self.spans))

    def scores(self, tokens: Sequence[str], readable: Mask | None = None) -> Floats:
        """Per row (``seqs`` order), FTS5's bm25() of the query whose phrases are ``tokens``, negated
        back to higher-is-better; 0.0 where no token occurs. ``readable`` (per row): only those rows are
        scored, and the statistics (row count, average length, rows per token) are theirs, as FTS5 would
        compute them over an index holding only them."""
        if readable is None:  # bm25() of every row, a token's terms (the same each time) kept
            scores = np.zeros(len(self.sizes), np.float64)
            for start, end in self._spans(tokens):
                if end > start:  # FTS5 adds idf * 0.0 for a token in no row: nothing
                    scores[self.positions[start:end]] += self._whole_index_terms(start, end)
            return scores
        stats = readable_stats(self.sizes, readable)
        allowed = np.flatnonzero(readable)
        phrases = []
        for start, end in self._spans(tokens):
            at = self.positions[start:end]
            if len(at) > len(allowed):  # the readable rows looked up among the token's (ascending) rows
                found = np.minimum(np.searchsorted(at, allowed), len(at) - 1)
                found = found[at[found] == allowed]
                phrases.append((at[found], self.freqs[start:end][found]))
            else:  # the token's rows that are readable
                kept = readable[at]
                phrases.append((at[kept], self.freqs[start:end][kept]))
        return bm25(phrases, self.sizes, stats)

    def _whole_index_terms(self, start: int, end: int) -> Floats:
        """``bm25_terms`` of the token at ``[start, end)`` over every row (kept while ``terms_kept`` allows)."""
        terms = self._terms.get(start)
        if terms is None:
            at = self.positions[start:end]
            stats = Bm25Stats(len(self.seqs), self.avgdl)
            terms = bm25_terms(len(at), self.freqs[start:end], self.norms[at], stats)
            with self._terms_lock:
                if sum(len(kept) for kept in self._terms.values()) + len(terms) <= self.terms_kept:
                    self._terms[start] = terms
        return terms

    def _spans(self, tokens: Sequence[str]) -> list[tuple[int, int]]:
        return [self.spans.get(token, (0, 0)) for token in tokens]


@dataclass(frozen=True, slots=True)
class Bm25Stats:
    """What bm25() reads of the whole index: its rows and their average length in tokens."""

    rows: int
    avgdl: float


def readable_stats(sizes: Floats, readable: Mask) -> Bm25Stats:
    """The statistics of an index holding only the ``readable`` rows (``sizes``: each row's length)."""
    rows = int(np.count_nonzero(readable))
    total = float(sizes[readable].sum())  # integers: exact in any order below 2**53
    return Bm25Stats(rows, total / rows if rows else 1.0)


def bm25(
    phrases: Sequence[tuple[Indices, npt.NDArray[np.float32] | Floats]],
    sizes: Floats,
    stats: Bm25Stats,
    norms: Floats | None = None,
) -> Floats:
    """Per row of ``sizes``, FTS5's bm25() of a query with one phrase per ``phrases`` entry (the rows that
    hold it, each once, and its weighted frequency there), negated to higher-is-better; the same float as
    FTS5 (its operations in its order). ``norms``: ``Lexicon.norms`` when ``stats`` are the whole index's."""
    scores = np.zeros(len(sizes), np.float64)
    for at, weighted in phrases:
        if len(at) == 0:
            continue  # FTS5 adds idf * 0.0: nothing
        norm = norms[at] if norms is not None else K1 * ((1 - B) + B * sizes[at] / stats.avgdl)
        scores[at] += bm25_terms(len(at), weighted, norm, stats)
    return scores


def bm25_terms(hits: int, weighted: npt.NDArray[np.float32] | Floats, norm: Floats, stats: Bm25Stats) -> Floats:
    """One phrase's term of FTS5's bm25() in each of the ``hits`` rows holding it (its weighted frequency
    there, and each row's length term ``norm``)."""
    idf = math.log((stats.rows - hits + 0.5) / (hits + 0.5))
    if idf <= 0.0:
        idf = _IDF_FLOOR
    freq = weighted.astype(np.float64)
    # fts5Bm25Function: idf * ((f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl))), in this order.
    return idf * ((freq * (K1 + 1.0)) / (freq + norm))


#: What one distinct token costs in a ``Lexicon``, in (token, row) pairs (its dict entry and span: ~200 bytes).
TOKEN_PAIRS = 25


def budget_size(pairs: int, tokens: int) -> int:
    """A ``Lexicon``'s size in (token, row) pairs (8 bytes each), a distinct token counted as ``TOKEN_PAIRS``."""
    return pairs + TOKEN_PAIRS * tokens


def postings_in(conn: sqlite3.Connection) -> int:
    """``budget_size`` of the store's ``Lexicon`` before it is read (cheap: FTS5's per-token counts)."""
    conn.execute(_PAIRS)
    pairs, tokens = conn.execute("SELECT coalesce(sum(doc), 0), count(*) FROM temp.lexicon_rows").fetchone()
    return budget_size(int(pairs), int(tokens))


def read_lexicon(conn: sqlite3.Connection) -> Lexicon:
    """The store's FTS5 index as one read transaction sees it (call inside one)."""
    conn.execute(VOCAB)
    seqs = np.fromiter((int(row[0]) for row in conn.execute("SELECT id FROM chunks_fts_docsize")), np.int64)
    seqs.sort()
    spans: dict[str, tuple[int, int]] = {}
    parts_at: list[Positions] = []
    parts_n: list[Floats] = []
    parts_f: list[npt.NDArray[np.float32]] = []
    start = 0
    for term, docs, counts, freqs in conn.execute(_POSTINGS):
        held = _numbers(docs).astype(np.int64)
        at = np.minimum(np.searchsorted(seqs, held), max(len(seqs) - 1, 0))
        if not len(seqs) or not np.array_equal(seqs[at], held):
            raise sqlite3.DatabaseError("the full-text index names rows it does not size")  # FTS5 answers
        at = at.astype(np.int32)
        order = np.argsort(at, kind="stable")  # each token's rows ascending (``scores`` searches them)
        parts_at.append(at[order])
        parts_n.append(_numbers(counts)[order])
        parts_f.append(_numbers(freqs).astype(np.float32)[order])
        spans[str(term)] = (start, start + len(at))
        start += len(at)
    positions = np.concatenate(parts_at) if parts_at else np.zeros(0, np.int32)
    # Tokens per row: one pass over every pair (the counts are integers, exact in any order).
    counts = np.concatenate(parts_n) if parts_n else np.zeros(0, np.float64)
    sizes = np.bincount(positions, weights=counts, minlength=len(seqs)).astype(np.float64)
    total = float(sizes.sum())
    return Lexicon(
        seqs=seqs,
        sizes=sizes,
        avgdl=total / len(seqs) if len(seqs) else 1.0,
        spans=spans,
        positions=positions,
        freqs=np.concatenate(parts_f) if parts_f else np.zeros(0, np.float32),
    )


def _numbers(listed: str | int | float) -> Floats:
    # group_concat of one value is that value's text; of several, comma-separated decimals.
    return np.array(str(listed).split(","), dtype=np.float64)


class _Tokenizer:
    """FTS5's tokenizer on a private in-memory table: a question's words become the tokens FTS5 matches."""

    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._conn.execute(f"CREATE VIRTUAL TABLE words USING fts5(word, tokenize='{TOKENIZER}')")
        self._conn.execute("CREATE VIRTUAL TABLE tokens USING fts5vocab(words, instance)")
        self._lock = threading.Lock()

    def tokens(self, word: str) -> tuple[str, ...]:
        with self._lock:
            self._conn.execute("INSERT INTO words (rowid, word) VALUES (1, ?)", (word,))
            try:
                found = self._conn.execute("SELECT term FROM tokens ORDER BY offset").fetchall()
            finally:
                self._conn.execute("DELETE FROM words")
        return tuple(str(row[0]) for row in found)


@cache
def _tokenizer() -> _Tokenizer:
    return _Tokenizer()


@lru_cache(maxsize=65536)
def word_tokens(word: str) -> tuple[str, ...]:
    """The tokens FTS5 makes of ``word`` (one for a plain word; its Porter stem, case and diacritics folded)."""
    return _tokenizer().tokens(word)


def phrase_tokens(terms: Sequence[str]) -> list[str] | None:
    """The token of each query word, in order (FTS5's phrases); None when a word is not exactly one token
    (FTS5 would match it as a phrase of adjacent tokens, which the postings cannot answer)."""
    tokens: list[str] = []
    for term in terms:
        made = word_tokens(term)
        if len(made) != 1:
            return None
        tokens.append(made[0])
    return tokens
