"""Typed configuration: built-in defaults < YAML file < environment variables.

Every value is validated when the configuration is loaded; a bad one stops
start-up with a ``ConfigurationError`` naming the key. Environment variables
use the prefix ``DOCQA_`` and ``__`` between nested keys
(``DOCQA_EMBEDDING__MODEL``); ``DOCQA_CONFIG`` names the YAML file and
``DOCQA_DATA_DIR`` the data directory.
"""

from __future__ import annotations

import math
import os
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from acl.errors import ConfigurationError

_YAML_FILE: ContextVar[str | None] = ContextVar("docqa_yaml_file", default=None)


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "docqa"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatabaseConfig(_Section):
    #: SQLAlchemy URL; None = SQLite file ``settings.sqlite`` in the data directory.
    url: str | None = None


class IndexConfig(_Section):
    backend: Literal["embedded"] = "embedded"


class EmbeddingConfig(_Section):
    #: The packaged all-MiniLM-L6-v2, a model folder, or a cached model name.
    model: str = "all-MiniLM-L6-v2"
    batch_size: int = Field(32, ge=1, le=4096)
    device: str | None = None


class GeneratorConfig(_Section):
    backend: Literal["extractive"] = "extractive"
    #: Tokens of context the generator accepts; a DocumentQuery sends the whole
    #: document only when it fits.
    context_tokens: int = Field(8192, ge=256)
    #: Sentences the extractive answerer quotes.
    max_sentences: int = Field(3, ge=1, le=20)


class StoreDefaults(_Section):
    """Settings a new store starts with; an admin changes them per store."""

    level: float = Field(0.5, ge=0.0, le=1.0)
    #: Cosine similarity that level 0 maps to, for the packaged MiniLM.
    min_threshold: float = Field(0.10, ge=-1.0, le=1.0)
    #: Cosine similarity that level 1 maps to.
    max_threshold: float = Field(0.60, ge=-1.0, le=1.0)
    max_chunks: int = Field(8, ge=1, le=100)

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

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
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
        return Settings(**overrides)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigurationError(f"invalid configuration: {problems}") from None
    except (OSError, ValueError, yaml.YAMLError) as exc:  # unreadable or malformed YAML
        raise ConfigurationError(f"cannot read configuration {path}: {exc}") from None
    finally:
        _YAML_FILE.reset(token)
