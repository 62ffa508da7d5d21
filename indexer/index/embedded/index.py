"""The embedded index adapter: in-process, persisted in SQLite, no server needed.

Each store is one SQLite file (``<data_dir>/<store_id>.sqlite``, WAL mode), the source of
truth, mirrored in memory as a float32 matrix with tombstones and keyword postings. A filter
becomes a set of allowed rows in about a millisecond even at 1M rows; ``knn`` then picks per
query, like OpenSearch's efficient filtering, between exact search over just those rows and
a filtered faiss HNSW graph searched with the efSearch its calibration says the filter needs
(``embedded_search.Planner``, ``hnsw_policy``), falling back to exact rather than return
fewer than ``k`` hits; the graph is built in the background once queries have shown it is
worth its cost (``embedded_graph``). ``lexical`` is BM25 over the file's FTS5 index with the
same filter mask (``embedded.lexical``), ranked from an in-memory copy of that index where
``keep_lexicons`` asks for one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from acl.errors import InvalidArgument, NotFound
from acl.model import Acl
from indexer.errors import IndexUnavailable
from indexer.index.embedded.chunks import document_chunks
from indexer.index.embedded.filters import filter_mask
from indexer.index.embedded.lexical import lexical_search
from indexer.index.embedded.rows import Rows, RowTable
from indexer.index.embedded.search import Planner, exact_candidates, rank
from indexer.index.embedded.sqlite import ChunkTable, row_attributes
from indexer.index.embedded.stats import EmbeddedStats
from indexer.index.embedded.store import OpenStore
from indexer.index.filters import Filter, validate
from indexer.index.port import ChunkRecord, Index, SearchHit, StoreSpec, Vector
from indexer.index.validation import Vector32, chunk_vectors, query_vector
from indexer.private_files import private_dir
from indexer.store_ids import validate_store_id

_RETRIES = 3
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class _Outcome:
    plan: str
    ranked: list[tuple[int, float]]
    saving_us: float


class EmbeddedIndex(Index):
    """``Index`` in this process: in memory when ``data_dir`` is None, else under ``data_dir``.

    Thread-safe. Several processes may open the same ``data_dir``: each sees what the others committed
    before its next call. ``background=False`` does graph work inside the query that triggers it (for tests).
    """

    def __init__(self, data_dir: Path | None, *, planner: Planner | None = None, background: bool = True) -> None:
        self._data_dir = None if data_dir is None else Path(data_dir)
        self._planner = planner or Planner()
        self._background = background
        self._stores: dict[str, OpenStore] = {}
        self._lexicon_postings = 0
        self._registry = threading.Lock()
        self._closed = False

    def keep_lexicons(self, max_postings: int) -> None:
        """BM25 from in-memory copies of stores' full-text indexes up to ``max_postings`` pairs; 0: FTS5 only."""
        if type(max_postings) is not int or max_postings < 0:
            raise InvalidArgument(f"max_postings must be a non-negative integer, got {max_postings!r}")
        with self._registry:
            self._lexicon_postings = max_postings
            for store in self._stores.values():
                store.lexicons.budget(max_postings)

    # -- stores ---------------------------------------------------------------

    def ensure(self, store: StoreSpec) -> None:
        validate_store_id(store.store_id)
        if isinstance(store.dimension, bool) or not isinstance(store.dimension, int):
            raise InvalidArgument("store dimension must be an integer")
        if store.dimension < 1:
            raise InvalidArgument(f"store dimension must be positive, got {store.dimension}")
        with self._registry:
            self._check_open()
            existing = self._lookup(store.store_id)
            if existing is not None:
                if existing.dimension != store.dimension:
                    raise InvalidArgument(
                        f"store {store.store_id!r} exists with vector dimension "
                        f"{existing.dimension}, not {store.dimension}; drop the store and "
                        "re-index it to change its embedding model"
                    )
                return
            path = self._path(store.store_id)
            if path is not None:
                private_dir(path.parent)
            table = ChunkTable.create(path, store.dimension)
            opened = OpenStore(table, path, self._planner, self._background, self._lexicon_postings)
            self._stores[store.store_id] = opened

    def drop(self, store_id: str) -> None:
        store = self._open(store_id)
        with self._registry:
            if self._stores.get(store_id) is store:
                del self._stores[store_id]
        store.close()
        if store.path is not None:
            for suffix in ("", "-wal", "-shm", ".hnsw"):
                Path(f"{store.path}{suffix}").unlink(missing_ok=True)

    def close(self) -> None:
        with self._registry:
            self._closed = True
            stores, self._stores = list(self._stores.values()), {}
        for store in stores:
            store.close()

    def prepare(self, store_id: str) -> None:
        """Build (or extend) the store's HNSW graph now, blocking until it is current.

        Stores too small for HNSW to pay off get none. Without this, the graph
        is built when queries show it is worth it.
        """
        store = self._open(store_id)
        store.refresh()
        store.keeper.prepare(store)

    def stats(self, store_id: str) -> EmbeddedStats:
        """Row, tombstone, graph and query-plan counts of the store."""
        store = self._open(store_id)
        with store.lock.read():
            graph = store.keeper.graph_for(store.rows)
            return EmbeddedStats(
                rows=store.rows.live,
                tombstones=store.rows.dead,
                graph_rows=0 if graph is None else graph.ntotal,
                graph_builds=store.keeper.builds,
                ef_policy=store.keeper.policy,
                last_plan=store.last_plan,
                plans=dict(store.plans),
                graph_loaded=store.keeper.loaded,
                rows_loaded=store.from_saved_rows,
                reloads=store.reloads,
                catch_ups=store.catch_ups,
                graph_adoptions=store.graph_adoptions,
                lexicon_reads=store.lexicons.reads,
                lexicon_pairs=store.lexicons.pairs,
                last_lexical=store.last_lexical,
            )

    # -- writes ---------------------------------------------------------------

    def upsert(self, store_id: str, chunks: Sequence[ChunkRecord]) -> None:
        store = self._open(store_id)
        chunks = list(chunks)
        vectors = chunk_vectors(chunks, store.dimension)
        if not chunks:
            return
        document_ids = sorted({c.document_id for c in chunks})
        chunk_ids = [c.chunk_id for c in chunks]

        def apply(rows: RowTable, seqs: list[int]) -> None:
            rows.tombstone(
                np.union1d(
                    rows.live_rows_of("document_id", document_ids),
                    rows.live_rows_of("chunk_id", chunk_ids),
                )
            )
            rows.append(
                seqs,
                chunk_ids,
                [c.document_id for c in chunks],
                [c.acl.allow for c in chunks],
                [c.acl.deny for c in chunks],
                vectors,
                [row_attributes(c) for c in chunks],
            )

        self._write(store, lambda t: t.replace_documents(chunks, vectors), apply)

    def delete_document(self, store_id: str, document_id: str) -> None:
        store = self._open(store_id)

        def apply(rows: RowTable, _: object) -> None:
            rows.tombstone(rows.live_rows_of("document_id", [document_id]))

        self._write(store, lambda t: t.delete_document(document_id), apply)

    def set_document_acl(self, store_id: str, document_id: str, acl: Acl) -> None:
        store = self._open(store_id)

        def apply(rows: RowTable, _: object) -> None:
            # Rows never change in place (readers and the graph rely on it):
            # the document's rows are re-appended with the new ACL.
            old = rows.live_rows_of("document_id", [document_id])
            seqs = rows.seqs[old].tolist()
            ids = [rows.chunk_ids[row] for row in old.tolist()]
            vectors, attributes = rows.vectors[old], [rows.attributes[row] for row in old.tolist()]
            rows.tombstone(old)
            count = len(seqs)
            rows.append(seqs, ids, [document_id] * count, [acl.allow] * count, [acl.deny] * count, vectors, attributes)

        self._write(store, lambda t: t.set_acl(document_id, acl), apply)

    def _write(
        self,
        store: OpenStore,
        durable: Callable[[ChunkTable], _T],
        apply: Callable[[RowTable, _T], None],
    ) -> None:
        """Commit ``durable`` to SQLite, then mirror it in memory with ``apply``."""
        with store.lock.write():
            if store.closed:
                raise NotFound("the store was dropped")
            with store.db_lock:
                result = durable(store.table)
                current = store.table.is_current()
            if current:  # else another process wrote too: ``refresh`` applies both writes
                try:
                    apply(store.rows, result)
                except BaseException:
                    store.stale = True  # committed; memory is rebuilt from SQLite
                    raise
                store.compact_if_needed(self._planner.tombstone_ratio)
        store.refresh()

    # -- reads ----------------------------------------------------------------

    def knn(self, store_id: str, vector: Vector, k: int, filter: Filter) -> list[SearchHit]:
        return self._search(store_id, vector, k, filter, approximate=True)

    def exact(self, store_id: str, vector: Vector, k: int, filter: Filter) -> list[SearchHit]:
        return self._search(store_id, vector, k, filter, approximate=False)

    def lexical(self, store_id: str, text: str, k: int, filter: Filter) -> list[SearchHit]:
        return lexical_search(self._open(store_id), store_id, text, k, filter)

    def document_chunks(self, store_id: str, document_id: str, filter: Filter) -> list[ChunkRecord]:
        return document_chunks(self._open(store_id), store_id, document_id, filter)

    def count(self, store_id: str, filter: Filter | None = None) -> int:
        store = self._open(store_id)
        store.refresh()
        with store.lock.read():
            return int(np.count_nonzero(filter_mask(filter, store.rows)))

    def _search(
        self, store_id: str, vector: Vector, k: int, filter_: Filter | None, approximate: bool
    ) -> list[SearchHit]:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidArgument(f"k must be a positive integer, got {k!r}")
        if filter_ is not None:
            validate(filter_)
        store = self._open(store_id)
        query = query_vector(vector, store.dimension)
        for _ in range(_RETRIES):  # rows that vanish under a search: ``refresh`` applies the write
            store.refresh()
            with store.lock.read():
                if store.closed:
                    raise NotFound(f"store {store_id!r} does not exist")
                rows = store.rows
                outcome = self._plan(store, rows, query, k, filter_, approximate)
                seqs = [int(rows.seqs[row]) for row, _ in outcome.ranked]
                with store.db_lock:
                    records = store.table.fetch(seqs)
            if len(records) == len(seqs):
                store.last_plan = outcome.plan
                store.plans[outcome.plan] += 1
                store.keeper.note_query(store, outcome.saving_us, outcome.plan != "exact")
                return [SearchHit(records[seq], score) for seq, (_, score) in zip(seqs, outcome.ranked, strict=True)]
        raise IndexUnavailable("the embedded index kept changing during the search; retry")

    def _plan(
        self, store: OpenStore, rows: RowTable, query: Vector32, k: int, filter_: Filter | None, approximate: bool
    ) -> _Outcome:
        mask = filter_mask(filter_, rows)
        allowed: Rows = np.flatnonzero(mask)
        graph = store.keeper.graph_for(rows)
        policy = store.keeper.policy if graph is None or graph.policy is None else graph.policy
        ef, saving = (0, 0.0)
        if approximate:
            ef, saving = self._planner.choose(k, len(allowed), rows.n, policy)
        if graph is None or not ef:
            candidates = exact_candidates(rows.vectors, allowed, query, k)
            return _Outcome("exact", rank(rows.vectors, candidates, query, k, rows.chunk_ids), saving)
        covered = graph.ntotal
        split = int(np.searchsorted(allowed, covered))
        tail = allowed[split:]
        found = graph.search(query, k, mask[:covered], ef) if split else allowed[:0]
        if len(found) < min(k, split):
            plan, candidates = "hnsw+exact", exact_candidates(rows.vectors, allowed, query, k)
        else:
            plan = "hnsw"
            candidates = np.concatenate([found, exact_candidates(rows.vectors, tail, query, k)])
        return _Outcome(plan, rank(rows.vectors, candidates, query, k, rows.chunk_ids), saving)

    # -- registry -------------------------------------------------------------

    def _open(self, store_id: str) -> OpenStore:
        validate_store_id(store_id)
        with self._registry:
            self._check_open()
            store = self._lookup(store_id)
            if store is not None:
                return store
            path = self._path(store_id)
            table = None if path is None else ChunkTable.open(path)
            if table is None:
                raise NotFound(f"store {store_id!r} does not exist")
            store = OpenStore(table, path, self._planner, self._background, self._lexicon_postings)
            self._stores[store_id] = store
            return store

    def _lookup(self, store_id: str) -> OpenStore | None:
        store = self._stores.get(store_id)
        if store is not None and not store.same_file():
            del self._stores[store_id]
            store.close()
            return None
        return store

    def _path(self, store_id: str) -> Path | None:
        return None if self._data_dir is None else self._data_dir / f"{store_id}.sqlite"

    def _check_open(self) -> None:
        if self._closed:
            raise IndexUnavailable("the embedded index is closed")
