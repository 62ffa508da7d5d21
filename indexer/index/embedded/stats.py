"""What the embedded index reports about one store."""

from __future__ import annotations

from dataclasses import dataclass

from indexer.index.embedded.ef_policy import EfPolicy


@dataclass(frozen=True, slots=True)
class EmbeddedStats:
    """What the embedded index is doing for one store (for tests, benchmarks, ``doctor``)."""

    rows: int
    tombstones: int
    graph_rows: int
    graph_builds: int
    ef_policy: EfPolicy
    last_plan: str | None
    plans: dict[str, int]
    graph_loaded: bool = False  # the graph was read from the store's graph file, not built
    rows_loaded: bool = False  # the rows at open came from that file too (caught up), not from every SQLite row
    reloads: int = 0  # full reloads of the rows since the store was opened
    catch_ups: int = 0  # incremental applications of other processes' writes
    graph_adoptions: int = 0  # graphs another process saved, adopted while the store was open
    lexicon_reads: int = 0  # copies of the full-text index read into memory (``lexicon_keeper``)
    lexicon_pairs: int = 0  # (token, chunk) pairs in the newest copy; 0: none
    last_lexical: str | None = None  # where the last BM25 search read the postings: "memory" or "fts5"
