"""The OpenSearch adapter of the index port (production), on ``opensearch-py``.

One index per store, reached through an alias (``opensearch.mapping``); request
bodies are built in ``opensearch.requests`` and answers read in
``opensearch.responses``; filters are translated in ``opensearch.filters``.
This module talks to the server:

- ``knn`` runs the ``knn`` query with the filter inside it (efficient
  filtering). The server itself switches a segment to exact search when the
  filter is narrow, and after an approximate search that found fewer than
  ``k`` (KNNWeight.java), so ``k`` hits come back whenever ``k`` chunks match:
  there is no client-side fallback.
- ``lexical`` runs a ``match`` query (BM25, the standard analyser, the
  question's plain words OR-ed) on ``text`` inside a ``bool`` with the filter,
  as ``dfs_query_then_fetch`` so that term statistics are the index's, not a
  shard's; hits keep their vector, for the caller's cosine.
- ``exact`` runs ``script_score`` with the Painless cosine over a ``bool``
  filter, paging with ``search_after`` past ``page_size`` hits;
  ``best_per_document`` is one such request collapsed on the document id.
- Writes never ask for a refresh (``refresh: false`` unless configured): the
  indexer calls ``refresh`` once at the end of a run, and the server refreshes
  every second anyway. Everything is by ``_id``, because a by-query operation
  only sees refreshed documents: a document's chunks are ``<id>#0 .. <id>#n-1``
  and each carries ``chunk_count``; before a write the first chunk is read in
  real time (``_mget``), and one bulk request writes the new chunks and deletes
  the stale ones. ACL changes are partial updates of each chunk by ``_id``.
  Writers of one document in this process take turns (a lock per document).
  Bulk requests are bounded by count and by bytes, and ``require_alias`` stops
  a write from auto-creating an index. A document any of whose chunks was
  rejected is removed entirely and named in the error, so the pipeline does not
  record it and indexes it again next run; the other documents are written.
- Failures: connection errors, timeouts, 429 and 5xx are retried a bounded
  number of times with exponential backoff, then raise ``IndexUnavailable``
  (gRPC UNAVAILABLE). Every operation is idempotent (``_id`` = chunk id), so a
  retry never duplicates. Messages carry no credentials and no document text.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar

from opensearchpy import OpenSearch
from opensearchpy.exceptions import (
    AuthenticationException,
    AuthorizationException,
    ConnectionTimeout,
    NotFoundError,
    RequestError,
    SSLError,
    TransportError,
)
from opensearchpy.exceptions import ConnectionError as TransportConnectionError
from opensearchpy.helpers import streaming_bulk

from acl.errors import ConfigurationError, InvalidArgument, NotFound
from acl.model import Acl
from indexer.errors import IndexUnavailable
from indexer.index.filters import Filter
from indexer.index.lexical import query_terms
from indexer.index.opensearch.filters import to_query
from indexer.index.opensearch.mapping import (
    VECTOR_FIELD,
    HnswSettings,
    IndexFacts,
    concrete_name,
    index_body,
    index_name,
    mapping_problems,
    missing_fields,
    upgrade_body,
)
from indexer.index.opensearch.requests import (
    Body,
    acl_actions,
    best_per_document_body,
    bulk_actions,
    chunk_ids,
    count_body,
    delete_actions,
    delete_document_body,
    document_chunks_body,
    document_id_of_chunk,
    exact_body,
    heads_body,
    knn_body,
    lexical_body,
)
from indexer.index.opensearch.responses import (
    BulkFailure,
    ServerFacts,
    bulk_failure,
    by_query_result,
    chunk_counts,
    chunk_from_source,
    cosine_from_knn_score,
    cosine_from_script_score,
    failed_documents,
    search_hits,
    server_facts,
    total_count,
    vector_from_source,
)
from indexer.index.port import ChunkRecord, DocumentsRejected, Index, SearchHit, StoreSpec, Vector
from indexer.index.validation import chunk_vectors, query_vector
from indexer.store_ids import validate_store_id

log = logging.getLogger("docqa.index.opensearch")

_T = TypeVar("_T")
#: Statuses worth retrying: overload and gateway/server trouble.
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
Refresh = Literal["true", "wait_for", "false"]
#: The search type of lexical search: BM25 statistics gathered from every shard first.
DFS = "dfs_query_then_fetch"


@dataclass(frozen=True, slots=True)
class OpenSearchOptions:
    """How the adapter uses the server (everything but the connection)."""

    hnsw: HnswSettings = field(default_factory=HnswSettings)
    index_prefix: str = "docqa-"
    #: Retries after the first attempt, for connection errors, timeouts, 429 and 5xx.
    max_retries: int = 3
    #: First backoff; it doubles on each retry, up to ``max_backoff_s``.
    backoff_s: float = 0.5
    max_backoff_s: float = 8.0
    #: Writes: ``false`` (visible at the next refresh: ``refresh()`` or the server's, every second),
    #: ``wait_for`` (visible when the call returns), ``true`` (force a refresh: a segment per request; tests only).
    refresh: Refresh = "false"
    #: Actions per bulk request.
    bulk_batch: int = 500
    #: Bytes per bulk request (OpenSearch refuses a body over ``http.max_content_length``, 100 MB, with 413).
    bulk_max_bytes: int = 10 * 1024 * 1024
    #: Hits per exact-search request (at most the index's ``max_result_window``, 10,000 by default).
    page_size: int = 10_000
    #: Timeout of ``ping`` (readiness), shorter than a query's.
    ping_timeout_s: float = 2.0
    #: Timeout of one search, count or read.
    search_timeout_s: float = 10.0
    #: Timeout of one write (a bulk request, an index creation or deletion, a sweep by query).
    write_timeout_s: float = 60.0
    #: Primary shards and replicas of a new store index (None: the cluster's default).
    shards: int | None = None
    replicas: int | None = None
    #: Locks that serialise the writers of one document in this process (documents share them by hash).
    document_locks: int = 64


class ChunksRejected(DocumentsRejected):
    """OpenSearch refused some chunks; their documents were removed and must be indexed again."""

    def __init__(self, document_ids: Sequence[str], failures: Sequence[BulkFailure]) -> None:
        kinds = sorted({f"{f.error_type} ({f.status})" for f in failures})
        super().__init__(
            f"index unavailable: OpenSearch rejected chunks of document(s) {list(document_ids)!r}: "
            f"{', '.join(kinds)}; those documents were removed from the index and must be indexed again",
            document_ids,
        )


class OpenSearchIndex(Index):
    """``Index`` on OpenSearch 2.19+ or 3.x with the k-NN plugin (``client.connect`` builds one). Thread-safe."""

    def __init__(
        self,
        client: OpenSearch,
        options: OpenSearchOptions | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = client
        self._options = options or OpenSearchOptions()
        self._sleep = sleep
        self._known: dict[str, IndexFacts] = {}
        self._lock = threading.Lock()
        self._document_locks = [threading.Lock() for _ in range(max(1, self._options.document_locks))]

    @property
    def options(self) -> OpenSearchOptions:
        return self._options

    def index_name(self, store_id: str) -> str:
        """The alias every request for ``store_id`` names."""
        return index_name(self._options.index_prefix, validate_store_id(store_id))

    # -- stores ---------------------------------------------------------------

    def ensure(self, store: StoreSpec) -> None:
        name = self.index_name(store.store_id)
        if isinstance(store.dimension, bool) or not isinstance(store.dimension, int) or store.dimension < 1:
            raise InvalidArgument(f"store dimension must be a positive integer, got {store.dimension!r}")
        hnsw = self._options.hnsw
        facts = self._facts_or_none(store.store_id)
        created = False
        if facts is None:
            concrete = concrete_name(name)
            options = self._options
            body = index_body(
                store.store_id, store.dimension, hnsw, alias=name, shards=options.shards, replicas=options.replicas
            )

            def create() -> bool:
                try:
                    self._client.indices.create(
                        index=concrete, body=body, request_timeout=self._options.write_timeout_s
                    )
                except RequestError as exc:
                    if exc.error == "resource_already_exists_exception":
                        return False  # created meanwhile (another process, or our own timed-out attempt)
                    raise
                return True

            created = self._call(f"create index {concrete}", create)
            # Read it back: an index template may have changed what was asked for.
            facts = self._facts(store.store_id)
        problems = mapping_problems(facts, store.dimension, hnsw)
        if problems:
            if created:
                # Empty and unusable: leave nothing behind, so the next try after a template fix works.
                self._delete_concrete(facts, store.store_id)
            raise InvalidArgument(
                f"OpenSearch index {name!r} of store {store.store_id!r} cannot be used: "
                + "; ".join(problems)
                + ". Drop the store and index it again, or choose another index_prefix"
            )
        if created:
            log.info("created OpenSearch index %s (dimension %d, %s)", facts.concrete, store.dimension, hnsw.engine)
        self._remember(store.store_id, self._upgraded(store.store_id, facts))

    def drop(self, store_id: str) -> None:
        # OpenSearch deletes concrete indices only, never through an alias: find it first.
        self._delete_concrete(self._facts(store_id), store_id)
        with self._lock:
            self._known.pop(store_id, None)

    def _delete_concrete(self, facts: IndexFacts, store_id: str) -> None:
        concrete = facts.concrete or facts.name
        timeout = self._options.write_timeout_s
        self._call(
            f"delete index {concrete}",
            lambda: self._client.indices.delete(index=concrete, request_timeout=timeout),
            store_id,
        )

    def close(self) -> None:
        self._client.close()

    def ping(self) -> None:
        """One ``GET /`` with a short timeout and no retry: a readiness probe must answer fast."""
        timeout = self._options.ping_timeout_s
        self._call("GET /", lambda: self._client.info(request_timeout=timeout), attempts=1)

    def server(self) -> ServerFacts:
        """Distribution, version and whether the k-NN plugin is installed (for ``doctor`` and start-up)."""
        timeout = self._options.search_timeout_s
        info = self._call("GET /", lambda: self._client.info(request_timeout=timeout))
        plugins = self._call(
            "GET /_cat/plugins", lambda: self._client.cat.plugins(format="json", request_timeout=timeout)
        )
        return server_facts(info, plugins)

    def check_store(self, store_id: str, dimension: int | None = None) -> tuple[IndexFacts, list[str]]:
        """The store's index and why it does not match this configuration (empty if it does); NotFound if absent."""
        facts = self._facts(store_id)
        return facts, mapping_problems(facts, dimension, self._options.hnsw)

    def refresh(self, store_id: str) -> None:
        name = self.index_name(store_id)
        timeout = self._options.write_timeout_s
        self._call(
            f"refresh {name}", lambda: self._client.indices.refresh(index=name, request_timeout=timeout), store_id
        )

    # -- writes ---------------------------------------------------------------

    def upsert(self, store_id: str, chunks: Sequence[ChunkRecord]) -> None:
        chunks = list(chunks)
        name = self.index_name(store_id)
        facts = self._upgraded(store_id, self._facts_of(store_id))  # a strict mapping refuses unknown fields
        vectors = chunk_vectors(chunks, facts.dimension or 0)
        if not chunks:
            return
        counts = _complete_documents(chunks)
        documents = sorted(counts)
        with self._documents_locked(name, documents):
            before = self._chunk_counts(store_id, documents)
            stale = {_id: d for d in documents for _id in chunk_ids(d, before.get(d, 0), start=counts[d])}
            actions = bulk_actions(name, store_id, chunks, vectors, counts, list(stale))
            document_of = {document_id_of_chunk(chunk.chunk_id): chunk.document_id for chunk in chunks} | stale
            # Every chunk a document had or is to have: what removing it half-written must delete.
            spans = {d: max(counts[d], before.get(d, 0)) for d in documents}
            try:
                failures = self._call(f"bulk write to {name}", lambda: self._bulk(actions), store_id)
            except Exception:
                self._forget_documents(name, spans)
                raise
            rejected = failed_documents(failures, document_of)
            if rejected:
                log.warning("OpenSearch rejected chunks of %d document(s) in %s", len(rejected), name)
                self._forget_documents(name, {d: spans.get(d, 0) for d in rejected})
                raise ChunksRejected(sorted(rejected), [f for group in rejected.values() for f in group])

    def delete_document(self, store_id: str, document_id: str) -> None:
        name = self.index_name(store_id)
        with self._documents_locked(name, [document_id]):
            count = self._chunk_counts(store_id, [document_id]).get(document_id)
            if count is None:
                # No first chunk: nothing was written, or an old write failed half-way. Sweep what is searchable.
                what = f"delete a document in {name}"
                self._sweep(name, delete_document_body(document_id), what, store_id)
                return
            failures = self._call(
                f"delete a document in {name}", lambda: self._bulk(delete_actions(name, chunk_ids(document_id, count)))
            )
            _raise_on(failures, f"delete a document in {name}")

    def set_document_acl(self, store_id: str, document_id: str, acl: Acl) -> None:
        name = self.index_name(store_id)
        with self._documents_locked(name, [document_id]):
            count = self._chunk_counts(store_id, [document_id]).get(document_id, 0)
            if count == 0:
                return
            failures = self._call(
                f"change an ACL in {name}", lambda: self._bulk(acl_actions(name, chunk_ids(document_id, count), acl))
            )
            # A chunk deleted meanwhile (404) needs no ACL; anything else means the copy is not in force.
            _raise_on([f for f in failures if f.error_type != "document_missing_exception"], f"change an ACL in {name}")

    def _chunk_counts(self, store_id: str, document_ids: Sequence[str]) -> dict[str, int]:
        """How many chunks each document has now, read in real time from its first chunk (absent: none)."""
        name = self.index_name(store_id)
        firsts = {document_id_of_chunk(f"{d}#0"): d for d in document_ids}
        body = heads_body(list(firsts))
        timeout = self._options.search_timeout_s
        response = self._call(
            f"read documents in {name}",
            lambda: self._client.mget(index=name, body=body, realtime=True, request_timeout=timeout),
            store_id,
        )
        found = chunk_counts(response)
        if found.index_missing:
            with self._lock:
                self._known.pop(store_id, None)
            raise NotFound(f"store {store_id!r} does not exist")
        return {firsts[_id]: count for _id, count in found.counts.items() if _id in firsts}

    def _documents_locked(self, name: str, document_ids: Sequence[str]) -> contextlib.ExitStack:
        """Hold the locks of these documents (in a fixed order, so two writers never wait on each other)."""
        stripes = sorted({zlib.crc32(f"{name}\0{d}".encode()) % len(self._document_locks) for d in document_ids})
        stack = contextlib.ExitStack()
        for stripe in stripes:
            stack.enter_context(self._document_locks[stripe])
        return stack

    def _bulk(self, actions: list[Body]) -> list[BulkFailure]:
        """Send ``actions`` in batches bounded by count and bytes; items refused with 429/5xx are sent again
        (bounded, with backoff). A ``delete`` of a missing chunk is not a failure.

        Returns the items OpenSearch refused for good. A failure of a whole
        request raises (and ``_call`` retries the lot: every action is idempotent).
        """
        attempts = self._options.max_retries + 1
        refused: list[BulkFailure] = []
        pending = actions
        for attempt in range(1, attempts + 1):
            transient: list[BulkFailure] = []
            for ok, item in self._stream(pending):
                if not ok and not _already_gone(item):
                    failure = bulk_failure(item)
                    (transient if failure.status in RETRY_STATUS else refused).append(failure)
            if not transient or attempt == attempts:
                return refused + transient
            again = {failure.id for failure in transient}
            pending = [action for action in pending if action["_id"] in again]
            delay = self._backoff(attempt)
            log.warning("OpenSearch was busy with %d chunk(s); again in %.2f s", len(pending), delay)
            self._sleep(delay)
        return refused  # pragma: no cover - the loop returns on its last attempt

    def _stream(self, actions: list[Body]) -> Iterator[tuple[bool, Any]]:
        """The bulk helper as every write uses it: batches bounded by count and bytes, the configured refresh,
        ``require_alias``, the write timeout; failed items yielded, never raised; no retries of its own."""
        options = self._options
        yield from streaming_bulk(
            self._client,
            actions,
            chunk_size=options.bulk_batch,
            max_chunk_bytes=options.bulk_max_bytes,
            raise_on_error=False,
            raise_on_exception=True,
            max_retries=0,  # item retries are ours, with our backoff
            yield_ok=False,
            refresh=options.refresh,
            require_alias=True,
            request_timeout=options.write_timeout_s,
        )

    def _sweep(self, name: str, body: Body, what: str, store_id: str) -> None:
        """Run ``_delete_by_query`` until it has touched every match (bounded); it sees refreshed chunks only."""
        attempts = self._options.max_retries + 1
        timeout = self._options.write_timeout_s
        for attempt in range(1, attempts + 1):
            response = self._call(
                what,
                lambda: self._client.delete_by_query(
                    index=name, body=body, conflicts="proceed", request_timeout=timeout
                ),
                store_id,
            )
            result = by_query_result(response)
            if result.complete:
                return
            if attempt < attempts:
                delay = self._backoff(attempt)
                log.warning("OpenSearch %s was incomplete; again in %.2f s", what, delay)
                self._sleep(delay)
        problems = ", ".join(result.failures) or f"{result.version_conflicts} version conflicts"
        raise IndexUnavailable(f"index unavailable: OpenSearch could not {what} after {attempts} attempts ({problems})")

    def _forget_documents(self, name: str, counts: dict[str, int]) -> None:
        """Best effort, one attempt: leave no half-written document behind (every chunk it had or was to have)."""
        ids = [_id for document_id, count in sorted(counts.items()) for _id in chunk_ids(document_id, count)]
        try:
            for _ok, _item in self._stream(delete_actions(name, ids)):
                pass
        except TransportError:
            log.warning("could not remove %d partly written document(s) from %s", len(counts), name)

    # -- reads ----------------------------------------------------------------

    def knn(self, store_id: str, vector: Vector, k: int, filter: Filter) -> list[SearchHit]:
        _check_k(k)
        query = to_query(filter) if filter is not None else None
        name = self.index_name(store_id)
        facts = self._facts_of(store_id)
        _check_window(k, facts)
        unit = query_vector(vector, facts.dimension or 0)
        body = knn_body(unit, k, query, self._options.hnsw.ef_search)
        page = search_hits(self._search(store_id, f"knn search in {name}", body))
        return _ranked([SearchHit(chunk_from_source(h.source), cosine_from_knn_score(h.score)) for h in page])[:k]

    def exact(self, store_id: str, vector: Vector, k: int, filter: Filter) -> list[SearchHit]:
        _check_k(k)
        query = to_query(filter)
        name = self.index_name(store_id)
        facts = self._facts_of(store_id)
        unit = query_vector(vector, facts.dimension or 0)
        page_size = max(1, min(self._options.page_size, facts.max_result_window))
        hits: list[SearchHit] = []
        after: list[Any] | None = None
        while len(hits) < k:
            size = min(k - len(hits), page_size)
            page = search_hits(self._search(store_id, f"exact search in {name}", exact_body(unit, size, query, after)))
            hits.extend(SearchHit(chunk_from_source(h.source), cosine_from_script_score(h.score)) for h in page)
            if len(page) < size or page[-1].sort is None:
                break
            after = page[-1].sort
        return _ranked(hits)[:k]

    def lexical(self, store_id: str, text: str, k: int, filter: Filter) -> list[SearchHit]:
        _check_k(k)
        query = to_query(filter)
        name = self.index_name(store_id)
        _check_window(k, self._facts_of(store_id))
        words = " ".join(query_terms(text))
        if not words:
            return []
        # Term statistics of the whole index, not of each shard: BM25 scores that do not depend on routing.
        body = lexical_body(words, k, query)
        page = search_hits(self._search(store_id, f"lexical search in {name}", body, search_type=DFS))
        return _ranked(
            [
                SearchHit(
                    replace(chunk_from_source(h.source), vector=vector_from_source(h.source, VECTOR_FIELD)), h.score
                )
                for h in page
            ]
        )[:k]

    def best_per_document(self, store_id: str, vector: Vector, documents: int, filter: Filter) -> list[SearchHit]:
        if isinstance(documents, bool) or not isinstance(documents, int) or documents < 1:
            raise InvalidArgument(f"documents must be a positive integer, got {documents!r}")
        query = to_query(filter)
        name = self.index_name(store_id)
        facts = self._facts_of(store_id)
        _check_window(documents, facts)
        unit = query_vector(vector, facts.dimension or 0)
        body = best_per_document_body(unit, documents, query)
        page = search_hits(self._search(store_id, f"best chunk per document in {name}", body))
        return _ranked([SearchHit(chunk_from_source(h.source), cosine_from_script_score(h.score)) for h in page])

    def document_chunks(self, store_id: str, document_id: str, filter: Filter) -> list[ChunkRecord]:
        query = to_query(filter)
        name = self.index_name(store_id)
        page_size = max(1, min(self._options.page_size, self._facts_of(store_id).max_result_window))
        chunks: list[ChunkRecord] = []
        after: list[Any] | None = None
        while True:  # bounded pages; each page moves past the last (ordinal, chunk id) seen
            body = document_chunks_body(document_id, page_size, query, after)
            page = search_hits(self._search(store_id, f"chunks of a document in {name}", body))
            chunks.extend(
                replace(chunk_from_source(h.source), vector=vector_from_source(h.source, VECTOR_FIELD)) for h in page
            )
            if len(page) < page_size or page[-1].sort is None:
                return [c for c in chunks if c.document_id == document_id]
            after = page[-1].sort

    def count(self, store_id: str, filter: Filter | None = None) -> int:
        body = count_body(to_query(filter))
        name = self.index_name(store_id)
        timeout = self._options.search_timeout_s
        response = self._call(
            f"count in {name}", lambda: self._client.count(index=name, body=body, request_timeout=timeout), store_id
        )
        return total_count(response)

    # -- plumbing -------------------------------------------------------------

    def _search(self, store_id: str, what: str, body: Body, **params: str) -> Any:
        name = self.index_name(store_id)
        timeout = self._options.search_timeout_s
        return self._call(
            what, lambda: self._client.search(index=name, body=body, request_timeout=timeout, **params), store_id
        )

    def _remember(self, store_id: str, facts: IndexFacts) -> None:
        with self._lock:
            self._known[store_id] = facts

    def _facts_of(self, store_id: str) -> IndexFacts:
        """The store's index facts, read once and kept (dimension, result window); refused if not a DocQA index."""
        with self._lock:
            known = self._known.get(store_id)
        if known is not None:
            return known
        facts = self._facts(store_id)
        problems = mapping_problems(facts, None, self._options.hnsw)
        problems = [p for p in problems if not p.startswith("engine ")]  # searchable all the same
        if problems or facts.dimension is None:
            raise InvalidArgument(f"OpenSearch index {facts.name!r} is not a DocQA store index: {'; '.join(problems)}")
        self._remember(store_id, facts)
        return facts

    def _upgraded(self, store_id: str, facts: IndexFacts) -> IndexFacts:
        """``facts`` of an index that has every field of this version: an older DocQA's index gets the
        missing ones (``mapping.upgrade_body``) and is read again; others are returned as they are."""
        missing = missing_fields(facts)
        if not missing:
            return facts
        concrete = facts.concrete or facts.name
        body, timeout = upgrade_body(facts), self._options.write_timeout_s
        try:
            self._call(
                f"add fields {missing} to {concrete}",
                lambda: self._client.indices.put_mapping(index=concrete, body=body, request_timeout=timeout),
                store_id,
            )
        except ConfigurationError as exc:
            raise ConfigurationError(
                f"{exc.message}. OpenSearch index {concrete!r} was made by an older DocQA and lacks the fields "
                f"{missing}; adding them needs the indices:admin/mapping/put permission (or drop the store and "
                "index it again)"
            ) from None
        log.info("added fields %s to OpenSearch index %s", ", ".join(missing), concrete)
        upgraded = self._facts(store_id)
        self._remember(store_id, upgraded)
        return upgraded

    def _facts(self, store_id: str) -> IndexFacts:
        """What the store's index says about itself; NotFound if there is none."""
        name = self.index_name(store_id)
        timeout = self._options.search_timeout_s
        response = self._call(
            f"read index {name}", lambda: self._client.indices.get(index=name, request_timeout=timeout), store_id
        )
        return IndexFacts.parse(name, response)

    def _facts_or_none(self, store_id: str) -> IndexFacts | None:
        try:
            return self._facts(store_id)
        except NotFound:
            return None

    def _backoff(self, attempt: int) -> float:
        return float(min(self._options.max_backoff_s, self._options.backoff_s * 2 ** (attempt - 1)))

    def _call(
        self, what: str, operation: Callable[[], _T], store_id: str | None = None, attempts: int | None = None
    ) -> _T:
        """Run ``operation``, retrying transient failures with backoff; map failures to our errors."""
        attempts = self._options.max_retries + 1 if attempts is None else attempts
        failure = ""
        for attempt in range(1, attempts + 1):
            try:
                return operation()
            except NotFoundError as exc:
                if store_id is not None and exc.error == "index_not_found_exception":
                    with self._lock:
                        self._known.pop(store_id, None)
                    raise NotFound(f"store {store_id!r} does not exist") from None
                raise _rejected(what, exc) from None
            except (AuthenticationException, AuthorizationException) as exc:
                raise ConfigurationError(
                    f"index.opensearch: the server refused our credentials for {what} (HTTP {exc.status_code})"
                ) from None
            except TransportConnectionError as exc:
                failure = _describe_connection_failure(exc)
            except TransportError as exc:
                if exc.status_code not in RETRY_STATUS:
                    raise _rejected(what, exc) from None
                failure = f"HTTP {exc.status_code} {_error_type(exc)}"
            if attempt < attempts:
                delay = self._backoff(attempt)
                log.warning(
                    "OpenSearch %s failed (%s); retry %d of %d in %.2f s", what, failure, attempt, attempts - 1, delay
                )
                self._sleep(delay)
        raise IndexUnavailable(f"index unavailable: OpenSearch {what} failed after {attempts} attempt(s): {failure}")


def _check_k(k: Any) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidArgument(f"k must be a positive integer, got {k!r}")


def _check_window(size: int, facts: IndexFacts) -> None:
    if size > facts.max_result_window:
        raise InvalidArgument(
            f"{size} hits exceed the index's max_result_window of {facts.max_result_window} "
            f"(index {facts.concrete or facts.name}); ask for fewer"
        )


def _complete_documents(chunks: Sequence[ChunkRecord]) -> dict[str, int]:
    """Each document's chunk count; its chunks must be ``<document id>#0 .. #n-1``, each once (InvalidArgument)."""
    ordinals: dict[str, list[int]] = {}
    for chunk in chunks:
        if chunk.chunk_id != f"{chunk.document_id}#{chunk.ordinal}":
            raise InvalidArgument(
                f"chunk id {chunk.chunk_id!r} is not '<document id>#<ordinal>' for ordinal {chunk.ordinal!r}"
            )
        ordinals.setdefault(chunk.document_id, []).append(chunk.ordinal)
    for document_id, seen in ordinals.items():
        if sorted(seen) != list(range(len(seen))):
            raise InvalidArgument(
                f"an upsert replaces a document's chunks: document {document_id!r} needs ordinals 0..{len(seen) - 1}"
            )
    return {document_id: len(seen) for document_id, seen in ordinals.items()}


def _already_gone(item: Any) -> bool:
    """A bulk ``delete`` of a chunk that is not there (404 ``not_found``): the wanted outcome."""
    result = item.get("delete") if isinstance(item, dict) else None
    return isinstance(result, dict) and result.get("status") == 404 and result.get("result") == "not_found"


def _raise_on(failures: Sequence[BulkFailure], what: str) -> None:
    if failures:
        kinds = sorted({f"{f.error_type} ({f.status})" for f in failures})
        raise IndexUnavailable(f"index unavailable: OpenSearch could not {what}: {', '.join(kinds)}")


def _ranked(hits: list[SearchHit]) -> list[SearchHit]:
    return sorted(hits, key=lambda h: (-h.score, h.chunk.chunk_id))


def _error_type(exc: TransportError) -> str:
    return exc.error if isinstance(exc.error, str) else "error"


def _rejected(what: str, exc: TransportError) -> IndexUnavailable:
    return IndexUnavailable(
        f"index unavailable: OpenSearch refused to {what} (HTTP {exc.status_code} {_error_type(exc)})"
    )


def _describe_connection_failure(exc: TransportConnectionError) -> str:
    if isinstance(exc, ConnectionTimeout):
        return "timed out"
    if isinstance(exc, SSLError):
        return "TLS handshake or certificate check failed"
    cause = type(exc.info).__name__ if isinstance(exc.info, BaseException) else "connection error"
    return f"cannot connect ({cause})"
