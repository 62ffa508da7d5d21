"""The history port's one contract, run against SQLite and PostgreSQL (127.0.0.1:5432, a database per test).

Without a reachable PostgreSQL server its cases skip, saying why.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from service.domain.history import CitedSource, Feedback, HistoryEntry, Position
from service.persistence.sql_history import SqlHistoryRepository
from service.persistence.sql_settings import SqlSettingsRepository

pytestmark = pytest.mark.integration

ADMIN_URL = os.environ.get("DOCQA_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
T0 = datetime(2027, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgresql"])
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlHistoryRepository]:
    if request.param == "sqlite":
        settings = SqlSettingsRepository.from_url(f"sqlite:///{tmp_path / 'settings.sqlite'}")
        yield SqlHistoryRepository(settings.engine)
        settings.close()
        return
    admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"docqa_history_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
    except OperationalError as exc:
        admin.dispose()
        pytest.skip(f"PostgreSQL is not reachable at {ADMIN_URL} ({exc.orig.__class__.__name__})")
    settings = SqlSettingsRepository.from_url(admin.url.set(database=name).render_as_string(hide_password=False))
    try:
        yield SqlHistoryRepository(settings.engine)
    finally:
        settings.close()
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def entry(
    user: str = "alice",
    *,
    at: datetime = T0,
    conversation: str | None = None,
    store: str = "s",
    query_id: str | None = None,
) -> HistoryEntry:
    return HistoryEntry(
        query_id=query_id or str(uuid.uuid4()),
        user_id=user,
        store_id=store,
        query_class="vector",
        conversation_id=conversation or str(uuid.uuid4()),
        question="Wie viele Urlaubstage? ✓",
        rewritten_question=None,
        answer="25 Tage [1].",
        sources=(CitedSource("doc/ä.md", "doc/ä.md#0", "Ä", 0.75, None),),
        level=0.5,
        threshold=None,
        created_at=at,
    )


def test_an_entry_comes_back_as_it_was_kept(repo: SqlHistoryRepository) -> None:
    kept = entry(at=datetime(2027, 3, 1, 13, 0, 0, 123456, tzinfo=UTC))
    repo.record(kept)
    assert repo.entry(kept.query_id) == kept
    assert repo.entry(str(uuid.uuid4())) is None


def test_pages_are_newest_first_with_ties_broken_by_query_id(repo: SqlHistoryRepository) -> None:
    kept = [entry(at=T0 + timedelta(seconds=i // 3)) for i in range(14)]  # three entries per second
    for e in kept:
        repo.record(e)
    repo.record(entry("bob", at=T0 + timedelta(days=1)))
    expected = sorted(kept, key=lambda e: (e.created_at, e.query_id), reverse=True)
    seen: list[HistoryEntry] = []
    after: Position | None = None
    while page := repo.entries("alice", 4, after):
        seen += page
        after = Position.of(page[-1])
    assert [e.query_id for e in seen] == [e.query_id for e in expected]


def test_conversations_owner_and_deletes_touch_only_the_owners_rows(repo: SqlHistoryRepository) -> None:
    conversation = str(uuid.uuid4())
    turns = [entry(conversation=conversation, at=T0 + timedelta(minutes=i)) for i in range(3)]
    for e in turns:
        repo.record(e)
    assert [e.query_id for e in repo.conversation(conversation)] == [e.query_id for e in turns]
    assert [e.query_id for e in repo.conversation(conversation, last=2)] == [e.query_id for e in turns[1:]]
    assert repo.conversation_owner(conversation) == "alice"
    assert repo.conversation_owner(str(uuid.uuid4())) is None
    repo.rate(Feedback(turns[0].query_id, "alice", "s", "UP", "", T0))
    assert not repo.delete_entry("bob", turns[0].query_id)
    assert repo.delete_conversation("bob", conversation) == 0
    assert len(repo.conversation(conversation)) == 3
    assert repo.delete_entry("alice", turns[0].query_id)
    assert repo.ratings([turns[0].query_id]) == {}
    assert repo.delete_conversation("alice", conversation) == 2
    assert repo.conversation(conversation) == [] and repo.conversation_owner(conversation) is None


def test_one_rating_per_query_and_feedback_pages_per_store(repo: SqlHistoryRepository) -> None:
    entries = [entry(at=T0 + timedelta(minutes=i)) for i in range(5)] + [entry(store="other")]
    for e in entries:
        repo.record(e)
    for i, e in enumerate(entries):
        repo.rate(Feedback(e.query_id, "alice", e.store_id, "UP", "first", T0 + timedelta(hours=i)))
    repo.rate(Feedback(entries[0].query_id, "alice", "s", "DOWN", "second thoughts", T0 + timedelta(days=1)))
    assert repo.ratings([entries[0].query_id])[entries[0].query_id].rating == "DOWN"
    first = repo.feedback("s", 3)
    assert [f.query_id for f, _ in first] == [entries[0].query_id, entries[4].query_id, entries[3].query_id]
    rest = repo.feedback("s", 3, Position(first[-1][0].created_at, first[-1][0].query_id))
    assert [f.query_id for f, _ in rest] == [entries[2].query_id, entries[1].query_id]
    assert [h.store_id for _, h in repo.feedback("other", 10)] == ["other"]


def test_purge_removes_entries_and_ratings_before_the_cut(repo: SqlHistoryRepository) -> None:
    old, new = entry(at=T0), entry(at=T0 + timedelta(days=10))
    for e in (old, new):
        repo.record(e)
        repo.rate(Feedback(e.query_id, "alice", "s", "UP", "", e.created_at))
    assert repo.purge(T0 + timedelta(days=1)) == 1
    assert [e.query_id for e in repo.entries("alice", 10)] == [new.query_id]
    assert list(repo.ratings([old.query_id, new.query_id])) == [new.query_id]


def test_0005_downgrades_and_upgrades_again(repo: SqlHistoryRepository) -> None:
    from alembic import command
    from sqlalchemy import inspect

    from service.persistence import schema

    engine = repo._sessions.kw["bind"]
    repo.record(entry())
    with engine.begin() as connection:
        command.downgrade(schema._config(connection), "0004")
    assert not {"query_history", "query_feedback"} & set(inspect(engine).get_table_names())
    assert schema.upgrade(engine) == schema.head_revision()
    assert repo.entries("alice", 10) == []
