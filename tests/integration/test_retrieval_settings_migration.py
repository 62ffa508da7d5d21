"""Migration 0004 (a store's fusion, lexical weight and source base URL) on SQLite and on PostgreSQL.

A store made before it reads NULL as the configured default; values an admin sets are kept; a downgrade
removes the columns and leaves the store as it was.
"""

from __future__ import annotations

from sqlalchemy import inspect, text

from service.domain.retrieval_settings import RetrievalDefaults
from service.persistence import schema
from service.persistence.sql_settings import SqlSettingsRepository, make_engine
from tests.integration.test_postgres_repository import database_url, postgres_url

__all__ = ["database_url", "postgres_url"]  # fixtures: each test on SQLite and on its own PostgreSQL database

OLD_STORE = (
    "INSERT INTO stores (id, name, embedding_model, level, min_threshold, max_threshold, max_chunks, llm_model_id,"
    " prompt_template) VALUES ('old', 'Old', 'fake', 0.5, 0.1, 0.6, 4, 'x', 'Q {context} {question}')"
)


def test_a_store_made_before_0004_reads_the_configured_defaults(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        schema.upgrade(engine, "0003")
        with engine.begin() as connection:
            connection.execute(text(OLD_STORE))
        assert schema.upgrade(engine) == schema.head_revision()
        columns = {c["name"]: c for c in inspect(engine).get_columns("stores")}
        assert all(columns[name]["nullable"] for name in ("fusion", "lexical_weight", "source_base_url"))
    finally:
        engine.dispose()
    configured = SqlSettingsRepository.from_url(database_url, defaults=RetrievalDefaults("weighted", 0.6))
    try:
        store = configured.get_store("old")
        assert store is not None
        assert (store.fusion, store.lexical_weight, store.source_base_url) == ("weighted", 0.6, None)
        assert (store.level, store.max_chunks, store.prompt_template) == (0.5, 4, "Q {context} {question}")
        changed = configured.update_store("old", fusion="dense", source_base_url="https://intranet.example/docs/")
        assert (changed.fusion, changed.lexical_weight) == ("dense", 0.6)
    finally:
        configured.close()
    plain = SqlSettingsRepository.from_url(database_url)  # the built-in defaults
    try:
        store = plain.get_store("old")
        assert store is not None
        assert (store.fusion, store.lexical_weight) == ("dense", 0.3)  # set: kept; not set: the default
        assert store.source_base_url == "https://intranet.example/docs/"
        assert [s.fusion for s in plain.list_stores()] == ["dense"]
    finally:
        plain.close()


def test_0004_downgrades_and_upgrades_again(database_url: str) -> None:
    from alembic import command

    engine = make_engine(database_url)
    try:
        schema.upgrade(engine)
        with engine.begin() as connection:
            connection.execute(text(OLD_STORE))
            connection.execute(text("UPDATE stores SET fusion = 'lexical', lexical_weight = 1.0"))
        with engine.begin() as connection:
            command.downgrade(schema._config(connection), "0003")
        assert schema.current_revision(engine) == "0003"
        assert "fusion" not in {c["name"] for c in inspect(engine).get_columns("stores")}
        with engine.connect() as connection:
            assert connection.execute(text("SELECT id, max_chunks FROM stores")).all() == [("old", 4)]
        assert schema.upgrade(engine) == schema.head_revision()
    finally:
        engine.dispose()
    repository = SqlSettingsRepository.from_url(database_url)
    try:
        store = repository.get_store("old")
        assert store is not None and (store.fusion, store.lexical_weight) == ("rrf", 0.3)
    finally:
        repository.close()
