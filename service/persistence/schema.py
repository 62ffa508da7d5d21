"""The settings database's schema, managed by Alembic (migrations in ``service/persistence/migrations``).

Alembic is configured here, in code, so the migrations run from an installed
package as well as from the source tree: ``docqa db upgrade`` applies them,
and a repository on a configured database refuses a schema that is not at head.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from acl.errors import ConfigurationError

if TYPE_CHECKING:
    from alembic.config import Config

log = logging.getLogger("docqa.schema")

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
#: Tables a database made before migrations existed (``create_all``) already has.
_LEGACY_TABLES = frozenset({"stores", "documents", "document_acl", "group_members", "query_audit"})


def _config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest revision the installed code knows."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None, "service/migrations has no revisions"
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at; None for an empty (never migrated) database."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


_REVISION = re.compile(r"^revision(?:: str)? = [\"']([^\"']+)[\"']", re.MULTILINE)
_DOWN_REVISION = re.compile(r"^down_revision(?:: [^=]+)? = [\"']([^\"']+)[\"']", re.MULTILINE)


def _head_from_files() -> str | None:
    """The head revision read from the migration files, without importing Alembic (~0.3 s).

    None when the files do not name exactly one head; Alembic then decides.
    """
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (MIGRATIONS / "versions").glob("*.py"):
        source = path.read_text(encoding="utf-8")
        if found := _REVISION.search(source):
            revisions.add(found.group(1))
        if parent := _DOWN_REVISION.search(source):
            parents.add(parent.group(1))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def _recorded_revision(engine: Engine) -> str | None:
    """The revision stored in ``alembic_version``, read with plain SQL; None if there is none."""
    try:
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT version_num FROM alembic_version")).fetchall()
    except DBAPIError:
        return None
    return str(rows[0][0]) if len(rows) == 1 else None


def upgrade(engine: Engine, revision: str = "head") -> str:
    """Apply the migrations up to ``revision``; return the revision the database is at afterwards.

    A database created before migrations existed (all tables, no version) is
    stamped as the first revision, then upgraded. A database already at head
    is recognised without importing Alembic, so CLI commands start fast.
    """
    if revision == "head" and (head := _head_from_files()) is not None and _recorded_revision(engine) == head:
        return head
    from alembic import command

    with _atomic(engine).begin() as connection:
        config = _config(connection)
        tables = set(inspect(connection).get_table_names())
        if "alembic_version" not in tables and tables >= _LEGACY_TABLES:
            log.warning("settings database predates migrations; stamping it at revision 0001")
            command.stamp(config, "0001")
        command.upgrade(config, revision)
    return current_revision(engine) or ""


def _atomic(engine: Engine) -> Engine:
    """An engine whose transactions hold DDL too, so a migration killed midway leaves nothing behind.

    Python's sqlite3 commits every CREATE/ALTER at once (it opens transactions
    only for DML), so on SQLite the migrations run on a connection of their own
    that opens the transaction itself: ``BEGIN IMMEDIATE`` (one migrator at a
    time), committed or rolled back whole.
    """
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        return engine  # PostgreSQL's DDL is transactional; an in-memory database dies with its process
    from sqlalchemy import create_engine, event
    from sqlalchemy.pool import NullPool

    atomic = create_engine(engine.url, poolclass=NullPool, connect_args={"timeout": 30})

    @event.listens_for(atomic, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # sqlite3 leaves transactions to us
        dbapi_connection.execute("PRAGMA foreign_keys=ON")

    @event.listens_for(atomic, "begin")
    def _begin(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return atomic


def check(engine: Engine) -> None:
    """Raise ConfigurationError unless the database is at the head revision."""
    current, head = current_revision(engine), head_revision()
    if current != head:
        at = "empty (no schema)" if current is None else current
        raise ConfigurationError(f"settings database schema is at {at}, expected {head}: run 'docqa db upgrade'")
