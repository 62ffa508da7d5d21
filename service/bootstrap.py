"""The one place that wires adapters together.

``build_app`` takes any adapter a caller wants to hand in (a test, a server)
and builds the rest from configuration, lazily: nothing that is slow to start
(the embedding model, the index) is created until first used.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from acl.errors import ConfigurationError, Unavailable
from indexer.private_files import private_dir
from indexer.store_ids import validate_store_id
from service.config import OpenSearchConfig, Settings

if TYPE_CHECKING:
    # Only for types: commands that never query (stores, settings, groups, acl)
    # must not pay for numpy, the engine or the index at start-up.
    from acl.checker import AccessChecker
    from indexer.embedder import Embedder
    from indexer.index import Index
    from indexer.index.opensearch.index import OpenSearchOptions
    from service.access.admin import Admin
    from service.access.authorized import AuthorizedAdmin
    from service.access.explain_query import QueryExplainer
    from service.access.state import AccessState
    from service.adaptation.background import AdaptJobs
    from service.adaptation.options import AdaptOptions
    from service.directory.cache import CachedSource
    from service.domain.authorization import HasRole
    from service.generation.port import Generator
    from service.history.service import HistoryService
    from service.persistence.ports import SettingsRepository
    from service.query.engine import QueryEngine
    from service.ranking.port import Reranker

log = logging.getLogger("docqa.bootstrap")

EmbedderFactory = Callable[[str], "Embedder"]


@dataclass
class App:
    """The application: configuration plus its adapters, created on first use."""

    settings: Settings
    _repository: SettingsRepository | None = None
    _index: Index | None = None
    _generator: Generator | None = None
    _embedder_factory: EmbedderFactory | None = None
    _embedders: dict[str, Embedder] = field(default_factory=dict)
    _engine: QueryEngine | None = None
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _generator_checked: tuple[float, list[str]] | None = None
    _reranker: Reranker | None = None
    _reranker_ready: bool = False  # built (or handed in); None then means rerank.kind none
    _batch_questions: bool = False  # a server's concurrent questions share encoder calls (query_batching)
    _adapt_options: AdaptOptions | None = None  # the base of the adaptations a server starts (None: the defaults)
    _adapt_jobs: AdaptJobs | None = None

    @property
    def repository(self) -> SettingsRepository:
        with self._lock:
            if self._repository is None:
                from service.persistence.sql_settings import SqlSettingsRepository

                laptop = self.settings.database.url is None
                if laptop:
                    private_dir(self.settings.data_dir)
                # The laptop's SQLite file is migrated on first use; a configured database
                # (PostgreSQL in production) must be migrated by `docqa db upgrade` first.
                repository = SqlSettingsRepository.from_url(
                    self.settings.database_url, upgrade=laptop, defaults=self.settings.store_defaults.retrieval()
                )
                repository.use_group_sources(self.group_sources)
                self._repository = repository
            return self._repository

    @cached_property
    def group_sources(self) -> tuple[CachedSource, ...]:
        """The outside directories users' groups are read from (``directory``), each behind its cache."""
        config = self.settings.directory
        if config.ldap is None:
            return ()
        from service.directory.cache import CachedSource
        from service.directory.ldap import LdapGroupSource

        source = LdapGroupSource(config.ldap)
        return (CachedSource(source, config.cache_ttl_s, config.cache_max_entries, config.stale_grace_s),)

    @property
    def index(self) -> Index:
        with self._lock:
            if self._index is None and self.settings.index.backend == "opensearch":
                self._index = opensearch_index(self.settings)
            if self._index is None:
                from indexer.index.embedded.index import EmbeddedIndex

                private_dir(self.settings.index_dir)
                self._index = EmbeddedIndex(self.settings.index_dir)
            return self._index

    def check_index_server(self) -> None:
        """Once at start-up (``docqa serve``, ``docqa index``): refuse an OpenSearch DocQA cannot use.

        ConfigurationError names why (not OpenSearch, older than 2.19, no k-NN plugin, an API key on a server
        older than 3.7, credentials refused). A server that does not answer is only logged: readiness reports
        it and every request retries. Nothing to check with the embedded index, nor on OpenSearch Serverless,
        which answers neither ``GET /`` nor ``_cat/plugins``.
        """
        if self.settings.index.backend != "opensearch":
            return
        config = self.settings.index.opensearch
        if config.aws is not None and config.aws.service == "aoss":
            log.info("OpenSearch Serverless at %s answers no GET /: version and plugins not checked", config.url)
            return
        from indexer.index.opensearch.client import ServerInfo, check_server

        index = self.index
        if not isinstance(index, ServerInfo):  # an index handed in by a test
            return
        try:
            facts = check_server(index, engine=config.engine, api_key_configured=config.api_key is not None)
        except Unavailable as exc:
            log.warning(
                "OpenSearch could not be checked at start-up (%s); carrying on: /readyz reports it and requests retry",
                exc.message,
            )
            return
        log.info("OpenSearch %s at %s with the k-NN plugin: supported", facts.version, config.url)

    @property
    def generator(self) -> Generator:
        with self._lock:
            if self._generator is None and self.settings.generator.backend == "watsonx":
                # Connects (and imports the SDK) on the first answer, not here.
                from service.generation.watsonx import WatsonxGenerator

                self._generator = WatsonxGenerator(self.settings.generator.watsonx)
            if self._generator is None:
                from service.generation.extractive import ExtractiveGenerator

                config = self.settings.generator
                self._generator = ExtractiveGenerator(
                    max_sentences=config.max_sentences,
                    context_tokens=config.context_tokens,
                    similarity=self._similarity if config.semantic_units else None,
                    semantic_units=config.semantic_units,
                )
            return self._generator

    def _similarity(self, model: str, question: str, texts: Sequence[str]) -> list[float]:
        """The cosine of ``question`` with each of ``texts`` in embedding model ``model`` (vectors are unit)."""
        embedder = self.embedder(model)
        vectors = embedder.embed_documents(list(texts))
        return [float(x) for x in vectors @ embedder.embed_query(question)]

    def directory_problems(self) -> list[str]:
        """What stops the outside group directories from answering (``docqa doctor``, ``/readyz``), each
        problem naming its setting; empty without one."""
        return [problem for source in self.group_sources for problem in source.check()]

    def generator_problems(self, max_age_s: float = 60.0) -> list[str]:
        """The generator's failing checks (``"name: detail"``), as ``docqa doctor`` shows them.

        The extractive generator has none. For watsonx the credentials, the
        project and the model are tried at most once per ``max_age_s`` (a
        readiness probe must not call the service on every probe).
        """
        import time

        if self.settings.generator.backend != "watsonx":
            return []
        with self._lock:
            if self._generator_checked is not None and time.monotonic() - self._generator_checked[0] < max_age_s:
                return self._generator_checked[1]
        from service.generation.watsonx import check

        problems = [f"{name}: {detail}" for name, ok, detail in check(self.settings) if not ok]
        with self._lock:
            self._generator_checked = (time.monotonic(), problems)
        return problems

    @property
    def reranker(self) -> Reranker | None:
        """The reranker ``rerank.kind`` names (None: retrieval order), built on first use."""
        with self._lock:
            if not self._reranker_ready:
                from service.ranking.build import build_reranker

                self._reranker = build_reranker(self.settings, self.embedder)
                self._reranker_ready = True
            return self._reranker

    def embedder(self, model: str | None = None) -> Embedder:
        """The embedder of ``model`` (default: the configured one), created once."""
        name = model or self.settings.embedding.model
        with self._lock:
            if name not in self._embedders:
                if self._embedder_factory is not None:
                    self._embedders[name] = self._embedder_factory(name)
                else:
                    self._embedders[name] = self._build_embedder(name)
                if self._batch_questions and self.settings.query_batching.enabled:
                    self._embedders[name] = _batching(self._embedders[name], self.settings)
            return self._embedders[name]

    def batch_questions(self) -> None:
        """Embed concurrent questions in shared encoder calls from now on (``docqa serve``; before any query)."""
        with self._lock:
            self._batch_questions = True

    def keep_lexicons(self) -> None:
        """Rank BM25 from memory on the embedded index from now on (``docqa serve``; ``index.lexicon_max_postings``).

        A one-shot CLI question would read a store's whole full-text index to use it once, so only a server does.
        """
        index = self.index
        from indexer.index.embedded.index import EmbeddedIndex

        if isinstance(index, EmbeddedIndex):
            index.keep_lexicons(self.settings.index.lexicon_max_postings)

    def _build_embedder(self, name: str) -> Embedder:
        config = self.settings.embedding
        if config.backend == "onnx" and config.device in (None, "cpu"):
            from indexer.embedder_onnx import OnnxEmbedder
            from indexer.onnx_model import shared_cache_dir

            shared = shared_cache_dir()
            caches = [self.settings.data_dir] + ([shared] if shared is not None else [])
            return OnnxEmbedder(
                name,
                caches=caches,
                batch_size=config.batch_size,
                quantize=config.quantize,
                spinning=not self._batch_questions,  # a server's questions come one by one (OnnxEmbedder)
            )
        from indexer.embedder import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(name, batch_size=config.batch_size, device=config.device)

    @property
    def engine(self) -> QueryEngine:
        with self._lock:
            if self._engine is None:
                from acl.checker import AccessChecker

                self._engine = self._make_engine(self.index, AccessChecker(self.repository))
            return self._engine

    @property
    def history(self) -> HistoryService:
        """Users' history and ratings (tables of the settings database), re-checked on every read."""
        from service.history.build import build_history

        return build_history(self.settings, self.repository)

    @property
    def one_shot_engine(self) -> QueryEngine:
        """A query engine that keeps no history (``docqa eval``, benchmarks)."""
        return self._make_engine(self.index, None, history=False)

    def _make_engine(self, index: Index, checker: AccessChecker | None, *, history: bool = True) -> QueryEngine:
        """A query engine over these adapters with the given index and access checker."""
        from service.domain.limits import Limits
        from service.history.build import build_conversations
        from service.query.engine import QueryEngine

        limits = self.settings.query
        return QueryEngine(
            repository=self.repository,
            index=index,
            embedder_for=self.embedder,
            generator=self.generator,
            checker=checker,
            limits=Limits(
                max_question_chars=limits.max_question_chars,
                max_k=limits.max_k,
                max_documents=limits.max_documents,
                max_sentences=self.settings.analysis.max_sentences,
                max_compared_chunks=self.settings.analysis.max_chunks,
            ),
            link_allowlist=self.settings.generator.link_allowlist,
            reranker=self.reranker,
            rerank_candidates=self.settings.rerank.candidates,
            conversations=build_conversations(self.settings, self.repository, self.generator) if history else None,
        )

    @property
    def access(self) -> AccessState:
        """The one writer of ACLs and memberships, keeping the index copy in line."""
        from service.access.state import AccessState

        return AccessState(self.repository, self.index)

    @property
    def admin(self) -> Admin:
        from service.access.admin import Admin

        return Admin(self.repository, self.index)

    def admin_without_index(self) -> Admin:
        """Admin operations that never touch the index (fast start-up)."""
        from service.access.admin import Admin

        return Admin(self.repository, None)

    def admin_for(self, caller: HasRole, actor: str) -> AuthorizedAdmin:
        """The admin operations a server runs for ``caller`` (each refuses a non-admin); ``actor``: who the
        audit trail names."""
        from service.access.authorized import AuthorizedAdmin
        from service.access.explain import AccessExplainer

        return AuthorizedAdmin(
            caller,
            actor,
            admin=lambda: self.admin,
            admin_without_index=self.admin_without_index,
            ingestor=self.ingestor,
            explainer=lambda: AccessExplainer(self.repository, self.group_sources, self.admin_without_index().acl_view),
            question_explainer=self.question_explainer,
        )

    def question_explainer(self) -> QueryExplainer:
        """``docqa access explain`` with a question: the admin's search (no history), explained per document."""
        from service.access.explain_query import QueryExplainer, engine_search

        search = engine_search(lambda: self.one_shot_engine)
        return QueryExplainer(self.repository, self.group_sources, self.admin_without_index().acl_view, search)

    @property
    def adapt_jobs(self) -> AdaptJobs:
        """The adaptations the servers run in the background (``startAdaptation``), one per store at a time."""
        with self._lock:
            if self._adapt_jobs is None:
                from service.adaptation.background import AdaptJobs

                self._adapt_jobs = AdaptJobs(self, self._adapt_options)
            return self._adapt_jobs

    def ingestor(self, store_id: str, *, create: bool = True):  # type: ignore[no-untyped-def]
        """An ingestor for ``store_id``, creating the store and its index if new.

        With ``create=False`` an unknown store is NotFound, never created.
        """
        from indexer.ingest.pipeline import Ingestor

        validate_store_id(store_id)  # before the embedding model is loaded
        if not create:
            self.admin_without_index().store(store_id)
        embedder = self.embedder()
        store = self.admin.ensure_store(store_id, embedder.model_name, self.settings.store_defaults)
        if store.embedding_model != embedder.model_name:  # pragma: no cover - ensure_store checks
            raise ConfigurationError("embedding model mismatch")
        from indexer.index import StoreSpec

        self.index.ensure(StoreSpec(store_id, embedder.dimension))
        return Ingestor(
            index=self.index,
            catalog=self.repository,
            access=self.access,
            embedder=embedder,
            store_id=store_id,
            prefetch_batches=self.settings.indexing.prefetch_batches,
        )

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
        sources = self.__dict__.get("group_sources", ())  # only those built (a cached property)
        for adapter in (self._generator, self._reranker, self._repository, *self._embedders.values(), *sources):
            close = getattr(adapter, "close", None)
            if close is not None:
                close()


def _batching(embedder: Embedder, settings: Settings) -> Embedder:
    from indexer.query_batcher import BatchingEmbedder

    config = settings.query_batching
    return BatchingEmbedder(
        embedder,
        max_batch=config.max_batch,
        max_wait_s=config.max_wait_ms / 1000,
        max_queue=config.max_queue,
        queue_timeout_s=config.queue_timeout_s,
    )


def opensearch_index(settings: Settings) -> Index:
    """The OpenSearch adapter as ``index.opensearch`` configures it (opensearch-py is imported only here)."""
    from indexer.index.opensearch.client import AwsSigV4, connect

    config = settings.index.opensearch
    if config.url is None:  # pragma: no cover - IndexConfig refuses this
        raise ConfigurationError("index.opensearch.url is required for backend opensearch")

    def secret(value: SecretStr | None) -> str | None:
        return None if value is None else value.get_secret_value()

    return connect(
        config.url,
        username=secret(config.username),
        password=secret(config.password),
        api_key=secret(config.api_key),
        aws=None if config.aws is None else AwsSigV4(config.aws.region, config.aws.service),
        ca_certs=None if config.ca_certs is None else str(config.ca_certs),
        verify=config.verify,
        timeout_s=config.timeout_s,
        pool_maxsize=settings.opensearch_pool_maxsize,
        options=opensearch_options(config),
    )


def opensearch_options(config: OpenSearchConfig) -> OpenSearchOptions:
    """How the adapter uses the server, from ``index.opensearch``."""
    from indexer.index.opensearch.index import OpenSearchOptions
    from indexer.index.opensearch.mapping import HnswSettings

    values: dict[str, Any] = {
        "hnsw": HnswSettings(
            engine=config.engine, m=config.m, ef_construction=config.ef_construction, ef_search=config.ef_search
        ),
        "index_prefix": config.index_prefix,
        "max_retries": config.max_retries,
        "backoff_s": config.backoff_s,
        "refresh": config.refresh,
        "bulk_batch": config.bulk_batch,
        "bulk_max_bytes": config.bulk_max_bytes,
        "search_timeout_s": config.search_timeout_s,
        "write_timeout_s": config.write_timeout_s,
        "shards": config.shards,
        "replicas": config.replicas,
    }
    return OpenSearchOptions(**values)


def build_app(
    settings: Settings,
    *,
    repository: SettingsRepository | None = None,
    index: Index | None = None,
    generator: Generator | None = None,
    embedder_factory: EmbedderFactory | None = None,
    reranker: Reranker | None = None,
    adapt_options: AdaptOptions | None = None,
) -> App:
    """Build the application from configuration and any adapters handed in (``adapt_options``: the base of the
    adaptations its servers start; a test's train in seconds)."""
    return App(
        settings=settings,
        _repository=repository,
        _index=index,
        _generator=generator,
        _embedder_factory=embedder_factory,
        _reranker=reranker,
        _reranker_ready=reranker is not None,
        _adapt_options=adapt_options,
    )
