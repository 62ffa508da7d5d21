"""The OpenSearch adapter of the index port (production), on ``opensearch-py``.

One index per store (``opensearch_mapping``); request bodies are built in
``opensearch_requests`` and answers read in ``opensearch_responses``; filters
are translated in ``opensearch_filters``. This module talks to the server:

- ``knn`` runs the ``knn`` query with the filter inside it (efficient
  filtering); should the server return fewer than ``k`` hits while more chunks
  match, it falls back to ``exact``.
- ``exact`` runs ``script_score`` with ``knn_score`` over a ``bool`` filter,
  paging with ``search_after`` past ``page_size`` hits.
- Writes: the bulk helper in batches, with per-item results; then the stale
  chunks of each written document are removed with ``_delete_by_query``. A
  document any of whose chunks was rejected is removed entirely and named in
  the error, so the pipeline does not record it and indexes it again next run;
  the other documents are written.
- Failures: connection errors, timeouts, 429 and 5xx are retried a bounded
  number of times with exponential backoff, then raise ``IndexUnavailable``
  (gRPC UNAVAILABLE). Every operation is idempotent (``_id`` = chunk id), so a
  retry never duplicates. Messages carry no credentials and no document text.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from opensearchpy import OpenSearch
from opensearchpy.exceptions import (
    AuthenticationException,
    AuthorizationException,
    ConnectionTimeout,
    ImproperlyConfigured,
    NotFoundError,
    RequestError,
    SSLError,
    TransportError,
)
from opensearchpy.exceptions import ConnectionError as TransportConnectionError
from opensearchpy.helpers import streaming_bulk

from acl.errors import ConfigurationError, IndexUnavailable, InvalidArgument, NotFound
from acl.model import Acl
from indexer.index.filters import Filter
from indexer.index.opensearch.filters import to_query
from indexer.index.opensearch.mapping import HnswSettings, IndexFacts, index_body, index_name, mapping_problems
from indexer.index.opensearch.requests import (
    Body,
    bulk_actions,
    count_body,
    delete_document_body,
    delete_documents_body,
    delete_stale_body,
    exact_body,
    knn_body,
    set_acl_body,
)
from indexer.index.opensearch.responses import (
    BulkFailure,
    ServerFacts,
    bulk_failure,
    by_query_result,
    chunk_from_source,
    cosine_from_knn_score,
    cosine_from_script_score,
    failed_documents,
    search_hits,
    server_facts,
    total_count,
)
from indexer.index.port import ChunkRecord, DocumentsRejected, Index, SearchHit, StoreSpec, Vector
from indexer.index.validation import chunk_vectors, query_vector
from indexer.store_ids import validate_store_id

log = logging.getLogger("docqa.index.opensearch")

_T = TypeVar("_T")
#: Statuses worth retrying: overload and gateway/server trouble.
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
Refresh = Literal["true", "wait_for", "false"]


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
    #: ``wait_for`` (writes visible when the call returns), ``true`` (force a refresh), ``false``.
    refresh: Refresh = "wait_for"
    #: Chunks per bulk request.
    bulk_batch: int = 500
    #: Hits per exact-search request (OpenSearch's ``index.max_result_window`` is 10,000).
    page_size: int = 10_000
    #: Timeout of ``ping`` (readiness), shorter than a query's.
    ping_timeout_s: float = 2.0


class ChunksRejected(DocumentsRejected):
    """OpenSearch refused some chunks; their documents were removed and must be indexed again."""

    def __init__(self, document_ids: Sequence[str], failures: Sequence[BulkFailure]) -> None:
        kinds = sorted({f"{f.error_type} ({f.status})" for f in failures})
        super().__init__(
            f"index unavailable: OpenSearch rejected chunks of document(s) {list(document_ids)!r}: "
            f"{', '.join(kinds)}; those documents were removed from the index and must be indexed again",
            document_ids,
        )


def connect(
    url: str,
    *,
    username: str | None = None,
    password: str | None = None,
    api_key: str | None = None,
    ca_certs: str | None = None,
    verify: bool = True,
    timeout_s: float = 10.0,
    options: OpenSearchOptions | None = None,
) -> OpenSearchIndex:
    """An adapter talking to the server at ``url`` (no request is made yet).

    The client itself never retries: the adapter does, with backoff.
    """
    kwargs: dict[str, Any] = {
        "hosts": [url],
        "timeout": timeout_s,
        "max_retries": 0,
        "retry_on_timeout": False,
        "verify_certs": verify,
        "ssl_show_warn": verify,
    }
    if username is not None:
        kwargs["http_auth"] = (username, password or "")
    if api_key is not None:
        kwargs["headers"] = {"authorization": f"ApiKey {api_key}"}
    if ca_certs is not None:
        kwargs["ca_certs"] = ca_certs
    transport_log = logging.getLogger("opensearch")
    if transport_log.level == logging.NOTSET:
        # opensearch-py logs each failed request at WARNING with a traceback, and request bodies (chunk
        # text) at DEBUG; the adapter reports failures itself. A level set by the operator is kept.
        transport_log.setLevel(logging.ERROR)
    try:
        client = OpenSearch(**kwargs)
    except ImproperlyConfigured as exc:
        raise ConfigurationError(f"index.opensearch: {exc}") from None
    return OpenSearchIndex(client, options or OpenSearchOptions())


class OpenSearchIndex(Index):
    """``Index`` on OpenSearch with the k-NN plugin (2.16+ for lucene, 2.19+ for faiss, or 3.x). Thread-safe."""

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
        self._dimensions: dict[str, int] = {}
        self._lock = threading.Lock()

    @property
    def options(self) -> OpenSearchOptions:
        return self._options

    def index_name(self, store_id: str) -> str:
        """The OpenSearch index that holds ``store_id``."""
        return index_name(self._options.index_prefix, validate_store_id(store_id))

    # -- stores ---------------------------------------------------------------

    def ensure(self, store: StoreSpec) -> None:
        name = self.index_name(store.store_id)
        if isinstance(store.dimension, bool) or not isinstance(store.dimension, int) or store.dimension < 1:
            raise InvalidArgument(f"store dimension must be a positive integer, got {store.dimension!r}")
        hnsw = self._options.hnsw
        facts = self._facts_or_none(store.store_id)
        if facts is None:
            body = index_body(store.store_id, store.dimension, hnsw)

            def create() -> bool:
                try:
                    self._client.indices.create(index=name, body=body)
                except RequestError as exc:
                    if exc.error == "resource_already_exists_exception":
                        return False  # created meanwhile (another process, or our own timed-out attempt)
                    raise
                return True

            if self._call(f"create index {name}", create):
                log.info("created OpenSearch index %s (dimension %d, %s)", name, store.dimension, hnsw.engine)
                self._remember(store.store_id, store.dimension)
                return
            facts = self._facts(store.store_id)
        problems = mapping_problems(facts, store.dimension, hnsw)
        if problems:
            raise InvalidArgument(
                f"OpenSearch index {name!r} of store {store.store_id!r} cannot be used: "
                + "; ".join(problems)
                + ". Drop the store and index it again, or choose another index_prefix"
            )
        self._remember(store.store_id, store.dimension)

    def drop(self, store_id: str) -> None:
        name = self.index_name(store_id)
        self._call(f"delete index {name}", lambda: self._client.indices.delete(index=name), store_id)
        with self._lock:
            self._dimensions.pop(store_id, None)

    def close(self) -> None:
        self._client.close()

    def ping(self) -> None:
        """One ``GET /`` with a short timeout and no retry: a readiness probe must answer fast."""
        timeout = self._options.ping_timeout_s
        self._call("GET /", lambda: self._client.info(request_timeout=timeout), attempts=1)

    def server(self) -> ServerFacts:
        """Distribution, version and whether the k-NN plugin is installed (for ``doctor``)."""
        info = self._call("GET /", self._client.info)
        plugins = self._call("GET /_cat/plugins", lambda: self._client.cat.plugins(format="json"))
        return server_facts(info, plugins)

    def check_store(self, store_id: str, dimension: int | None = None) -> tuple[IndexFacts, list[str]]:
        """The store's index and why it does not match this configuration (empty if it does); NotFound if absent."""
        facts = self._facts(store_id)
        return facts, mapping_problems(facts, dimension, self._options.hnsw)

    # -- writes ---------------------------------------------------------------

    def upsert(self, store_id: str, chunks: Sequence[ChunkRecord]) -> None:
        chunks = list(chunks)
        name = self.index_name(store_id)
        vectors = chunk_vectors(chunks, self._dimension(store_id))
        if not chunks:
            return
        actions = bulk_actions(name, store_id, chunks, vectors)
        document_of = {action["_id"]: chunk.document_id for action, chunk in zip(actions, chunks, strict=True)}
        try:
            failures = self._call(f"bulk write to {name}", lambda: self._bulk(actions), store_id)
        except Exception:
            self._forget_documents(name, sorted(set(document_of.values())))
            raise
        rejected = failed_documents(failures, document_of)
        written = sorted({chunk.document_id for chunk in chunks} - rejected.keys())
        if written:
            keep = [chunk.chunk_id for chunk in chunks if chunk.document_id not in rejected]
            what = f"remove stale chunks in {name}"
            self._by_query("delete_by_query", name, delete_stale_body(written, keep), what, store_id)
        if rejected:
            log.warning("OpenSearch rejected chunks of %d document(s) in %s", len(rejected), name)
            self._forget_documents(name, sorted(rejected))
            raise ChunksRejected(sorted(rejected), [f for group in rejected.values() for f in group])

    def delete_document(self, store_id: str, document_id: str) -> None:
        name = self.index_name(store_id)
        self._by_query(
            "delete_by_query", name, delete_document_body(document_id), f"delete a document in {name}", store_id
        )

    def set_document_acl(self, store_id: str, document_id: str, acl: Acl) -> None:
        name = self.index_name(store_id)
        self._by_query("update_by_query", name, set_acl_body(document_id, acl), f"change an ACL in {name}", store_id)

    def _bulk(self, actions: list[Body]) -> list[BulkFailure]:
        """Send ``actions`` in batches; items refused with 429/5xx are sent again (bounded, with backoff).

        Returns the items OpenSearch refused for good. A failure of a whole
        request raises (and ``_call`` retries the lot: every action is idempotent).
        """
        options = self._options
        attempts = options.max_retries + 1
        refused: list[BulkFailure] = []
        pending = actions
        for attempt in range(1, attempts + 1):
            transient: list[BulkFailure] = []
            for ok, item in streaming_bulk(
                self._client,
                pending,
                chunk_size=options.bulk_batch,
                raise_on_error=False,
                raise_on_exception=True,
                max_retries=0,  # item retries are ours, with our backoff
                yield_ok=False,
                refresh=options.refresh,
            ):
                if not ok:
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

    def _by_query(self, operation: str, name: str, body: Body, what: str, store_id: str | None = None) -> None:
        """Run ``_delete_by_query`` or ``_update_by_query`` until it has touched every match (bounded)."""
        run = getattr(self._client, operation)
        refresh = self._options.refresh != "false"
        attempts = self._options.max_retries + 1
        for attempt in range(1, attempts + 1):
            response = self._call(
                what, lambda: run(index=name, body=body, refresh=refresh, conflicts="proceed"), store_id
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

    def _forget_documents(self, name: str, document_ids: list[str]) -> None:
        """Best effort, one attempt: leave no half-written document behind."""
        try:
            self._client.delete_by_query(
                index=name, body=delete_documents_body(document_ids), refresh=True, conflicts="proceed"
            )
        except TransportError:
            log.warning("could not remove %d partly written document(s) from %s", len(document_ids), name)

    # -- reads ----------------------------------------------------------------

    def knn(self, store_id: str, vector: Vector, k: int, filter: Filter) -> list[SearchHit]:
        _check_k(k)
        query = to_query(filter) if filter is not None else None
        name = self.index_name(store_id)
        unit = query_vector(vector, self._dimension(store_id))
        body = knn_body(unit, k, query, self._options.hnsw.ef_search)
        page = search_hits(self._search(store_id, f"knn search in {name}", body))
        hits = _ranked([SearchHit(chunk_from_source(h.source), cosine_from_knn_score(h.score)) for h in page])[:k]
        if len(hits) < k and self.count(store_id, filter) > len(hits):
            log.info("knn in %s returned %d of %d hits; searching exactly", name, len(hits), k)
            return self.exact(store_id, vector, k, filter)
        return hits

    def exact(self, store_id: str, vector: Vector, k: int, filter: Filter) -> list[SearchHit]:
        _check_k(k)
        query = to_query(filter)
        name = self.index_name(store_id)
        unit = query_vector(vector, self._dimension(store_id))
        hits: list[SearchHit] = []
        after: list[Any] | None = None
        while len(hits) < k:
            size = min(k - len(hits), self._options.page_size)
            page = search_hits(self._search(store_id, f"exact search in {name}", exact_body(unit, size, query, after)))
            hits.extend(SearchHit(chunk_from_source(h.source), cosine_from_script_score(h.score)) for h in page)
            if len(page) < size or page[-1].sort is None:
                break
            after = page[-1].sort
        return _ranked(hits)[:k]

    def count(self, store_id: str, filter: Filter | None = None) -> int:
        body = count_body(to_query(filter))
        name = self.index_name(store_id)
        response = self._call(f"count in {name}", lambda: self._client.count(index=name, body=body), store_id)
        return total_count(response)

    # -- plumbing -------------------------------------------------------------

    def _search(self, store_id: str, what: str, body: Body) -> Any:
        name = self.index_name(store_id)
        return self._call(what, lambda: self._client.search(index=name, body=body), store_id)

    def _remember(self, store_id: str, dimension: int) -> None:
        with self._lock:
            self._dimensions[store_id] = dimension

    def _dimension(self, store_id: str) -> int:
        with self._lock:
            known = self._dimensions.get(store_id)
        if known is not None:
            return known
        facts = self._facts(store_id)
        problems = mapping_problems(facts, None, self._options.hnsw)
        problems = [p for p in problems if not p.startswith("engine ")]  # searchable all the same
        if problems or facts.dimension is None:
            raise InvalidArgument(f"OpenSearch index {facts.name!r} is not a DocQA store index: {'; '.join(problems)}")
        self._remember(store_id, facts.dimension)
        return facts.dimension

    def _facts(self, store_id: str) -> IndexFacts:
        """What the store's index says about itself; NotFound if there is none."""
        name = self.index_name(store_id)
        response = self._call(f"read index {name}", lambda: self._client.indices.get(index=name), store_id)
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
                        self._dimensions.pop(store_id, None)
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
