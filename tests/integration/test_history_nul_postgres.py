"""A question holding NUL is INVALID_ARGUMENT before any work. Without that check the whole query would run (the
language model called) and the history write would then fail on PostgreSQL, which refuses NUL in text."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from acl.checker import AccessChecker
from acl.errors import DocQAError, InvalidArgument
from acl.model import Acl
from service.domain.queries import Caller, VectorQuery
from service.history.conversations import Conversations
from service.history.recheck import Recheck
from service.history.rewrite import OfflineRewriter
from service.persistence.sql_history import SqlHistoryRepository
from service.persistence.sql_history_versions import SqlDocumentVersions
from service.persistence.sql_settings import SqlSettingsRepository
from service.query.engine import QueryEngine
from tests.unit.engine_world import STORE, make_world

ADMIN_URL = os.environ.get("DOCQA_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


@pytest.fixture
def pg_history() -> Iterator[SqlHistoryRepository]:
    admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"review18_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
    except OperationalError:
        admin.dispose()
        pytest.skip("no PostgreSQL")
    settings = SqlSettingsRepository.from_url(admin.url.set(database=name).render_as_string(hide_password=False))
    try:
        yield SqlHistoryRepository(settings.engine)
    finally:
        settings.close()
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_nul_in_question_is_a_typed_error_before_any_work(pg_history: SqlHistoryRepository) -> None:
    world = make_world()
    world.add("vacation.md", ["Employees receive 25 days of paid vacation per year."], Acl.of(["group:everyone"]))
    conversations = Conversations(
        pg_history,
        Recheck(world.repo, AccessChecker(world.repo), SqlDocumentVersions(world.repo.engine)),
        OfflineRewriter(),
    )
    engine = QueryEngine(
        repository=world.repo,
        index=world.index,
        embedder_for=lambda _: world.embedder,
        generator=world.generator,
        conversations=conversations,
    )
    calls_before = len(world.generator.prompts)
    try:
        engine.ask(Caller("alice"), VectorQuery(STORE, "paid vacation\x00 days per year?", 0.0))
    except InvalidArgument:
        assert len(world.generator.prompts) == calls_before  # refused before the model was called
        return
    except DocQAError:
        raise
    except Exception as exc:
        pytest.fail(
            f"untyped {type(exc).__name__} after {len(world.generator.prompts) - calls_before} model call(s): {exc}"
        )
    pytest.fail("a NUL question was answered and recorded")
