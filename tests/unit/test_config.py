from __future__ import annotations

from pathlib import Path

import pytest

from acl.errors import ConfigurationError
from service.config import Settings, load_settings

ROOT = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("clean_env")


def test_shipped_default_file_equals_built_in_defaults() -> None:
    assert load_settings(ROOT / "config" / "default.yaml") == Settings()


def test_shipped_default_file_names_every_key_with_its_built_in_value() -> None:
    import yaml

    shipped = yaml.safe_load((ROOT / "config" / "default.yaml").read_text(encoding="utf-8"))
    built_in = Settings().model_dump(mode="json", exclude={"data_dir"})
    # data_dir defaults to a per-user folder, so the file documents it in a comment instead.
    assert shipped == built_in


def test_environment_wins_over_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("embedding:\n  batch_size: 8\n")
    monkeypatch.setenv("DOCQA_EMBEDDING__BATCH_SIZE", "16")
    assert load_settings(config).embedding.batch_size == 16


@pytest.mark.parametrize(
    ("yaml_text", "key"),
    [
        ("store_defaults:\n  level: 2\n", "store_defaults.level"),
        ("store_defaults:\n  min_threshold: 0.9\n  max_threshold: 0.1\n", "store_defaults"),
        ("embedding:\n  batch_size: zero\n", "embedding.batch_size"),
        ("index:\n  backend: elastic\n", "index.backend"),
        ("embedding:\n  backend: tensorrt\n", "embedding.backend"),
        ("indexing:\n  prefetch_batches: -1\n", "indexing.prefetch_batches"),
        ("unknown_key: 1\n", "unknown_key"),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, yaml_text: str, key: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml_text)
    with pytest.raises(ConfigurationError, match=key.replace(".", r"\.")):
        load_settings(config)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="does not exist"):
        load_settings(tmp_path / "absent.yaml")


def test_malformed_yaml(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("embedding: [unclosed\n")
    with pytest.raises(ConfigurationError):
        load_settings(config)
