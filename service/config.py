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

from acl.errors import ConfigurationError
from service.domain.limits import MAX_STORE_CHUNKS
from service.domain.links import AllowedPrefix

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


class OpenSearchConfig(_Section):
    """Where and how the OpenSearch index backend keeps each store's chunks."""

    #: ``http(s)://host:port`` of the cluster (credentials go in the keys below, not in the URL).
    url: str | None = None
    username: SecretStr | None = None
    password: SecretStr | None = None
    #: Sent as ``Authorization: ApiKey <api_key>``; instead of username/password.
    api_key: SecretStr | None = None
    #: CA bundle (PEM) that signed the cluster's certificate; None = the system's.
    ca_certs: Path | None = None
    #: Check the server's TLS certificate. Turn off only for a throw-away local cluster.
    verify: bool = True
    #: HNSW engine of the ``knn_vector`` field: both filter inside the ANN search.
    engine: Literal["faiss", "lucene"] = "lucene"
    m: int = Field(16, ge=2, le=100)
    ef_construction: int = Field(128, ge=2, le=4096)
    ef_search: int = Field(100, ge=1, le=10_000)
    #: Each store's index is ``<index_prefix><store id>``.
    index_prefix: str = Field("docqa-", pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$")
    timeout_s: float = Field(10.0, gt=0, le=600)
    #: Retries after the first attempt for connection errors, timeouts, 429 and 5xx.
    max_retries: int = Field(3, ge=0, le=10)
    #: First backoff between retries; it doubles each time (at most 8 s).
    backoff_s: float = Field(0.5, ge=0, le=60)
    #: ``wait_for``: writes are searchable when the call returns; ``true`` forces a refresh; ``false`` neither.
    refresh: Literal["wait_for", "true", "false"] = "wait_for"
    #: Chunks per bulk request.
    bulk_batch: int = Field(500, ge=1, le=10_000)

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
        return self


class IndexConfig(_Section):
    #: ``embedded``: in-process, under the data directory; ``opensearch``: the cluster in ``opensearch.url``.
    backend: Literal["embedded", "opensearch"] = "embedded"
    opensearch: OpenSearchConfig = OpenSearchConfig()

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


class GeneratorConfig(_Section):
    #: ``extractive`` (offline, the default) or ``watsonx``.
    backend: Literal["extractive", "watsonx"] = "extractive"
    #: Tokens of context the generator accepts; a DocumentQuery sends the whole
    #: document only when it fits.
    context_tokens: int = Field(8192, ge=256)
    #: Sentences the extractive answerer quotes.
    max_sentences: int = Field(3, ge=1, le=20)
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
        problems: list[str] = []
        if not w.url:
            problems.append("watsonx.url is required")
        elif not w.url.startswith("https://"):
            problems.append("watsonx.url must start with https://")
        if not (w.api_key or w.token or w.password):
            problems.append("one of watsonx.api_key, watsonx.token or watsonx.password is required")
        if w.password and not w.username:
            problems.append("watsonx.username is required with watsonx.password")
        if bool(w.project_id) == bool(w.space_id):
            problems.append("exactly one of watsonx.project_id or watsonx.space_id is required")
        if not w.model_id:
            problems.append("watsonx.model_id is required")
        if w.ca_bundle is not None and not w.verify:
            problems.append("watsonx.ca_bundle is set but watsonx.verify is false")
        if w.ca_bundle is not None and not w.ca_bundle.exists():
            problems.append(f"watsonx.ca_bundle {w.ca_bundle} does not exist")
        if w.max_new_tokens >= w.context_window:
            problems.append("watsonx.max_new_tokens must be smaller than watsonx.context_window")
        if problems:
            raise ValueError("with backend watsonx: " + "; ".join(problems))
        return self


class StoreDefaults(_Section):
    """Settings a new store starts with; an admin changes them per store."""

    level: float = Field(0.5, ge=0.0, le=1.0)
    #: Cosine similarity that level 0 maps to, for the packaged MiniLM.
    min_threshold: float = Field(0.10, ge=-1.0, le=1.0)
    #: Cosine similarity that level 1 maps to.
    max_threshold: float = Field(0.60, ge=-1.0, le=1.0)
    max_chunks: int = Field(8, ge=1, le=MAX_STORE_CHUNKS)

    @field_validator("level", "min_threshold", "max_threshold")
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


class QueryConfig(_Section):
    #: Longest question accepted, in characters.
    max_question_chars: int = Field(4000, ge=1, le=100_000)
    #: Largest k a search may ask for.
    max_k: int = Field(100, ge=1, le=1000)
    #: Most documents a MultiDocumentQuery may name.
    max_documents: int = Field(1000, ge=1)


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
    generator: GeneratorConfig = GeneratorConfig()
    store_defaults: StoreDefaults = StoreDefaults()
    query: QueryConfig = QueryConfig()
    # The gRPC and GraphQL servers and who may call them (sections defined at the end of this module).
    server: ServerConfig = Field(default_factory=lambda: ServerConfig())
    auth: AuthConfig = Field(default_factory=lambda: AuthConfig())

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
    return problems


class ServerConfig(_Section):
    """Where ``docqa serve`` listens (gRPC and HTTP/GraphQL) and how much it accepts."""

    host: str = "127.0.0.1"
    #: gRPC port; 0 = any free port.
    grpc_port: int = Field(50051, ge=0, le=65535)
    #: HTTP port of the GraphQL app, health endpoints and /metrics; 0 = any free port.
    http_port: int = Field(8080, ge=0, le=65535)
    #: Largest gRPC message (either way) and largest HTTP request body, in bytes.
    max_message_bytes: int = Field(16 * 1024 * 1024, ge=1024, le=1024 * 1024 * 1024)
    #: Threads answering gRPC calls.
    grpc_workers: int = Field(16, ge=1, le=1024)
    #: Deepest GraphQL query accepted.
    graphql_max_depth: int = Field(8, ge=2, le=64)
    #: Most tokens (a size/complexity bound) in one GraphQL document.
    graphql_max_tokens: int = Field(2000, ge=50, le=100_000)
    #: Most aliases in one GraphQL document (bounds fan-out).
    graphql_max_aliases: int = Field(15, ge=1, le=1000)


class AuthConfig(_Section):
    """How callers' bearer tokens (JWT) are verified.

    With neither an HS256 secret nor RS256 keys configured, a random HS256
    secret is generated on first run and kept in ``<data_dir>/jwt-secret``
    (mode 0600); ``docqa token`` mints tokens with it.
    """

    #: HS256 shared secret (prefer ``hs256_secret_file`` or DOCQA_AUTH__HS256_SECRET).
    hs256_secret: SecretStr | None = None
    #: File holding the HS256 secret; None = ``<data_dir>/jwt-secret`` (generated when absent).
    hs256_secret_file: Path | None = None
    #: PEM file with one or more RS256 public keys.
    rs256_public_key_file: Path | None = None
    #: JWKS (JSON) file with RS256 public keys, selected by the token's ``kid``.
    jwks_file: Path | None = None
    #: Required ``iss`` when set.
    issuer: str | None = None
    #: Required ``aud`` when set.
    audience: str | None = None
    #: Claim whose list of group ids is added to the caller's groups; None = groups come only from the directory.
    groups_claim: str | None = None
    #: Claim holding the caller's roles (a string or a list of strings).
    admin_claim: str = "roles"
    #: The role in ``admin_claim`` that makes a caller an administrator.
    admin_role: str = "docqa-admin"
    #: Seconds of clock skew tolerated on ``exp``/``nbf``/``iat``.
    leeway_s: float = Field(30.0, ge=0, le=600)
    #: Lifetime ``docqa token`` gives a token unless told otherwise.
    default_ttl_s: int = Field(3600, ge=1, le=366 * 24 * 3600)
    #: Accept calls without a token (as user ``anonymous``); every such call is logged. Never in production.
    allow_unauthenticated: bool = False

    @field_validator("rs256_public_key_file", "jwks_file")
    @classmethod
    def _key_file_exists(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(f"key file {value} does not exist")
        return value

    @model_validator(mode="after")
    def _one_hs256_source(self) -> AuthConfig:
        if self.hs256_secret is not None and self.hs256_secret_file is not None:
            raise ValueError("set either hs256_secret or hs256_secret_file, not both")
        if self.hs256_secret is not None and len(self.hs256_secret.get_secret_value()) < 32:
            raise ValueError("hs256_secret must be at least 32 characters")
        return self


Settings.model_rebuild()
