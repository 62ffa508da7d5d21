"""Typed configuration: built-in defaults < YAML file < environment variables.

Every value is validated when the configuration is loaded; a bad one stops
start-up with a ``ConfigurationError`` naming the key. Environment variables
use the prefix ``DOCQA_`` and ``__`` between nested keys
(``DOCQA_EMBEDDING__MODEL``); ``DOCQA_CONFIG`` names the YAML file and
``DOCQA_DATA_DIR`` the data directory; ``DOCQA_DATABASE_URL`` is accepted for
``database.url``. Secrets (keys typed ``SecretStr``, a password in the database
URL) come only from the environment or files, never from the YAML file.

One module per section or group of sections (``storage``, ``embedding``, ``generation``, ``query``,
``directory``, ``web``, ``server``, ``auth``, ``limits``), the root model in ``settings``, the sources in
``environment`` and ``load_settings`` in ``loader``; every public name is imported from here.
"""

from __future__ import annotations

from service.config.auth import AuthConfig
from service.config.base import default_data_dir
from service.config.directory import DirectoryConfig, LdapConfig
from service.config.embedding import EmbeddingConfig, IndexingConfig, QueryBatchingConfig
from service.config.generation import GeneratorConfig, RerankConfig, WatsonxConfig
from service.config.limits import RATE_LIMIT_STORES, LimitsConfig, RateLimit, RateLimits
from service.config.loader import load_settings
from service.config.query import AnalysisConfig, HistoryConfig, QueryConfig, StoreDefaults
from service.config.server import ServerConfig, TlsConfig
from service.config.settings import Settings
from service.config.storage import AwsSigningConfig, DatabaseConfig, IndexConfig, OpenSearchConfig
from service.config.web import LOOPBACK_HOSTS, OidcLogin, WebConfig

__all__ = [
    "LOOPBACK_HOSTS",
    "RATE_LIMIT_STORES",
    "AnalysisConfig",
    "AuthConfig",
    "AwsSigningConfig",
    "DatabaseConfig",
    "DirectoryConfig",
    "EmbeddingConfig",
    "GeneratorConfig",
    "HistoryConfig",
    "IndexConfig",
    "IndexingConfig",
    "LdapConfig",
    "LimitsConfig",
    "OidcLogin",
    "OpenSearchConfig",
    "QueryBatchingConfig",
    "QueryConfig",
    "RateLimit",
    "RateLimits",
    "RerankConfig",
    "ServerConfig",
    "Settings",
    "StoreDefaults",
    "TlsConfig",
    "WatsonxConfig",
    "WebConfig",
    "default_data_dir",
    "load_settings",
]
