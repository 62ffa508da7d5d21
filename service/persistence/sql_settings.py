"""The SQLAlchemy adapter of the settings repository (SQLite on a laptop, PostgreSQL in production)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from sqlalchemy import (
    BindParameter,
    DateTime,
    Float,
    ForeignKeyConstraint,
    Integer,
    Select,
    String,
    Text,
    bindparam,
    create_engine,
    delete,
    event,
    exists,
    func,
    select,
)
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Mapped, Session, mapped_column, sessionmaker

from acl.errors import InvalidArgument, NotFound, Unavailable
from acl.model import Acl
from indexer.private_files import private_file
from service.domain.history import HistoryEntry
from service.domain.retrieval_settings import RetrievalDefaults
from service.domain.store import STORE_SETTINGS, DocumentRecord, Store
from service.persistence.ports import AuditRecord, SettingsRepository
from service.persistence.sql_access import AclOverrideRow, AclRow, SqlAccessRows, read_acls, write_ingested_acl
from service.persistence.sql_acl_reads import OVERRIDE_ORIGIN, acl_entries, readable_document
from service.persistence.sql_base import Base, transaction
from service.persistence.sql_columns import store_column
from service.persistence.sql_history import history_row  # its tables join the metadata
from service.persistence.sql_scim import ScimResourceRow  # noqa: F401 - its tables join the metadata

__all__ = ["Base", "SqlSettingsRepository", "make_engine"]

_BATCH = 500  # ids per IN (...) clause
log = logging.getLogger("docqa.sql_repository")


class StoreRow(Base):
    """A store's row: its id, name and embedding model, and one column per setting (``store_columns``)."""

    __tablename__ = "stores"
    id: Mapped[str] = mapped_column(String(63), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    embedding_model: Mapped[str] = mapped_column(String(300))


for _setting in STORE_SETTINGS:  # the settings' columns, from their declarations
    setattr(StoreRow, _setting.name, store_column(_setting))


class DocumentRow(Base):
    __tablename__ = "documents"
    store_id: Mapped[str] = mapped_column(String(63), primary_key=True)
    id: Mapped[str] = mapped_column(String(1000), primary_key=True)
    title: Mapped[str] = mapped_column(Text)
    source_uri: Mapped[str] = mapped_column(Text)
    content_hash: Mapped[str] = mapped_column(String(64))
    text: Mapped[str] = mapped_column(Text)
    origin: Mapped[str] = mapped_column(Text)
    chunk_count: Mapped[int] = mapped_column(Integer)
    indexed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    __table_args__ = (ForeignKeyConstraint(["store_id"], ["stores.id"], ondelete="CASCADE"),)


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite gets foreign keys, WAL and a busy timeout."""
    if url.startswith("sqlite"):
        database = make_url(url).database
        if database and database != ":memory:" and not database.startswith("file:"):
            # Created private before SQLite opens it: its -wal and -shm files copy its mode.
            private_file(Path(database))
        engine = create_engine(url, connect_args={"timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.close()

        return engine
    return create_engine(url, pool_pre_ping=True)


def _safe_url(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=True)


# A question's reads, as statements built once with bound parameters: SQLAlchemy keys a statement's compiled form
# by walking it, and a statement object keeps its key, so a question skips building and keying these each time.
@cache
def _store_for_reader() -> Select[StoreRow]:
    principals: BindParameter[Any] = bindparam("principals", expanding=True)
    readable = exists().where(
        DocumentRow.store_id == StoreRow.id, readable_document(DocumentRow.store_id, DocumentRow.id, principals)
    )
    return select(StoreRow).where(StoreRow.id == bindparam("store_id"), readable)


@cache
def _acl_rows() -> Select[str, str | None, str | None, str | None, str | None]:
    store_id: BindParameter[str] = bindparam("store_id", type_=String)
    batch: BindParameter[Any] = bindparam("batch", expanding=True)
    entries = acl_entries(store_id, batch)
    columns = (entries.c.principal, entries.c.effect, entries.c.origin, AclOverrideRow.document_id)
    return (
        select(DocumentRow.id, *columns)
        .outerjoin(entries, entries.c.document_id == DocumentRow.id)
        .outerjoin(
            AclOverrideRow,
            (AclOverrideRow.store_id == DocumentRow.store_id) & (AclOverrideRow.document_id == DocumentRow.id),
        )
        .where(DocumentRow.store_id == store_id, DocumentRow.id.in_(batch))
    )


def _store(row: StoreRow, defaults: RetrievalDefaults) -> Store:
    values = {}
    for declared in STORE_SETTINGS:
        value = getattr(row, declared.name)
        if value is None and declared.null_is_default:  # a store made before the setting: the configured default
            value = getattr(defaults, declared.name, declared.default)
        values[declared.name] = value
    return Store(id=row.id, name=row.name, embedding_model=row.embedding_model, **values)


_STORE_FIELDS = frozenset({"name", *(s.name for s in STORE_SETTINGS)})


class SqlSettingsRepository(SqlAccessRows, SettingsRepository):
    """Settings in any SQL database SQLAlchemy speaks."""

    def __init__(self, engine: Engine, *, create: bool = True, defaults: RetrievalDefaults | None = None) -> None:
        """``create``: apply the migrations up to head (the laptop default, tests);
        otherwise refuse a schema that is not at head (ConfigurationError naming ``docqa db upgrade``).
        ``defaults``: what a store row without retrieval settings reads as."""
        from service.persistence import schema

        self._engine = engine
        self._defaults = defaults or RetrievalDefaults()
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        try:
            if create:
                revision = schema.upgrade(engine)
                log.info("settings database %s at schema revision %s", _safe_url(engine), revision)
            else:
                schema.check(engine)
        except OperationalError as exc:
            raise Unavailable(f"settings database unavailable: {exc.orig.__class__.__name__}") from None

    @classmethod
    def from_url(
        cls, url: str, *, upgrade: bool = True, defaults: RetrievalDefaults | None = None
    ) -> SqlSettingsRepository:
        """A repository on ``url``; ``upgrade=False`` (a configured production database) only checks the schema.

        An in-memory SQLite database is always migrated: it starts empty every time.
        """
        in_memory = url in ("sqlite://", "sqlite:///:memory:")
        engine = make_engine(url)
        try:
            return cls(engine, create=upgrade or in_memory, defaults=defaults)
        except BaseException:
            engine.dispose()
            raise

    def _session(self) -> AbstractContextManager[Session]:
        return transaction(self._sessions)

    def close(self) -> None:
        self._engine.dispose()

    @property
    def engine(self) -> Engine:
        """The database's engine, for the other adapters on the same database (``sql_history``)."""
        return self._engine

    # stores -----------------------------------------------------------------
    def get_store(self, store_id: str) -> Store | None:
        with self._session() as s:
            row = s.get(StoreRow, store_id)
            return _store(row, self._defaults) if row else None

    def store_for_reader(self, store_id: str, principals: frozenset[str]) -> Store | None:
        # One statement, in place of get_store's: the store's row only when some document of it is readable.
        with self._session() as s:
            row = s.scalars(_store_for_reader(), {"store_id": store_id, "principals": sorted(principals)}).first()
            return _store(row, self._defaults) if row else None

    def list_stores(self) -> list[Store]:
        with self._session() as s:
            return [_store(r, self._defaults) for r in s.scalars(select(StoreRow).order_by(StoreRow.id))]

    def create_store(self, store: Store) -> Store:
        try:
            with self._session() as s:
                s.add(StoreRow(**{f: getattr(store, f) for f in Store.__slots__}))
        except IntegrityError:
            raise InvalidArgument(f"store {store.id!r} already exists") from None
        return store

    def update_store(self, store_id: str, **changes: Any) -> Store:
        unknown = set(changes) - _STORE_FIELDS
        if unknown:
            raise InvalidArgument(f"unknown store setting(s): {', '.join(sorted(unknown))}")
        with self._session() as s:
            row = s.get(StoreRow, store_id, with_for_update=True)
            if row is None:
                raise NotFound(f"store {store_id!r} not found")
            for key, value in changes.items():
                setattr(row, key, value)
            return _store(row, self._defaults)

    # documents --------------------------------------------------------------
    def get_document(self, store_id: str, document_id: str) -> DocumentRecord | None:
        with self._session() as s:
            row = s.get(DocumentRow, (store_id, document_id))
            if row is None:
                return None
            acl = read_acls(s, store_id, [document_id], AclRow).get(document_id, Acl())
            return self._document(row, acl, with_text=True)

    def list_documents(self, store_id: str, origin: str | None = None) -> list[DocumentRecord]:
        with self._session() as s:
            query = select(DocumentRow).where(DocumentRow.store_id == store_id)
            if origin is not None:
                query = query.where(DocumentRow.origin == origin)
            rows = list(s.scalars(query.order_by(DocumentRow.id)).all())
            acls = read_acls(s, store_id, [r.id for r in rows], AclRow)
            return [self._document(r, acls.get(r.id, Acl()), with_text=False) for r in rows]

    def document_count(self, store_id: str) -> int:
        with self._session() as s:
            query = select(func.count()).select_from(DocumentRow).where(DocumentRow.store_id == store_id)
            return int(s.scalar(query) or 0)

    @staticmethod
    def _document(row: DocumentRow, acl: Acl, *, with_text: bool) -> DocumentRecord:
        return DocumentRecord(
            store_id=row.store_id,
            id=row.id,
            title=row.title,
            source_uri=row.source_uri,
            content_hash=row.content_hash,
            text=row.text if with_text else "",
            acl=acl,
            origin=row.origin,
            chunk_count=row.chunk_count,
            indexed_at=row.indexed_at,
        )

    def save_document(self, document: DocumentRecord) -> None:
        with self._session() as s:
            if s.get(StoreRow, document.store_id) is None:
                raise NotFound(f"store {document.store_id!r} not found")
            s.merge(
                DocumentRow(
                    store_id=document.store_id,
                    id=document.id,
                    title=document.title,
                    source_uri=document.source_uri,
                    content_hash=document.content_hash,
                    text=document.text,
                    origin=document.origin,
                    chunk_count=document.chunk_count,
                    indexed_at=datetime.now(UTC),
                )
            )
            s.flush()
            write_ingested_acl(s, document.store_id, document.id, document.acl)

    def delete_document(self, store_id: str, document_id: str) -> bool:
        with self._session() as s:
            s.execute(delete(AclRow).where(AclRow.store_id == store_id, AclRow.document_id == document_id))
            result = s.execute(
                delete(DocumentRow).where(DocumentRow.store_id == store_id, DocumentRow.id == document_id)
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    # the authoritative ACL ----------------------------------------------------
    def acls(self, store_id: str, document_ids: Iterable[str]) -> Mapping[str, Acl]:
        wanted = list(dict.fromkeys(document_ids))
        # Which documents exist, their ingested ACL rows, their overrides' entries and whether an override
        # replaces the source's ACL: one statement per batch, the same for an absent document, a forbidden
        # one and an overridden one (a document without rows comes back once, with no principal).
        source: dict[str, tuple[set[str], set[str]]] = {}
        admin: dict[str, tuple[set[str], set[str]]] = {}
        overridden: set[str] = set()
        with self._session() as s:
            for i in range(0, len(wanted), _BATCH):
                rows = s.execute(_acl_rows(), {"store_id": store_id, "batch": wanted[i : i + _BATCH]})
                for document_id, principal, effect, origin, override in rows:
                    if override is not None:
                        overridden.add(document_id)
                    allowed, denied = (admin if origin == OVERRIDE_ORIGIN else source).setdefault(
                        document_id, (set(), set())
                    )
                    source.setdefault(document_id, (set(), set()))
                    if principal is not None:
                        (allowed if effect == "allow" else denied).add(principal)
        # An override replaces the ingested ACL; one without entries lets nobody read.
        empty: tuple[set[str], set[str]] = (set(), set())
        out: dict[str, Acl] = {}
        for d in wanted:
            if d in source:
                allow, deny = admin.get(d, empty) if d in overridden else source[d]
                out[d] = Acl(frozenset(allow), frozenset(deny))
        return out

    def set_ingested_acl(self, store_id: str, document_id: str, acl: Acl) -> None:
        with self._session() as s:
            if s.get(DocumentRow, (store_id, document_id)) is None:
                raise NotFound(f"document {document_id!r} not found in store {store_id!r}")
            write_ingested_acl(s, store_id, document_id, acl)

    def mark_for_reindex(self, store_id: str, document_id: str) -> None:
        with self._session() as s:
            row = s.get(DocumentRow, (store_id, document_id))
            if row is not None:
                row.content_hash = ""

    # the query audit trail (appended with the gRPC/GraphQL servers) ---------------------
    def record_audit(self, record: AuditRecord, history: Sequence[HistoryEntry] = ()) -> None:
        with self._session() as s:  # one transaction, one flush to disk, for the audit row and the history rows
            s.add_all(history_row(entry) for entry in history)
            s.add(
                AuditRow(
                    query_id=record.query_id,
                    user_id=record.user_id,
                    store_id=record.store_id,
                    query_class=record.query_class,
                    document_ids=json.dumps(list(record.document_ids)),
                    chunk_ids=json.dumps(list(record.chunk_ids)),
                    threshold=record.threshold,
                    timings_ms=json.dumps(dict(record.timings_ms)),
                    outcome=record.outcome,
                    interface=record.interface,
                    created_at=record.created_at,
                    document_count=record.document_count,
                    chunk_count=record.chunk_count,
                )
            )

    def audit_records(
        self,
        user_id: str | None = None,
        limit: int = 100,
        since: datetime | None = None,
        before: datetime | None = None,
    ) -> list[AuditRecord]:
        query = select(AuditRow).order_by(AuditRow.created_at.desc(), AuditRow.seq.desc()).limit(limit)
        if user_id is not None:
            query = query.where(AuditRow.user_id == user_id)
        if since is not None:
            query = query.where(AuditRow.created_at >= since)
        if before is not None:
            query = query.where(AuditRow.created_at < before)
        with self._session() as s:
            return [_audit(row) for row in s.scalars(query)]


# ---------------------------------------------------------------------------- the audit table
class AuditRow(Base):
    __tablename__ = "query_audit"
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    query_id: Mapped[str] = mapped_column(String(64), index=True)
    user_id: Mapped[str] = mapped_column(String(210), index=True)
    store_id: Mapped[str] = mapped_column(String(63))
    query_class: Mapped[str] = mapped_column(String(32))
    document_ids: Mapped[str] = mapped_column(Text)  # JSON list
    chunk_ids: Mapped[str] = mapped_column(Text)  # JSON list
    threshold: Mapped[float | None] = mapped_column(Float, nullable=True)
    timings_ms: Mapped[str] = mapped_column(Text)  # JSON object
    outcome: Mapped[str] = mapped_column(String(64))
    interface: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    document_count: Mapped[int | None] = mapped_column(Integer, nullable=True)  # None before 0003
    chunk_count: Mapped[int | None] = mapped_column(Integer, nullable=True)


def _audit(row: AuditRow) -> AuditRecord:
    created = row.created_at if row.created_at.tzinfo else row.created_at.replace(tzinfo=UTC)
    return AuditRecord(
        query_id=row.query_id,
        user_id=row.user_id,
        store_id=row.store_id,
        query_class=row.query_class,
        document_ids=tuple(json.loads(row.document_ids)),
        chunk_ids=tuple(json.loads(row.chunk_ids)),
        threshold=row.threshold,
        timings_ms=json.loads(row.timings_ms),
        outcome=row.outcome,
        interface=row.interface,
        created_at=created,
        document_count=row.document_count,
        chunk_count=row.chunk_count,
    )
