"""A store's retrieval settings: fusion, lexical weight, source base URL — the rules, the admin, the config."""

from __future__ import annotations

from pathlib import Path

import pytest

from acl.errors import ConfigurationError, InvalidArgument
from service.access.admin import Admin
from service.config import StoreDefaults, load_settings
from service.domain.retrieval_settings import (
    FUSION_METHODS,
    MAX_SOURCE_BASE_URL_CHARS,
    RetrievalDefaults,
    validate_fusion,
    validate_lexical_weight,
    validate_source_base_url,
)
from service.domain.store import Store
from service.persistence.sql_settings import SqlSettingsRepository


@pytest.mark.parametrize("method", FUSION_METHODS)
def test_each_fusion_method_is_kept(method: str) -> None:
    assert validate_fusion(method) == method


@pytest.mark.parametrize("method", ["RRF", "bm25", "", None, 1, "rrf "])
def test_an_unknown_fusion_method_is_refused(method: object) -> None:
    with pytest.raises(InvalidArgument, match="fusion must be one of rrf, weighted, dense, lexical"):
        validate_fusion(method)


@pytest.mark.parametrize(("value", "expected"), [(0, 0.0), (1, 1.0), (0.3, 0.3), ("0.25", 0.25), ("1", 1.0)])
def test_a_lexical_weight_in_the_unit_interval_is_kept(value: object, expected: float) -> None:
    assert validate_lexical_weight(value) == expected


@pytest.mark.parametrize("value", [-0.01, 1.01, float("nan"), float("inf"), "nan", "-inf", "x", "", True, None, [0.3]])
def test_a_lexical_weight_outside_it_is_refused(value: object) -> None:
    with pytest.raises(InvalidArgument, match="lexical_weight must be"):
        validate_lexical_weight(value)


@pytest.mark.parametrize(
    "url",
    [
        "https://intranet.example/docs/",
        "http://intranet/docs",
        "https://docs.example.com:8443/base/path/",
        "https://例え.jp/ドキュメント/",
        "https://x.example",
    ],
)
def test_a_clean_base_url_is_kept(url: str) -> None:
    assert validate_source_base_url(url) == url


@pytest.mark.parametrize("value", [None, ""])
def test_none_or_empty_means_no_base_url(value: object) -> None:
    assert validate_source_base_url(value) is None


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("ftp://files.example/docs", "must be an https:// or http:// URL"),
        ("file:///srv/docs", "must be an https:// or http:// URL"),
        ("javascript:alert(1)", "must be an https:// or http:// URL"),
        ("intranet/docs", "must be an https:// or http:// URL"),
        ("//intranet/docs", "must be an https:// or http:// URL"),
        ("https:/docs", "must be an https:// or http:// URL"),
        ("https:///docs", "must name a host"),
        ("https://user:secret@intranet/docs", "user name or password"),
        ("https://user@intranet/docs", "user name or password"),
        ("https://intranet/docs?x=1", "must not have a query"),
        ("https://intranet/docs?", "must not have a query"),
        ("https://intranet/docs#top", "must not have a fragment"),
        ("https://intranet/docs#", "must not have a fragment"),
        ("https://intranet/my docs", "spaces or control characters"),
        ("https://intranet/\x00", "spaces or control characters"),
        ("https://intranet/\u202edocs", "spaces or control characters"),
        (" https://intranet/", "spaces or control characters"),
        ("https://[::1/docs", "not a valid URL"),
        ("https://intranet:99999/docs", "not a valid URL"),
        ("https://intranet/" + "d" * MAX_SOURCE_BASE_URL_CHARS, "longer than 2000 characters"),
        (42, "must be a string"),
    ],
)
def test_a_base_url_that_is_not_a_clean_link_is_refused(url: object, says: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        validate_source_base_url(url)
    assert says in info.value.message


@pytest.fixture
def admin() -> Admin:
    repository = SqlSettingsRepository.from_url("sqlite://", defaults=RetrievalDefaults("weighted", 0.4))
    admin = Admin(repository)
    admin.ensure_store("s", "fake", StoreDefaults(fusion="lexical", lexical_weight=0.9))
    return admin


def test_a_new_store_starts_with_the_configured_defaults(admin: Admin) -> None:
    store = admin.store("s")
    assert (store.fusion, store.lexical_weight, store.source_base_url) == ("lexical", 0.9, None)


def test_the_admin_sets_and_clears_each_setting(admin: Admin) -> None:
    store = admin.update_settings("s", fusion="rrf", lexical_weight="0.2", source_base_url="https://intranet/docs/")
    assert (store.fusion, store.lexical_weight, store.source_base_url) == ("rrf", 0.2, "https://intranet/docs/")
    assert admin.update_settings("s", source_base_url=None).source_base_url == "https://intranet/docs/"  # absent
    assert admin.update_settings("s", source_base_url="").source_base_url is None  # cleared
    assert admin.store("s").fusion == "rrf"


@pytest.mark.parametrize(
    "changes",
    [
        {"fusion": "hybrid"},
        {"lexical_weight": 2},
        {"lexical_weight": float("nan")},
        {"source_base_url": "https://u:p@intranet/"},
        {"level": 0.9, "fusion": "bm25"},  # one bad value: nothing at all changes
        {"source_base_url": "https://intranet/", "lexical_weight": -1},
    ],
)
def test_a_bad_value_changes_nothing(admin: Admin, changes: dict[str, object]) -> None:
    before = admin.store("s")
    with pytest.raises(InvalidArgument):
        admin.update_settings("s", **changes)
    assert admin.store("s") == before


def test_a_store_dataclass_defaults_to_rrf_and_no_base_url() -> None:
    store = Store("s", "S", "fake", 0.5, 0.1, 0.6, 8)
    assert (store.fusion, store.lexical_weight, store.source_base_url) == ("rrf", 0.3, None)


@pytest.mark.parametrize(
    ("yaml_text", "key"),
    [
        ("store_defaults:\n  fusion: bm25\n", "store_defaults.fusion"),
        ("store_defaults:\n  lexical_weight: 1.5\n", "store_defaults.lexical_weight"),
        ("store_defaults:\n  lexical_weight: .nan\n", "store_defaults.lexical_weight"),
    ],
)
def test_bad_configured_defaults_name_the_key(tmp_path: Path, yaml_text: str, key: str) -> None:
    config = tmp_path / "docqa.yaml"
    config.write_text(yaml_text)
    with pytest.raises(ConfigurationError, match=key.replace(".", r"\.")):
        load_settings(config)


def test_configured_defaults_reach_the_repository(tmp_path: Path) -> None:
    config = tmp_path / "docqa.yaml"
    config.write_text("store_defaults:\n  fusion: weighted\n  lexical_weight: 0.2\n")
    assert load_settings(config).store_defaults.retrieval() == RetrievalDefaults("weighted", 0.2)
