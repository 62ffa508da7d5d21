"""Where DocQA keeps its data: the settings database and the index (embedded or OpenSearch)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator

from service.config.base import _Section


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
