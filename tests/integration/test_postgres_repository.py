"""The settings database on PostgreSQL (127.0.0.1:5432) and SQLite: migrations, the repository, concurrency.

Each PostgreSQL test gets its own database ``docqa_test_<random>``, dropped at
teardown. Without a reachable server the PostgreSQL cases skip, saying why.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from acl.errors import ConfigurationError, InvalidArgument, NotFound
from acl.model import Acl
from indexer.documents import DocumentRecord
from indexer.index import ChunkRecord, StoreSpec
from service.api.cli.main import main
from service.domain.history import CitedSource, HistoryEntry
from service.domain.queries import Caller, VectorQuery
from service.domain.store import Store
from service.persistence import schema
from service.persistence.ports import AclOverride, AuditRecord, Membership, Tombstone
from service.persistence.sql_history import SqlHistoryRepository
from service.persistence.sql_settings import Base, SqlSettingsRepository, make_engine
from service.query.engine import QueryEngine
from tests.env import clear_docqa_env
from tests.fakes import FakeIndex
from tests.fakes_service import FakeEmbedder, RecordingGenerator

#: The server's administrative database; override with DOCQA_TEST_POSTGRES_URL.
ADMIN_URL = os.environ.get("DOCQA_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


@pytest.fixture
def postgres_url() -> Iterator[str]:
    admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"docqa_test_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
    except OperationalError as exc:
        admin.dispose()
        pytest.skip(f"PostgreSQL is not reachable at {ADMIN_URL} ({exc.orig.__class__.__name__})")
    url = admin.url.set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'settings.sqlite'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def repo(database_url: str) -> Iterator[SqlSettingsRepository]:
    repository = SqlSettingsRepository.from_url(database_url)
    yield repository
    repository.close()


def _store(store_id: str = "s") -> Store:
    return Store(store_id, store_id.upper(), "fake", 0.5, 0.1, 0.6, 4)


# ---------------------------------------------------------------------------- migrations
def test_migrations_create_exactly_the_tables_the_code_uses(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        assert schema.upgrade(engine) == schema.head_revision()
        with engine.connect() as connection:
            diff = compare_metadata(MigrationContext.configure(connection), Base.metadata)
        assert diff == []
    finally:
        engine.dispose()


def test_configured_database_refuses_a_schema_not_at_head(database_url: str) -> None:
    head = schema.head_revision()
    refusal = rf"is at empty \(no schema\), expected {head}: run 'docqa db upgrade'"
    with pytest.raises(ConfigurationError, match=refusal):
        SqlSettingsRepository.from_url(database_url, upgrade=False)

    engine = make_engine(database_url)
    try:
        schema.upgrade(engine)
        SqlSettingsRepository.from_url(database_url, upgrade=False).close()  # at head: accepted
        with engine.begin() as connection:  # a database migrated by newer code than this
            connection.execute(text("UPDATE alembic_version SET version_num = 'f00d'"))
    finally:
        engine.dispose()
    with pytest.raises(ConfigurationError, match=rf"is at f00d, expected {head}: run 'docqa db upgrade'"):
        SqlSettingsRepository.from_url(database_url, upgrade=False)


def test_migrations_downgrade_and_upgrade_again(database_url: str) -> None:
    from alembic import command

    engine = make_engine(database_url)
    try:
        schema.upgrade(engine)
        with engine.begin() as connection:
            command.downgrade(schema._config(connection), "base")
        assert schema.current_revision(engine) is None
        assert schema.upgrade(engine) == schema.head_revision()
    finally:
        engine.dispose()


def test_database_made_before_migrations_is_adopted(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    engine = make_engine(url)
    try:
        schema.upgrade(engine, "0001")  # the tables releases before migrations made with create_all
        with engine.begin() as connection:
            connection.execute(text("DROP TABLE alembic_version"))
            connection.execute(text("INSERT INTO group_members VALUES ('group:g', 'user:a', 'admin')"))
    finally:
        engine.dispose()
    repository = SqlSettingsRepository.from_url(url)
    try:
        assert repository.group_members() == {"group:g": frozenset({"user:a"})}
    finally:
        repository.close()


def test_upgrade_from_0001_keeps_memberships_by_origin(database_url: str) -> None:
    """0001's memberships become global admin rows, store-scoped manifest rows, or global sync rows."""
    engine = make_engine(database_url)
    try:
        schema.upgrade(engine, "0001")
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO stores VALUES ('a', 'A', 'fake', 0.5, 0.1, 0.6, 4, 'x', 't')"))
            for row in (
                "('group:finance', 'user:alice', 'admin')",
                "('group:finance', 'user:mallory', 'manifest:a:/srv/a')",
                "('group:finance', 'user:bob', 'manifest:b:/srv/b')",
                "('group:ops', 'user:olga', 'ldap')",
            ):
                connection.execute(text(f"INSERT INTO group_members VALUES {row}"))
        assert schema.upgrade(engine) == schema.head_revision()
    finally:
        engine.dispose()
    repository = SqlSettingsRepository.from_url(database_url)
    try:
        rows = {(m.group, m.member, m.scope, m.source) for m in repository.membership_records()}
        assert rows == {
            ("group:finance", "user:alice", "", "admin"),
            ("group:finance", "user:mallory", "a", "manifest"),
            ("group:finance", "user:bob", "b", "manifest"),
            ("group:ops", "user:olga", "", "ldap"),
        }
        # store b's manifest no longer grants store a's documents (issue 13)
        assert "user:bob" not in repository.memberships("a")
        assert repository.memberships("a")["user:mallory"] == frozenset({"group:finance"})
        assert repository.memberships()["user:olga"] == frozenset({"group:ops"})
    finally:
        repository.close()


# ---------------------------------------------------------------------------- the repository
def test_repository_round_trip(repo: SqlSettingsRepository) -> None:
    repo.create_store(_store())
    with pytest.raises(InvalidArgument, match="already exists"):
        repo.create_store(_store())
    assert repo.update_store("s", level=0.8).level == 0.8
    with pytest.raises(NotFound):
        repo.update_store("absent", level=0.1)

    acl = Acl(frozenset({"group:finance"}), frozenset({"user:mallory"}))
    repo.save_document(DocumentRecord("s", "d1", "D1", "file:///d1", "h1", "text one", acl, chunk_count=2))
    assert repo.acls("s", ["d1", "absent"]) == {"d1": acl}
    got = repo.get_document("s", "d1")
    assert got is not None and got.text == "text one" and got.acl == acl
    repo.set_ingested_acl("s", "d1", Acl(frozenset({"user:alice"})))
    assert repo.acls("s", ["d1"])["d1"].allow == frozenset({"user:alice"})
    assert repo.document_count("s") == 1
    now = datetime.now(UTC)
    repo.put_acl_override("s", "d1", AclOverride(Acl.of(["user:zed"], ["user:eve"]), "cli:root", now))
    assert repo.acls("s", ["d1"]) == {"d1": Acl.of(["user:zed"], ["user:eve"])}
    assert repo.acl_overrides("s", ["d1"])["d1"] == AclOverride(Acl.of(["user:zed"], ["user:eve"]), "cli:root", now)
    assert repo.get_document("s", "d1").acl == Acl.of(["user:alice"])  # type: ignore[union-attr]
    assert repo.delete_acl_override("s", "d1") and not repo.delete_acl_override("s", "d1")
    assert repo.acls("s", ["d1"])["d1"] == Acl.of(["user:alice"])

    assert repo.add_admin_membership(Membership("group:finance", "user:alice", "", "admin", "cli:root", now))
    assert not repo.add_admin_membership(Membership("group:finance", "user:alice", "", "admin", "cli:root", now))
    repo.replace_memberships({"group:ops": ["user:bob"]}, scope="", source="ldap")
    repo.replace_memberships({"group:finance": ["user:mallory"]}, scope="s", source="manifest")
    assert repo.memberships() == {"user:alice": frozenset({"group:finance"}), "user:bob": frozenset({"group:ops"})}
    assert repo.memberships("s")["user:mallory"] == frozenset({"group:finance"})
    assert repo.tombstone_membership(Tombstone("group:finance", "user:mallory", "cli:root", now))
    assert "user:mallory" not in repo.memberships("s")
    assert repo.tombstones() == [Tombstone("group:finance", "user:mallory", "cli:root", now)]
    assert repo.release_membership("group:finance", "user:mallory")
    assert repo.memberships("s")["user:mallory"] == frozenset({"group:finance"})

    record = AuditRecord(
        "q1", "alice", "s", "VectorQuery", ("d1",), ("d1#0",), 0.35, {"total": 1.5}, "ok", "grpc", datetime.now(UTC)
    )
    repo.record_audit(record)
    assert repo.audit_records("alice") == [record]
    # an answer's history entry is written in the audit row's transaction
    answered = AuditRecord(
        "q2", "alice", "s", "vector", (), ("d1#0",), 0.35, {"total": 1.0}, "OK", "graphql", datetime.now(UTC)
    )
    entry = HistoryEntry(
        "q2", "alice", "s", "vector", "c1", "what grew?", None, "revenue", (CitedSource("d1", "d1#0", "D1", 0.5, 0.8),),
        0.5, 0.35, answered.created_at,
    )  # fmt: skip
    repo.record_audit(answered, history=[entry])
    assert repo.audit_records("alice")[0] == answered and SqlHistoryRepository(repo.engine).entry("q2") == entry

    assert repo.delete_document("s", "d1")
    assert repo.acls("s", ["d1"]) == {}


def test_concurrent_admin_updates_while_queries_run(repo: SqlSettingsRepository) -> None:
    repo.create_store(_store())
    embedder = FakeEmbedder(dimension=32)
    index = FakeIndex()
    index.ensure(StoreSpec("s", 32))
    texts = ["revenue grew in the third quarter", "vacation policy gives twenty days", "the office moves in May"]
    index.upsert(
        "s",
        [
            ChunkRecord(
                f"d{i}#0",
                f"d{i}",
                0,
                t,
                f"D{i}",
                f"file:///d{i}",
                (),
                0,
                len(t),
                Acl(frozenset({"user:alice"})),
                vector=vector,
            )
            for i, (t, vector) in enumerate(zip(texts, embedder.embed_documents(texts), strict=True))
        ],
    )
    for i, t in enumerate(texts):
        repo.save_document(
            DocumentRecord(
                "s", f"d{i}", f"D{i}", f"file:///d{i}", "h", t, Acl(frozenset({"user:alice"})), chunk_count=1
            )
        )
    engine = QueryEngine(repository=repo, index=index, embedder_for=lambda _: embedder, generator=RecordingGenerator())

    rounds = 25
    finals = {"level": 0.25, "max_chunks": 7, "name": "name-24", "prompt_template": "template 24 {context} {question}"}
    errors: list[BaseException] = []
    answers: list[int] = []
    done = threading.Event()

    def admin(field: str) -> None:
        try:
            for n in range(rounds):
                value: object = {
                    "level": round(0.01 * n + 0.01, 2) if n < rounds - 1 else finals["level"],
                    "max_chunks": 1 + n % 7 if n < rounds - 1 else finals["max_chunks"],
                    "name": f"name-{n}",
                    "prompt_template": f"template {n} {{context}} {{question}}",
                }[field]
                repo.update_store("s", **{field: value})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def asker() -> None:
        try:
            while not done.is_set():
                answer = engine.ask(Caller("alice"), VectorQuery("s", "revenue third quarter", level=0))
                answers.append(len(answer.chunks))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    admins = [threading.Thread(target=admin, args=(f,)) for f in finals for _ in range(2)]
    askers = [threading.Thread(target=asker) for _ in range(4)]
    for t in askers + admins:
        t.start()
    for t in admins:
        t.join(timeout=120)
    done.set()
    for t in askers:
        t.join(timeout=60)

    assert errors == []
    assert answers and all(1 <= n <= 3 for n in answers)
    store = repo.get_store("s")
    assert store is not None
    assert {f: getattr(store, f) for f in finals} == finals  # every field kept its writer's last value


# ---------------------------------------------------------------------------- the CLI
def test_cli_db_upgrade_and_the_start_up_refusal(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clear_docqa_env(monkeypatch, tmp_path / "data")
    monkeypatch.setenv("DOCQA_DATABASE_URL", database_url)
    head = schema.head_revision()

    assert main(["stores"]) != 0
    assert f"expected {head}: run 'docqa db upgrade'" in capsys.readouterr().err
    assert main(["db", "current"]) == 1
    assert "out of date" in capsys.readouterr().out

    assert main(["db", "upgrade"]) == 0
    assert f"upgraded from empty to {head}" in capsys.readouterr().out
    assert main(["db", "upgrade"]) == 0
    assert f"already at {head}" in capsys.readouterr().out
    assert main(["db", "current"]) == 0
    assert "up to date" in capsys.readouterr().out
    assert main(["stores"]) == 0
