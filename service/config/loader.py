"""``load_settings``: the settings built and validated, and secrets refused in the YAML file."""

from __future__ import annotations

import os
import typing
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, SecretStr, ValidationError

from acl.errors import ConfigurationError
from service.config.environment import _YAML_FILE, _env_name
from service.config.settings import Settings


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
