"""Production configuration: the example file, DOCQA_DATABASE_URL, and secrets that never come from YAML."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from acl.errors import ConfigurationError
from service.config import load_settings

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "config" / "production.example.yaml"


pytestmark = pytest.mark.usefixtures("clean_env")


def _production_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    key = tmp_path / "public.pem"
    key.write_text("-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n")
    monkeypatch.setenv("DOCQA_DATABASE_URL", "postgresql+psycopg://docqa:s3cret@postgres:5432/docqa")
    monkeypatch.setenv("DOCQA_GENERATOR__WATSONX__API_KEY", "wx-key")
    monkeypatch.setenv("DOCQA_INDEX__OPENSEARCH__USERNAME", "docqa")
    monkeypatch.setenv("DOCQA_INDEX__OPENSEARCH__PASSWORD", "os-pass")
    monkeypatch.setenv("DOCQA_AUTH__RS256_PUBLIC_KEY_FILE", str(key))


def test_production_example_loads_with_secrets_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _production_env(monkeypatch, tmp_path)
    settings = load_settings(EXAMPLE)
    assert settings.database_url.startswith("postgresql+psycopg://")
    assert settings.index.backend == "opensearch"
    assert settings.generator.backend == "watsonx"
    assert settings.server.host == "0.0.0.0"
    assert settings.limits.rate.grpc.enabled and settings.limits.rate.graphql.enabled  # per-caller rate limits on
    assert "s3cret" not in repr(settings) and "wx-key" not in repr(settings)


def test_production_example_without_its_secrets_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"one of watsonx\.api_key.*auth\.rs256_public_key_file"):
        load_settings(EXAMPLE)


def test_database_url_alias_and_the_nested_name_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCQA_DATABASE_URL", "postgresql+psycopg://a@db/one")
    assert load_settings().database.url == "postgresql+psycopg://a@db/one"
    monkeypatch.setenv("DOCQA_DATABASE__URL", "postgresql+psycopg://a@db/two")
    assert load_settings().database.url == "postgresql+psycopg://a@db/two"


@pytest.mark.parametrize(
    ("yaml_text", "key", "env"),
    [
        ("generator:\n  watsonx:\n    api_key: k\n", "generator.watsonx.api_key", "DOCQA_GENERATOR__WATSONX__API_KEY"),
        ("generator:\n  watsonx:\n    token: t\n", "generator.watsonx.token", "DOCQA_GENERATOR__WATSONX__TOKEN"),
        (
            "index:\n  opensearch:\n    password: p\n    username: u\n",
            "index.opensearch.password",
            "DOCQA_INDEX__OPENSEARCH__PASSWORD",
        ),
        ("auth:\n  hs256_secret: " + "x" * 40 + "\n", "auth.hs256_secret", "DOCQA_AUTH__HS256_SECRET"),
        ("database:\n  url: postgresql+psycopg://docqa:pw@db/docqa\n", "database.url", "DOCQA_DATABASE_URL"),
    ],
)
def test_a_secret_in_the_yaml_file_stops_start_up(tmp_path: Path, yaml_text: str, key: str, env: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml_text)
    with pytest.raises(ConfigurationError, match=re.escape(key) + r": .*set " + env) as caught:
        load_settings(config)
    assert "pw" not in str(caught.value) and "xxxx" not in str(caught.value)


def test_database_url_without_password_may_be_in_the_file(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("database:\n  url: postgresql+psycopg://docqa@db/docqa\n")
    assert load_settings(config).database.url == "postgresql+psycopg://docqa@db/docqa"


def test_production_refuses_to_start_without_issuer_and_audience(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _production_env(monkeypatch, tmp_path)
    text = EXAMPLE.read_text()
    config = tmp_path / "no-aud.yaml"
    config.write_text(
        "\n".join(line for line in text.splitlines() if not line.strip().startswith(("issuer:", "audience:")))
    )
    with pytest.raises(ConfigurationError, match=r"auth\.issuer and auth\.audience are required with RS256 keys"):
        load_settings(config)
    assert load_settings(EXAMPLE).auth.token_groups == "ignore"
