"""The root of the configuration: ``Settings``, one field per section, and the checks across sections."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from service.config.auth import AuthConfig
from service.config.base import default_data_dir
from service.config.directory import DirectoryConfig
from service.config.embedding import EmbeddingConfig, IndexingConfig, QueryBatchingConfig
from service.config.environment import _YAML_FILE, _DatabaseUrlAlias
from service.config.generation import GeneratorConfig, RerankConfig
from service.config.limits import LimitsConfig
from service.config.query import AnalysisConfig, HistoryConfig, QueryConfig, StoreDefaults
from service.config.server import ServerConfig
from service.config.storage import DatabaseConfig, IndexConfig
from service.config.web import LOOPBACK_HOSTS, WebConfig


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
    # The gRPC and GraphQL servers and who may call them (each default built when a Settings is).
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


Settings.model_rebuild()
