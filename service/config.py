"""Typed configuration: built-in defaults < YAML file < environment variables.

Every value is validated when the configuration is loaded; a bad one stops
start-up with a ``ConfigurationError`` naming the key. Environment variables
use the prefix ``DOCQA_`` and ``__`` between nested keys
(``DOCQA_EMBEDDING__MODEL``); ``DOCQA_CONFIG`` names the YAML file and
``DOCQA_DATA_DIR`` the data directory; ``DOCQA_DATABASE_URL`` is accepted for
``database.url``. Secrets (keys typed ``SecretStr``, a password in the database
URL) come only from the environment or files, never from the YAML file.
"""

from __future__ import annotations

import ipaddress
import math
import os
import typing
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from acl.errors import ConfigurationError, InvalidArgument
from service.domain.limits import MAX_STORE_CHUNKS
from service.domain.links import AllowedPrefix
from service.domain.retrieval_settings import DEFAULT_FUSION, DEFAULT_LEXICAL_WEIGHT, RetrievalDefaults
from service.domain.store_settings import validate_model_id

_YAML_FILE: ContextVar[str | None] = ContextVar("docqa_yaml_file", default=None)


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "docqa"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatabaseConfig(_Section):
    #: SQLAlchemy URL; None = SQLite file ``settings.sqlite`` in the data directory.
    #: It may hold a password, so it comes from DOCQA_DATABASE_URL in production and stays out of reprs.
    url: str | None = Field(None, repr=False)


class AwsSigningConfig(_Section):
    """AWS SigV4 signing of every OpenSearch request (Amazon OpenSearch Service or Serverless).

    Credentials come from botocore's default chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE
    and ~/.aws, EKS IRSA's web identity token, a container or instance role); needs ``pip install 'docqa[aws]'``.
    """

    #: The domain's or collection's region, e.g. ``eu-west-1``.
    region: str = Field(pattern=r"^[a-z]{2}(-[a-z]+)+-[0-9]+$")
    #: ``es``: Amazon OpenSearch Service (a domain); ``aoss``: OpenSearch Serverless (a collection).
    service: Literal["es", "aoss"] = "es"


class OpenSearchConfig(_Section):
    """Where and how the OpenSearch index backend keeps each store's chunks."""

    #: ``http(s)://host:port`` of the cluster (credentials go in the keys below, not in the URL).
    url: str | None = None
    username: SecretStr | None = None
    password: SecretStr | None = None
    #: Sent as ``Authorization: ApiKey <api_key>``; instead of username/password. OpenSearch 3.7 or later.
    api_key: SecretStr | None = None
    #: AWS SigV4 signing instead of username/password or api_key; None = off.
    aws: AwsSigningConfig | None = None
    #: CA bundle (PEM) that signed the cluster's certificate; None = the system's.
    ca_certs: Path | None = None
    #: Check the server's TLS certificate. Turn off only for a throw-away local cluster.
    verify: bool = True
    #: HNSW engine of the ``knn_vector`` field: both filter inside the ANN search; both need OpenSearch 2.19+.
    engine: Literal["faiss", "lucene"] = "lucene"
    m: int = Field(16, ge=2, le=100)
    ef_construction: int = Field(128, ge=2, le=4096)
    ef_search: int = Field(100, ge=1, le=10_000)
    #: Each store's index is ``<index_prefix><store id>``.
    index_prefix: str = Field("docqa-", pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$")
    #: Seconds any request without a timeout of its own may take (index creation, mappings, GET /).
    timeout_s: float = Field(10.0, gt=0, le=600)
    #: Seconds one search or count may take.
    search_timeout_s: float = Field(10.0, gt=0, le=600)
    #: Seconds one bulk write or ``_delete_by_query``/``_update_by_query`` job may take: longer than a search.
    write_timeout_s: float = Field(60.0, gt=0, le=3600)
    #: Connections kept open to the cluster for reuse; None = one per thread that may call the index at once:
    #: ``server.grpc_workers`` plus ``server.graphql_workers``.
    pool_maxsize: int | None = Field(None, ge=1, le=1024)
    #: Retries after the first attempt for connection errors, timeouts, 429 and 5xx.
    max_retries: int = Field(3, ge=0, le=10)
    #: First backoff between retries; it doubles each time (at most 8 s).
    backoff_s: float = Field(0.5, ge=0, le=60)
    #: ``false``: writes become searchable at the cluster's next refresh, and the indexer refreshes once at
    #: the end of a run; ``wait_for`` (each write waits for a refresh) and ``true`` (each write forces one,
    #: a segment per request) are for tests only.
    refresh: Literal["wait_for", "true", "false"] = "false"
    #: Chunks per bulk request.
    bulk_batch: int = Field(500, ge=1, le=10_000)
    #: Primary shards and replicas of a store's index when DocQA creates it; None = the cluster's default.
    shards: int | None = Field(None, ge=1, le=1024)
    replicas: int | None = Field(None, ge=0, le=16)
    #: Bytes per bulk request: 10 MiB is the smallest limit of Amazon OpenSearch Service's instance types;
    #: at most 100 MiB, OpenSearch's default ``http.max_content_length``.
    bulk_max_bytes: int = Field(10 * 1024 * 1024, ge=64 * 1024, le=100 * 1024 * 1024)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL with a host")
        if parts.username or parts.password:
            raise ValueError("must not contain credentials; set username/password or api_key instead")
        return value

    @field_validator("ca_certs")
    @classmethod
    def _readable(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(f"CA bundle {value} does not exist")
        return value

    @model_validator(mode="after")
    def _credentials(self) -> OpenSearchConfig:
        if (self.username is None) != (self.password is None):
            raise ValueError("username and password go together")
        if self.api_key is not None and self.username is not None:
            raise ValueError("use either username/password or api_key, not both")
        if self.aws is not None:
            mixed = [f"index.opensearch.{key}" for key in ("username", "password", "api_key") if getattr(self, key)]
            if mixed:
                raise ValueError(f"aws (SigV4 signing) excludes {', '.join(mixed)}: unset {' and '.join(mixed)}")
            if self.url is not None and urlsplit(self.url).scheme != "https":
                raise ValueError("aws (SigV4 signing) needs an https:// url (signed requests carry a session token)")
            if self.aws.service == "aoss" and self.refresh == "true":
                raise ValueError("aws.service aoss: OpenSearch Serverless refuses refresh=true; use refresh: false")
        return self


class IndexConfig(_Section):
    #: ``embedded``: in-process, under the data directory; ``opensearch``: the cluster in ``opensearch.url``.
    backend: Literal["embedded", "opensearch"] = "embedded"
    opensearch: OpenSearchConfig = OpenSearchConfig()
    #: ``docqa serve`` on the embedded index ranks BM25 from an in-memory copy of a store's full-text index
    #: with at most this many (token, chunk) pairs, ~8 bytes each, a distinct token counted as 25 (per store);
    #: a larger store, or 0, keeps it in SQLite.
    lexicon_max_postings: int = Field(25_000_000, ge=0)

    @model_validator(mode="after")
    def _opensearch_needs_url(self) -> IndexConfig:
        if self.backend == "opensearch" and self.opensearch.url is None:
            raise ValueError("backend opensearch needs index.opensearch.url (DOCQA_INDEX__OPENSEARCH__URL)")
        return self


class EmbeddingConfig(_Section):
    #: The packaged all-MiniLM-L6-v2, a model folder, or a cached model name.
    model: str = "all-MiniLM-L6-v2"
    batch_size: int = Field(32, ge=1, le=4096)
    device: str | None = None
    #: ``onnx``: ONNX Runtime on an export of the model made once and cached (``<data_dir>/models``, and the
    #: cache shared by data directories, ``DOCQA_MODEL_CACHE``); falls back to ``torch`` with a warning when the
    #: export cannot be made. ``torch``: sentence-transformers. Same vectors; see README "Embedder backends".
    backend: Literal["torch", "onnx"] = "onnx"
    #: ``int8``: the ONNX export's weights quantised to int8 per channel (``indexer/onnx_quantize.py``), checked
    #: against fp32 and made once like the export: ~1.6x faster encoding than fp32, vectors at cosine ~0.995 to fp32,
    #: hit@5 kept and hit@1 ~0.02 lower on the quality benchmark. Vectors of one store should come from one
    #: setting: switch on a new store or re-index (``docqa index --reindex``). ``none``: fp32.
    quantize: Literal["none", "int8", "bf16"] = "none"

    @model_validator(mode="after")
    def _int8_needs_onnx(self) -> EmbeddingConfig:
        if self.quantize == "int8" and (self.backend != "onnx" or self.device not in (None, "cpu")):
            raise ValueError("embedding.quantize int8 needs embedding.backend onnx on the CPU")
        return self


class IndexingConfig(_Section):
    """How a folder run (``docqa index``) feeds the encoder (``indexer.ingest.pipeline``)."""

    #: Batches of chunks read, parsed and chunked ahead of the encoder in a background thread while it
    #: encodes; 0 = one thread, each file read when the encoder wants it. See README "Embedder backends".
    prefetch_batches: int = Field(2, ge=0, le=16)


class WatsonxConfig(_Section):
    """IBM watsonx.ai through ``ibm-watsonx-ai`` (used when ``generator.backend`` is ``watsonx``)."""

    #: Service URL, https only (an IBM Cloud region URL, or a Cloud Pak for Data cluster).
    url: str | None = None
    #: An API key (IBM Cloud IAM, or a CPD user's key with ``username``) ...
    api_key: SecretStr | None = None
    #: ... or a bearer token (no authentication request is made) ...
    token: SecretStr | None = None
    #: ... or, on Cloud Pak for Data only, ``username`` + ``password``.
    username: str | None = None
    password: SecretStr | None = None
    #: Exactly one of a project or a deployment space.
    project_id: str | None = None
    space_id: str | None = None
    #: The foundation model used when a store names none of its own.
    model_id: str | None = None
    #: Check the server's certificate (against ``ca_bundle`` when set). Turning it off is logged loudly.
    verify: bool = True
    ca_bundle: Path | None = None
    #: Seconds any one network operation (connect, a read, a write) may take.
    timeout_s: float = Field(60.0, gt=0, le=3600)
    #: Retries of a request answered 429/500/502/503/504, with exponential backoff from ``delay_time_s``.
    max_retries: int = Field(2, ge=0, le=10)
    delay_time_s: float = Field(0.5, ge=0, le=60)
    #: Tokens the answer may have; prompt + context + this must fit ``context_window``.
    max_new_tokens: int = Field(512, ge=1, le=32_768)
    #: The model's maximum sequence length (input + output tokens).
    context_window: int = Field(8192, ge=256, le=2_000_000)

    @field_validator("timeout_s", "delay_time_s")
    @classmethod
    def _finite_seconds(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @field_validator("model_id")
    @classmethod
    def _clean_model_id(cls, value: str | None) -> str | None:
        try:
            return validate_model_id(value, "model_id") if value else value
        except InvalidArgument as exc:
            raise ValueError(exc.message) from None

    def connection_problems(self) -> list[str]:
        """What stops a connection (URL, credentials, project or space, CA bundle), each naming its key."""
        problems: list[str] = []
        if not self.url:
            problems.append("watsonx.url is required")
        elif not self.url.startswith("https://"):
            problems.append("watsonx.url must start with https://")
        if not (self.api_key or self.token or self.password):
            problems.append("one of watsonx.api_key, watsonx.token or watsonx.password is required")
        if self.password and not self.username:
            problems.append("watsonx.username is required with watsonx.password")
        if bool(self.project_id) == bool(self.space_id):
            problems.append("exactly one of watsonx.project_id or watsonx.space_id is required")
        if self.ca_bundle is not None and not self.verify:
            problems.append("watsonx.ca_bundle is set but watsonx.verify is false")
        if self.ca_bundle is not None and not self.ca_bundle.exists():
            problems.append(f"watsonx.ca_bundle {self.ca_bundle} does not exist")
        return problems


class GeneratorConfig(_Section):
    #: ``extractive`` (offline, the default) or ``watsonx``.
    backend: Literal["extractive", "watsonx"] = "extractive"
    #: Tokens of context the generator accepts; a DocumentQuery sends the whole
    #: document only when it fits.
    context_tokens: int = Field(8192, ge=256)
    #: Sentences the extractive answerer quotes.
    max_sentences: int = Field(3, ge=1, le=20)
    #: Units (the best by their words) the extractive answerer compares in meaning with the question, with the
    #: store's embedding model, to choose what it quotes; 0 = words alone. Each costs ~3-6 ms of CPU per answer.
    semantic_units: int = Field(6, ge=0, le=50)
    #: URL prefixes (http/https) an answer may link to besides its own sources; every other
    #: link or image in an answer is removed (service.generation.sanitize).
    link_allowlist: tuple[str, ...] = Field((), max_length=100)
    watsonx: WatsonxConfig = WatsonxConfig()

    @field_validator("link_allowlist")
    @classmethod
    def _allowlist_entries(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            AllowedPrefix.parse(entry)  # ValueError names the entry
        return value

    @model_validator(mode="after")
    def _watsonx_complete(self) -> GeneratorConfig:
        if self.backend != "watsonx":
            return self
        w = self.watsonx
        problems = w.connection_problems()
        if not w.model_id:
            problems.append("watsonx.model_id is required")
        if w.max_new_tokens >= w.context_window:
            problems.append("watsonx.max_new_tokens must be smaller than watsonx.context_window")
        if problems:
            raise ValueError("with backend watsonx: " + "; ".join(problems))
        return self


class RerankConfig(_Section):
    """How a query's readable candidates are ordered before the best are kept (``service.ranking``)."""

    #: ``offline``: the store's embedding model and text evidence, no extra model (the default);
    #: ``watsonx``: watsonx.ai's rerank API with ``model_id``, through ``generator.watsonx``'s connection;
    #: ``cross_encoder``: a local sentence-transformers CrossEncoder from ``model_path``; ``adapted``: each
    #: store's own model (``docqa adapt``) over the offline order, the offline reranker where a store has none;
    #: ``none``: retrieval order.
    kind: Literal["offline", "watsonx", "cross_encoder", "adapted", "none"] = "offline"
    #: Candidates the reranker orders (the best of them are kept: a query's k or the store's max_chunks).
    candidates: int = Field(30, ge=1, le=1000)
    #: The watsonx.ai rerank model (kind ``watsonx``).
    model_id: str = "cross-encoder/ms-marco-minilm-l-12-v2"
    #: Folder of a sentence-transformers CrossEncoder model (kind ``cross_encoder``); nothing is downloaded.
    model_path: Path | None = None
    #: Seconds one rerank request to watsonx.ai may take (connect, write and read each); it is not retried.
    timeout_s: float = Field(5.0, gt=0, le=600)
    #: Tokens of each question + chunk pair the model reads; longer input is cut at the end (the model's limit).
    truncate_input_tokens: int = Field(512, ge=16, le=32_768)

    @field_validator("timeout_s")
    @classmethod
    def _finite_seconds(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @field_validator("model_id")
    @classmethod
    def _clean_model_id(cls, value: str) -> str:
        try:
            return validate_model_id(value, "model_id")
        except InvalidArgument as exc:
            raise ValueError(exc.message) from None

    @model_validator(mode="after")
    def _model_path_for_cross_encoder(self) -> RerankConfig:
        if self.kind != "cross_encoder":
            return self
        if self.model_path is None:
            raise ValueError("kind cross_encoder needs rerank.model_path, the folder of a CrossEncoder model")
        if not self.model_path.is_dir():
            raise ValueError(f"rerank.model_path {self.model_path} is not a folder")
        return self


class StoreDefaults(_Section):
    """Settings a new store starts with; an admin changes them per store."""

    level: float = Field(0.5, ge=0.0, le=1.0)
    #: Cosine similarity that level 0 maps to, for the packaged MiniLM (level 0.5 maps to 0.35).
    min_threshold: float = Field(0.00, ge=-1.0, le=1.0)
    #: Cosine similarity that level 1 maps to: where relevance reads 1.00 (0.60 saturated most answers).
    max_threshold: float = Field(0.70, ge=-1.0, le=1.0)
    max_chunks: int = Field(8, ge=1, le=MAX_STORE_CHUNKS)
    #: How dense and lexical results are fused (``service.domain.retrieval_settings``).
    fusion: Literal["rrf", "weighted", "dense", "lexical"] = DEFAULT_FUSION
    #: The lexical ranking's share in ``rrf`` and ``weighted`` fusion.
    lexical_weight: float = Field(DEFAULT_LEXICAL_WEIGHT, ge=0.0, le=1.0)

    @field_validator("level", "min_threshold", "max_threshold", "lexical_weight")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> StoreDefaults:
        if self.min_threshold > self.max_threshold:
            raise ValueError("min_threshold must not exceed max_threshold")
        return self

    def retrieval(self) -> RetrievalDefaults:
        """What a store without its own retrieval settings reads as."""
        return RetrievalDefaults(self.fusion, self.lexical_weight)


class QueryConfig(_Section):
    #: Longest question accepted, in characters.
    max_question_chars: int = Field(4000, ge=1, le=100_000)
    #: Largest k a search may ask for.
    max_k: int = Field(100, ge=1, le=1000)
    #: Most documents a MultiDocumentQuery may name.
    max_documents: int = Field(1000, ge=1)


class AnalysisConfig(_Section):
    """What one summary or comparison may consider: a longer document is sampled evenly, in order, and the
    result carries a warning saying how much of it was considered."""

    #: Sentences an extractive summary ranks at most (its similarity graph holds this many squared × 8 bytes:
    #: 32 MB at 2,000, 800 MB at the most allowed).
    max_sentences: int = Field(2000, ge=50, le=10_000)
    #: Chunks of each document a comparison aligns into topics, and a language model's summary reads (its map
    #: and reduce calls, prompts and memory), at most.
    max_chunks: int = Field(400, ge=10, le=10_000)


class QueryBatchingConfig(_Section):
    """Concurrent questions embedded in one encoder call (``indexer.query_batcher``)."""

    #: Batch the questions of concurrent queries; off: each question is its own encoder call.
    enabled: bool = True
    #: Most questions in one encoder call.
    max_batch: int = Field(32, ge=1, le=1024)
    #: How long the first question of a batch waits for others (milliseconds; 0 = only those queued already:
    #: questions that arrive while the encoder is busy still form the next batch, and an idle server's
    #: question waits for nothing; 1 ms cost a lone question 1.7 ms of its p50).
    max_wait_ms: float = Field(0.0, ge=0, le=50)
    #: Most questions waiting; a caller finding it full waits up to queue_timeout_s, then RESOURCE_EXHAUSTED.
    max_queue: int = Field(256, ge=1, le=100_000)
    queue_timeout_s: float = Field(1.0, ge=0, le=60)


class HistoryConfig(_Section):
    """Users' query history, conversations and ratings (``service.history``)."""

    #: Days an answered query is kept; older entries (and their ratings) are purged at start-up
    #: and hourly by ``docqa serve``, and by ``docqa history purge``.
    retention_days: int = Field(90, ge=1, le=36_500)
    #: Earlier turns of a conversation read for a follow-up (the rewrite and the prompt).
    turns: int = Field(6, ge=1, le=50)
    #: The token role (in ``auth.admin_claim``) that may read other users' conversations, read-only, their
    #: sources re-checked against the auditor's own rights. The admin role alone does not.
    audit_role: str = Field("docqa-history-auditor", min_length=1, max_length=200)


class LdapConfig(_Section):
    """Users' groups read from an LDAP server or Active Directory (``service.directory.ldap``)."""

    #: ``ldap://host:389`` or ``ldaps://host:636``.
    url: str = Field(min_length=8, max_length=500)
    #: Upgrade an ``ldap://`` connection with StartTLS before binding.
    start_tls: bool = False
    #: CA certificates (PEM) that the server's certificate must chain to (LDAPS and StartTLS); None = the
    #: system's trust store.
    ca_file: Path | None = None
    #: The DN DocQA binds as; None = an anonymous bind.
    bind_dn: str | None = Field(None, max_length=1000)
    #: Its password, from the environment (``DOCQA_DIRECTORY__LDAP__BIND_PASSWORD``) ...
    bind_password: SecretStr | None = None
    #: ... or from a file (a mounted Kubernetes secret); its first line is the password.
    bind_password_file: Path | None = None
    #: Where users are looked for, and how a DocQA user id finds its entry (``{user}`` is the id, escaped).
    user_base_dn: str = Field(min_length=1, max_length=1000)
    user_filter: str = Field("(uid={user})", min_length=3, max_length=1000)
    #: Where groups are looked for, which entries are groups, and how a group's name is matched (``{group}``).
    group_base_dn: str = Field(min_length=1, max_length=1000)
    group_filter: str = Field("(|(objectClass=groupOfNames)(objectClass=groupOfUniqueNames))", max_length=1000)
    group_name_filter: str = Field("(cn={group})", min_length=3, max_length=1000)
    #: The attribute of a group that lists its members' DNs, and the one that names it.
    member_attribute: str = Field("member", pattern=r"^[A-Za-z][A-Za-z0-9-]{0,63}$")
    name_attribute: str = Field("cn", pattern=r"^[A-Za-z][A-Za-z0-9-]{0,63}$")
    #: Active Directory: a user's groups, nested ones included, in one search (the in-chain matching rule
    #: 1.2.840.113556.1.4.1941) instead of one search per level.
    active_directory: bool = False
    #: DocQA's name for the directory's group ``cn=finance``: ``group:<prefix>finance``.
    group_prefix: str = Field("", max_length=60, pattern=r"^[A-Za-z0-9_.-]*$")
    #: Entries per page of a search (large groups).
    page_size: int = Field(500, ge=1, le=10_000)
    #: Seconds to connect and to wait for one answer.
    timeout_s: float = Field(5.0, gt=0, le=120)


class DirectoryConfig(_Section):
    """Where users' groups come from besides DocQA's own tables (manifests, admin changes)."""

    #: Groups from LDAP / Active Directory; None (the default): DocQA's own tables only.
    ldap: LdapConfig | None = None
    #: Seconds a principal's groups read from an outside directory are used before they are read again.
    cache_ttl_s: float = Field(30.0, ge=0, le=3600)
    #: Principals whose groups are kept at most (least recently used forgotten).
    cache_max_entries: int = Field(10_000, ge=1, le=10_000_000)
    #: Seconds past the TTL that groups read before may still be used while the directory cannot be reached.
    #: 0 (the default): fail closed — a caller whose groups cannot be read gets UNAVAILABLE.
    stale_grace_s: float = Field(0.0, ge=0, le=86_400)


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


class OidcLogin(_Section):
    """A single sign-on button on the ask page: the OAuth 2.0 authorization-code flow with PKCE, run by the
    page itself against the identity provider (a public client: no secret). The token it gets is verified
    like every bearer token, so ``auth`` must hold the provider's RS256 keys, ``issuer`` and ``audience``."""

    #: The provider's authorization endpoint (https; http only on loopback, for tests).
    authorization_endpoint: str = Field(min_length=8, max_length=2048)
    #: Its token endpoint; the page posts the code there (the provider must allow this origin by CORS).
    token_endpoint: str = Field(min_length=8, max_length=2048)
    #: The client id registered for the console; its redirect URI is the console's own ``/``.
    client_id: str = Field(min_length=1, max_length=200)
    scope: str = Field("openid profile", min_length=1, max_length=500)
    #: Which token of the provider's reply is DocQA's bearer token.
    token: Literal["access_token", "id_token"] = "access_token"
    #: The button's label.
    label: str = Field("Sign in with single sign-on", min_length=1, max_length=100)

    @field_validator("authorization_endpoint", "token_endpoint")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        parts = urlsplit(value)
        loopback = parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS
        if not (parts.scheme == "https" or loopback) or not parts.hostname or parts.username or parts.fragment:
            raise ValueError("must be an https URL (http only on loopback) without user or fragment")
        return value

    @property
    def token_origin(self) -> str:
        """The origin the page posts the code to (the Content-Security-Policy's ``connect-src`` names it)."""
        parts = urlsplit(self.token_endpoint)
        return f"{parts.scheme}://{parts.netloc}"


class WebConfig(_Section):
    """The web console on the HTTP port (``service.api.web``): the ask page, the admin page, GraphiQL."""

    #: Serve the ask page at / and the admin page at /admin.
    console: bool = True
    #: Serve GraphiQL (from the package's own assets) at GET /graphql; turn off in production.
    graphiql: bool = True
    #: Offer a dev login on the ask page that mints a token for any user name: only with
    #: ``auth.allow_unauthenticated`` and the laptop's generated secret. Never in production.
    dev_login: bool = False
    #: Single sign-on with the deployment's identity provider (None: sign in by pasting a token).
    oidc: OidcLogin | None = None


class _DatabaseUrlAlias(PydanticBaseSettingsSource):
    """``DOCQA_DATABASE_URL``, the usual name for a service's database URL, sets ``database.url``
    (``DOCQA_DATABASE__URL`` wins when both are set)."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        url = os.environ.get("DOCQA_DATABASE_URL")
        return {"database": {"url": url}} if url else {}


class Settings(BaseSettings):
    """The whole configuration of a DocQA process."""

    model_config = SettingsConfigDict(
        env_prefix="DOCQA_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
    )

    data_dir: Path = Field(default_factory=default_data_dir)
    database: DatabaseConfig = DatabaseConfig()
    index: IndexConfig = IndexConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    indexing: IndexingConfig = IndexingConfig()
    generator: GeneratorConfig = GeneratorConfig()
    rerank: RerankConfig = RerankConfig()
    store_defaults: StoreDefaults = StoreDefaults()
    query: QueryConfig = QueryConfig()
    analysis: AnalysisConfig = AnalysisConfig()
    query_batching: QueryBatchingConfig = QueryBatchingConfig()
    # The gRPC and GraphQL servers and who may call them (sections defined at the end of this module).
    server: ServerConfig = Field(default_factory=lambda: ServerConfig())
    auth: AuthConfig = Field(default_factory=lambda: AuthConfig())
    limits: LimitsConfig = Field(default_factory=lambda: LimitsConfig())
    history: HistoryConfig = HistoryConfig()
    web: WebConfig = WebConfig()
    directory: DirectoryConfig = DirectoryConfig()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings, _DatabaseUrlAlias(settings_cls)]
        yaml_file = _YAML_FILE.get()
        if yaml_file:
            sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=yaml_file))
        return tuple(sources)

    @model_validator(mode="after")
    def _rerank_connects(self) -> Settings:
        problems = self.generator.watsonx.connection_problems() if self.rerank.kind == "watsonx" else []
        if problems:
            raise ValueError("rerank.kind watsonx connects with generator.watsonx: " + "; ".join(problems))
        return self

    @model_validator(mode="after")
    def _dev_login_on_a_laptop(self) -> Settings:
        if self.web.dev_login and not self.auth.allow_unauthenticated:
            raise ValueError("web.dev_login needs auth.allow_unauthenticated: true (a dev login is unauthenticated)")
        if self.web.dev_login and self.server.host not in LOOPBACK_HOSTS:
            raise ValueError("web.dev_login needs a loopback server.host (127.0.0.1, localhost or ::1)")
        if self.web.dev_login and self.auth.keys_configured:
            raise ValueError("web.dev_login works only with the generated data-directory secret (no auth keys set)")
        if self.web.oidc is not None and (self.auth.rs256_public_key_file is None and self.auth.jwks_file is None):
            raise ValueError("web.oidc needs the provider's keys: set auth.jwks_file or auth.rs256_public_key_file")
        return self

    @model_validator(mode="after")
    def _streams_leave_workers(self) -> Settings:
        if self.limits.max_streams > self.server.grpc_workers:
            raise ValueError("limits.max_streams must not exceed server.grpc_workers (each stream holds a gRPC worker)")
        return self

    @property
    def opensearch_pool_maxsize(self) -> int:
        """Connections the OpenSearch client keeps open: ``index.opensearch.pool_maxsize``, else one per thread
        that may call the index at once (the gRPC workers and the GraphQL resolver threads)."""
        configured = self.index.opensearch.pool_maxsize
        return configured if configured is not None else self.server.grpc_workers + self.server.graphql_workers

    @property
    def database_url(self) -> str:
        return self.database.url or f"sqlite:///{self.data_dir / 'settings.sqlite'}"

    @property
    def index_dir(self) -> Path:
        return self.data_dir / "index"


def load_settings(config_file: str | Path | None = None, **overrides: Any) -> Settings:
    """Build and validate the settings; raise ConfigurationError naming bad keys.

    ``config_file`` (else ``$DOCQA_CONFIG``) names the YAML file; without one
    the built-in defaults (``config/default.yaml``) apply.
    """
    import yaml

    path = str(config_file) if config_file is not None else os.environ.get("DOCQA_CONFIG")
    if path and not Path(path).is_file():
        raise ConfigurationError(f"DOCQA_CONFIG: configuration file {path} does not exist")
    token = _YAML_FILE.set(path or None)
    try:
        problems = _secrets_in_file(path) if path else []
        settings = Settings(**overrides)
    except ValidationError as exc:
        problems += [f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()]
    except (OSError, ValueError, yaml.YAMLError) as exc:  # unreadable or malformed YAML
        raise ConfigurationError(f"cannot read configuration {path}: {exc}") from None
    finally:
        _YAML_FILE.reset(token)
    if problems:
        raise ConfigurationError(f"invalid configuration: {'; '.join(problems)}")
    return settings


def _secret_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Dotted keys of every secret (SecretStr) setting under ``model``."""
    keys: list[str] = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        options = typing.get_args(annotation) or (annotation,)
        if SecretStr in options:
            keys.append(prefix + name)
        for option in options:
            if isinstance(option, type) and issubclass(option, BaseModel):
                keys.extend(_secret_keys(option, f"{prefix}{name}."))
    return keys


def _env_name(key: str) -> str:
    return "DOCQA_" + key.upper().replace(".", "__")


def _secrets_in_file(path: str) -> list[str]:
    """Secrets never come from the YAML file: name each one found there and where it belongs."""
    import yaml

    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    problems: list[str] = []

    def value(key: str) -> Any:
        node: Any = data
        for part in key.split("."):
            if not isinstance(node, dict) or node.get(part) is None:
                return None
            node = node[part]
        return node

    for key in _secret_keys(Settings):
        if value(key) is not None:
            hint = " or auth.hs256_secret_file" if key == "auth.hs256_secret" else ""
            problems.append(
                f"{key}: a secret must not be in the configuration file; set {_env_name(key)}{hint} instead"
            )
    url = value("database.url")
    if isinstance(url, str) and urlsplit(url).password:
        problems.append(
            "database.url: the configuration file must not hold the database password; "
            "set DOCQA_DATABASE_URL (or DOCQA_DATABASE__URL) instead"
        )
    store = value("limits.rate.storage_uri")
    if isinstance(store, str) and urlsplit(store).password:
        problems.append(
            "limits.rate.storage_uri: the configuration file must not hold the store's password; "
            "set DOCQA_LIMITS__RATE__STORAGE_URI instead"
        )
    return problems


class TlsConfig(_Section):
    """TLS of the gRPC port and the HTTP port (one certificate for both); no certificate = plaintext.

    The files are read and checked when the configuration is loaded: a missing or unreadable file, a key that
    does not belong to the certificate, or an encrypted key stops start-up. A renewed certificate is read at the
    next start (``kubectl rollout restart``).
    """

    #: PEM certificate chain of the server, its own certificate first (``tls.crt`` of a kubernetes.io/tls Secret).
    cert_file: Path | None = None
    #: PEM private key of that certificate, unencrypted (``tls.key``).
    key_file: Path | None = None
    #: PEM bundle of the CA(s) that sign client certificates (mutual TLS for content-management plugins).
    client_ca_file: Path | None = None
    #: Who must present a client certificate signed by ``client_ca_file`` to connect at all: ``none``,
    #: ``grpc`` (the gRPC port; HTTP clients are not asked) or ``all`` (gRPC and HTTP). The bearer token
    #: still identifies the caller; the certificate only decides who may connect.
    client_auth: Literal["none", "grpc", "all"] = "none"

    @property
    def enabled(self) -> bool:
        return self.cert_file is not None

    @model_validator(mode="after")
    def _usable(self) -> TlsConfig:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")
        if self.client_ca_file is not None and self.cert_file is None:
            raise ValueError("client_ca_file needs cert_file and key_file: client certificates are asked for over TLS")
        if (self.client_auth == "none") != (self.client_ca_file is None):
            raise ValueError("client_auth grpc or all needs client_ca_file, and client_ca_file needs one of them")
        if self.cert_file is not None and self.key_file is not None:
            _check_tls_files(self.cert_file, self.key_file, self.client_ca_file)
        return self


def _check_tls_files(cert_file: Path, key_file: Path, client_ca_file: Path | None) -> None:
    """The files exist and can be read, hold what they should, the key belongs to the certificate, the
    certificate has not expired, and OpenSSL accepts them as the servers will load them."""
    import datetime as dt
    import ssl

    from cryptography import x509
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_pem_private_key

    def read(key: str, path: Path) -> bytes:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise ValueError(f"{key} {path} does not exist") from None
        except OSError as exc:
            raise ValueError(f"{key} {path} cannot be read ({exc.strerror})") from None

    def certificates(key: str, path: Path) -> list[x509.Certificate]:
        pem = read(key, path)
        try:
            return x509.load_pem_x509_certificates(pem)
        except ValueError:
            raise ValueError(f"{key} {path} holds no PEM certificate") from None

    certificate = certificates("cert_file", cert_file)[0]
    key_pem = read("key_file", key_file)
    try:
        private_key = load_pem_private_key(key_pem, password=None)
    except TypeError:
        raise ValueError(f"key_file {key_file} is encrypted; give the server an unencrypted key") from None
    except (ValueError, UnsupportedAlgorithm):
        raise ValueError(f"key_file {key_file} holds no PEM private key") from None
    spki = (Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    if private_key.public_key().public_bytes(*spki) != certificate.public_key().public_bytes(*spki):
        raise ValueError(f"key_file {key_file} is not the private key of cert_file {cert_file}")
    if certificate.not_valid_after_utc < dt.datetime.now(dt.UTC):
        raise ValueError(f"cert_file {cert_file} expired on {certificate.not_valid_after_utc:%Y-%m-%d %H:%M} UTC")
    if client_ca_file is not None:
        certificates("client_ca_file", client_ca_file)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert_file, key_file, password=lambda: b"")  # never a terminal prompt
        if client_ca_file is not None:
            context.load_verify_locations(cafile=client_ca_file)
    except ssl.SSLError as exc:
        raise ValueError(f"OpenSSL refuses the TLS files ({exc.reason or exc})") from None


class ServerConfig(_Section):
    """Where ``docqa serve`` listens (gRPC and HTTP/GraphQL) and how much it accepts."""

    host: str = "127.0.0.1"
    #: gRPC port; 0 = any free port.
    grpc_port: int = Field(50051, ge=0, le=65535)
    #: HTTP port of the GraphQL app and the health endpoints (and /metrics without metrics_port); 0 = any free port.
    http_port: int = Field(8080, ge=0, le=65535)
    #: Port of the operations listener: /metrics, /healthz, /livez, /readyz in plain HTTP (no caller data, no
    #: client certificate), for probes and Prometheus; http_port then serves no /metrics. None = no such port.
    metrics_port: int | None = Field(None, ge=0, le=65535)
    #: Bearer token that /metrics requires (DOCQA_SERVER__METRICS_TOKEN; a secret, never in the file).
    metrics_token: SecretStr | None = None
    #: TLS of the gRPC and HTTP ports.
    tls: TlsConfig = TlsConfig()
    #: Largest gRPC message (either way) and largest HTTP request body, in bytes.
    max_message_bytes: int = Field(16 * 1024 * 1024, ge=1024, le=1024 * 1024 * 1024)
    #: Threads answering gRPC calls.
    grpc_workers: int = Field(16, ge=1, le=1024)
    #: Threads running GraphQL resolvers (queries, mutations) of one server; concurrent questions beyond
    #: them wait for a thread, and those running at once are what the question batcher can join.
    graphql_workers: int = Field(16, ge=1, le=1024)
    #: Deepest GraphQL query accepted.
    graphql_max_depth: int = Field(8, ge=2, le=64)
    #: Most tokens (a size/complexity bound) in one GraphQL document.
    graphql_max_tokens: int = Field(2000, ge=50, le=100_000)
    #: Most aliases in one GraphQL document (bounds fan-out).
    graphql_max_aliases: int = Field(15, ge=1, le=1000)
    #: Reverse proxies in front of the HTTP port, trusted to name the client (X-Forwarded-For, -Proto): IP
    #: addresses or networks (``10.0.0.0/8``), or ``*`` for every peer (only when nothing else reaches the
    #: port). Empty (the default): the headers are ignored and a caller is known by its connection's address,
    #: which the per-address rate limit keys on.
    forwarded_allow_ips: tuple[str, ...] = ()
    #: SCIM 2.0 provisioning at /scim/v2 on the HTTP port (users and groups from an identity provider); every
    #: request needs a token issued with ``docqa scim token``, so it is closed until an admin issues one.
    scim: bool = True

    @field_validator("forwarded_allow_ips", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        if isinstance(value, str):  # "10.0.0.1, 10.0.0.2", as uvicorn's --forwarded-allow-ips takes it
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("forwarded_allow_ips")
    @classmethod
    def _proxy_addresses(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            if entry == "*":
                continue
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"{entry!r} is not an IP address, a network (10.0.0.0/8) or *") from None
        return value

    @field_validator("metrics_token")
    @classmethod
    def _long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 16:
            raise ValueError("must be at least 16 characters")
        return value

    @model_validator(mode="after")
    def _distinct_ports(self) -> ServerConfig:
        ports = [p for p in (self.grpc_port, self.http_port, self.metrics_port) if p]
        if len(ports) != len(set(ports)):
            raise ValueError("grpc_port, http_port and metrics_port must differ")
        return self


class AuthConfig(_Section):
    """How callers' bearer tokens (JWT) are verified.

    With neither an HS256 secret nor RS256 keys configured, a random HS256
    secret is generated on first run and kept in ``<data_dir>/jwt-secret``
    (mode 0600); ``docqa token`` mints tokens with it. Any other key — RS256
    public keys (PEM or JWKS) or an HS256 secret that is configured, and so
    shared — needs ``issuer`` and ``audience``: without them a token the same
    identity provider issued to another application would be accepted.
    """

    #: HS256 shared secret (prefer ``hs256_secret_file`` or DOCQA_AUTH__HS256_SECRET).
    hs256_secret: SecretStr | None = None
    #: File holding the HS256 secret; None = ``<data_dir>/jwt-secret`` (generated when absent).
    hs256_secret_file: Path | None = None
    #: PEM file with one or more RS256 public keys.
    rs256_public_key_file: Path | None = None
    #: JWKS (JSON) file with RS256 public keys, selected by the token's ``kid``.
    jwks_file: Path | None = None
    #: The ``iss`` every token must carry; required with RS256 keys or a configured HS256 secret.
    issuer: str | None = Field(None, min_length=1, max_length=2048)
    #: The ``aud`` every token must carry (alone or in its list); required as ``issuer`` is.
    audience: str | None = Field(None, min_length=1, max_length=2048)
    #: Longest lifetime (``exp - iat``) of an accepted token, and of one ``docqa token`` mints; tokens need ``iat``.
    max_token_lifetime_s: int = Field(24 * 3600, ge=60, le=31 * 24 * 3600)
    #: ``ignore``: a caller's groups come from the directory only, so removing a member takes effect at once;
    #: ``trust``: the groups in ``groups_claim`` are added (they cannot be revoked before the token expires).
    token_groups: Literal["ignore", "trust"] = "ignore"
    #: Claim holding the caller's group ids (a list of strings), read with ``token_groups: trust``; None = ``groups``.
    groups_claim: str | None = Field(None, min_length=1, max_length=200)
    #: Claim holding the caller's roles (a list of strings).
    admin_claim: str = Field("roles", min_length=1, max_length=200)
    #: The role in ``admin_claim`` that makes a caller an administrator.
    admin_role: str = Field("docqa-admin", min_length=1, max_length=200)
    #: Seconds of clock skew tolerated on ``exp``/``nbf``/``iat``.
    leeway_s: float = Field(30.0, ge=0, le=600)
    #: Lifetime ``docqa token`` gives a token unless told otherwise (left unset: capped by ``max_token_lifetime_s``).
    default_ttl_s: int = Field(3600, ge=1, le=31 * 24 * 3600)
    #: Accept calls without a token (as user ``anonymous``); every such call is logged. Never in production.
    allow_unauthenticated: bool = False

    @field_validator("rs256_public_key_file", "jwks_file")
    @classmethod
    def _key_file_exists(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(f"key file {value} does not exist")
        return value

    @field_validator("issuer", "audience", "groups_claim", "admin_claim", "admin_role")
    @classmethod
    def _printable(cls, value: str | None) -> str | None:
        if value is not None and (not value.isprintable() or value != value.strip()):
            raise ValueError("must be printable text without surrounding spaces")
        return value

    @model_validator(mode="after")
    def _one_hs256_source(self) -> AuthConfig:
        if self.hs256_secret is not None and self.hs256_secret_file is not None:
            raise ValueError("set either hs256_secret or hs256_secret_file, not both")
        if self.hs256_secret is not None and len(self.hs256_secret.get_secret_value()) < 32:
            raise ValueError("hs256_secret must be at least 32 characters")
        return self

    @model_validator(mode="after")
    def _audience_with_shared_keys(self) -> AuthConfig:
        missing = [f"auth.{key}" for key in ("issuer", "audience") if getattr(self, key) is None]
        if missing and self.keys_configured:
            raise ValueError(
                f"{' and '.join(missing)} {'are' if len(missing) > 1 else 'is'} required with RS256 keys "
                "or a configured HS256 secret: "
                "without them a token issued to another application would be accepted "
                f"(set {', '.join(_env_name(k) for k in missing)})"
            )
        if "default_ttl_s" in self.model_fields_set and self.default_ttl_s > self.max_token_lifetime_s:
            raise ValueError(
                f"auth.default_ttl_s ({self.default_ttl_s}) exceeds auth.max_token_lifetime_s "
                f"({self.max_token_lifetime_s})"
            )
        return self

    @property
    def keys_configured(self) -> bool:
        """True unless tokens are verified with the generated data-directory secret (the laptop default)."""
        return any(
            value is not None
            for value in (self.hs256_secret, self.hs256_secret_file, self.rs256_public_key_file, self.jwks_file)
        )

    @property
    def mint_ttl_s(self) -> int:
        """The lifetime ``docqa token`` gives unless told: ``default_ttl_s``, never above the cap."""
        return min(self.default_ttl_s, self.max_token_lifetime_s)

    @property
    def token_groups_claim(self) -> str:
        """The claim holding the groups a token asserts."""
        return self.groups_claim or "groups"


class RateLimit(_Section):
    """A limit per caller: ``burst`` calls at once, ``requests_per_second`` on average (a token bucket refilled
    call by call in memory; in a shared store, ``burst`` calls in any ``burst / requests_per_second`` seconds)."""

    #: Calls per second each caller may make on average; 0 = no limit.
    requests_per_second: float = Field(0.0, ge=0, le=1_000_000)
    #: Calls a caller may make at once (the bucket's size); 0 = requests_per_second rounded up.
    burst: int = Field(0, ge=0, le=1_000_000)

    @model_validator(mode="after")
    def _burst_needs_a_rate(self) -> RateLimit:
        if self.burst and not self.requests_per_second:
            raise ValueError("burst needs requests_per_second (0 turns the limit off)")
        return self

    @property
    def enabled(self) -> bool:
        return self.requests_per_second > 0

    @property
    def capacity(self) -> int:
        """The bucket's size: ``burst``, or the rate rounded up (at least 1)."""
        return self.burst or max(1, math.ceil(self.requests_per_second))


#: Stores a shared rate limit may be kept in (``memory://`` = this process only).
RATE_LIMIT_STORES = ("memory", "redis", "rediss", "redis+unix")


class RateLimits(_Section):
    """Per-caller rate limits of each interface, counted in this process or in a store every replica shares."""

    grpc: RateLimit = RateLimit()
    graphql: RateLimit = RateLimit()
    #: Callers remembered per interface (bounds memory); buckets idle long enough to be full go first.
    max_callers: int = Field(100_000, ge=1, le=10_000_000)
    #: Where calls are counted: ``memory://`` (each replica its own token buckets, so N replicas admit N times
    #: the rate) or a Redis every replica shares (``redis://[:password@]host:6379/0``, ``rediss://``,
    #: ``redis+unix://``), where each limit is ``burst`` calls in any ``burst / requests_per_second`` seconds.
    #: It may hold a password: set it with DOCQA_LIMITS__RATE__STORAGE_URI, not in the file.
    storage_uri: str = Field("memory://", repr=False, max_length=2048)
    #: Prefix of the shared store's keys: releases sharing one Redis keep their budgets apart.
    key_prefix: str = Field("docqa", pattern=r"^[A-Za-z0-9_.:-]{1,64}$")
    #: When the shared store cannot be reached: ``local`` = this replica's own buckets decide (the limit holds
    #: per replica, as with memory://); ``closed`` = every call is refused (gRPC RESOURCE_EXHAUSTED, GraphQL HTTP
    #: 503) with a retry hint until it answers.
    on_store_error: Literal["local", "closed"] = "local"
    #: Seconds a call waits for the shared store (to connect, then to answer) before it counts as unreachable.
    store_timeout_s: float = Field(0.25, gt=0, le=10)
    #: Seconds after a failure before the store is asked again; meanwhile ``on_store_error`` decides at once.
    store_retry_s: float = Field(5.0, ge=0, le=300)

    @property
    def shared(self) -> bool:
        """True when the limits are counted in a store every replica shares."""
        return not self.storage_uri.startswith("memory://")

    @model_validator(mode="after")
    def _a_store_that_can_keep_them(self) -> RateLimits:
        scheme = urlsplit(self.storage_uri).scheme
        if scheme not in RATE_LIMIT_STORES or (scheme == "memory" and self.storage_uri != "memory://"):
            raise ValueError(f"storage_uri: use memory:// or {', '.join(s + '://...' for s in RATE_LIMIT_STORES[1:])}")
        for name, limit in (("grpc", self.grpc), ("graphql", self.graphql)):
            window = limit.capacity / limit.requests_per_second if limit.enabled else 1.0
            if self.shared and (window < 1 or abs(window - round(window)) > 1e-6 * window):
                raise ValueError(
                    f"{name}: a shared store counts burst calls in any burst / requests_per_second seconds, which "
                    f"must be whole seconds (here {limit.capacity} / {limit.requests_per_second:g} = {window:g})"
                    + _whole_window_burst(limit.requests_per_second, window)
                )
        return self


def _whole_window_burst(rate: float, window: float) -> str:
    """A hint: the smallest burst at least the asked one whose window (burst / rate) is whole seconds."""
    for seconds in range(max(1, math.ceil(window)), max(1, math.ceil(window)) + 1000):
        if round(rate * seconds) >= 1 and abs(rate * seconds - round(rate * seconds)) < 1e-6:
            return f"; e.g. burst {round(rate * seconds)} ({seconds} s)"
    return ""


class LimitsConfig(_Section):
    """How much work a server takes on at once, and how fast each caller may call."""

    #: Streaming answers (gRPC ``Stream*`` calls) generated at once; one more is refused RESOURCE_EXHAUSTED.
    max_streams: int = Field(8, ge=1, le=1024)
    rate: RateLimits = RateLimits()


Settings.model_rebuild()
