"""The SQLAlchemy adapter of the history port: two tables of the settings database (revisions 0005, 0006).

``query_history`` holds one row per answered query, ``query_feedback`` at most one rating per query
(deleted with its query). Pages are keyset pages over (created_at, query_id), each served by an index:
per user newest first, per conversation, per store's ratings, and by age for the retention purge.
Times are stored in UTC (SQLite keeps no zone; PostgreSQL's ``timestamptz`` does).
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, Float, ForeignKey, Index, String, Text, and_, delete, or_, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Mapped, Session, mapped_column, sessionmaker
from sqlalchemy.sql.elements import ColumnElement

from service.domain.history import CitedSource, Feedback, HistoryEntry, Position, Rating
from service.persistence.history_ports import HistoryRepository
from service.persistence.sql_base import Base, transaction

_BATCH = 500


class HistoryRow(Base):
    __tablename__ = "query_history"
    query_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(210))
    store_id: Mapped[str] = mapped_column(String(63))
    query_class: Mapped[str] = mapped_column(String(32))
    conversation_id: Mapped[str] = mapped_column(String(64))
    question: Mapped[str] = mapped_column(Text)
    rewritten_question: Mapped[str | None] = mapped_column(Text, nullable=True)
    answer: Mapped[str | None] = mapped_column(Text, nullable=True)
    sources: Mapped[str] = mapped_column(Text)  # JSON list of cited chunks (ids, title, scores; never text)
    #: JSON list of the document ids behind the earlier turns its prompt quoted (HistoryEntry.quoted_document_ids).
    quoted_documents: Mapped[str] = mapped_column(Text, server_default="[]")
    #: JSON object of the version of every document the answer draws on (HistoryEntry.versions); NULL in rows
    #: kept before revision 0006 (unknown: never current).
    versions: Mapped[str | None] = mapped_column(Text, nullable=True)
    level: Mapped[float | None] = mapped_column(Float, nullable=True)
    threshold: Mapped[float | None] = mapped_column(Float, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    __table_args__ = (
        Index("ix_query_history_user_newest", "user_id", "created_at", "query_id"),
        Index("ix_query_history_conversation", "conversation_id", "created_at", "query_id"),
        Index("ix_query_history_created", "created_at"),
    )


class FeedbackRow(Base):
    __tablename__ = "query_feedback"
    query_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("query_history.query_id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[str] = mapped_column(String(210))
    store_id: Mapped[str] = mapped_column(String(63))
    rating: Mapped[str] = mapped_column(String(8))
    comment: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    __table_args__ = (Index("ix_query_feedback_store_newest", "store_id", "created_at", "query_id"),)


def _utc(when: datetime) -> datetime:
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _entry(row: HistoryRow) -> HistoryEntry:
    return HistoryEntry(
        query_id=row.query_id,
        user_id=row.user_id,
        store_id=row.store_id,
        query_class=row.query_class,
        conversation_id=row.conversation_id,
        question=row.question,
        rewritten_question=row.rewritten_question,
        answer=row.answer,
        sources=tuple(CitedSource(**s) for s in json.loads(row.sources)),
        quoted_document_ids=tuple(json.loads(row.quoted_documents)),
        versions=_versions(row.versions),
        level=row.level,
        threshold=row.threshold,
        created_at=_utc(row.created_at),
    )


def _versions(raw: str | None) -> tuple[tuple[str, str], ...] | None:
    if raw is None:
        return None
    loaded = json.loads(raw)
    return tuple(sorted((str(d), str(v)) for d, v in loaded.items())) if isinstance(loaded, dict) else None


def _text(text: str) -> str:
    """``text`` as every database keeps it: PostgreSQL's text refuses NUL (a language model's answer may hold one)."""
    return text.replace("\x00", "")


def _opt_text(text: str | None) -> str | None:
    return None if text is None else _text(text)


def _feedback(row: FeedbackRow) -> Feedback:
    rating: Rating = "UP" if row.rating == "UP" else "DOWN"
    return Feedback(row.query_id, row.user_id, row.store_id, rating, row.comment, _utc(row.created_at))


def _after(created: Any, query_id: Any, position: Position) -> ColumnElement[bool]:
    when = _utc(position.created_at)
    # The leading "created <= when" gives the index a range to start from (an OR alone scans from the newest).
    return and_(created <= when, or_(created < when, query_id < position.query_id))


def history_row(entry: HistoryEntry) -> HistoryRow:
    """The row that keeps ``entry`` (also written by the audit log, in one transaction with a query's audit row)."""
    sources = [
        {"document_id": s.document_id, "chunk_id": s.chunk_id, "title": s.title, "score": s.score,
         "relevance": s.relevance}
        for s in entry.sources
    ]  # fmt: skip
    return HistoryRow(
        query_id=entry.query_id,
        user_id=entry.user_id,
        store_id=entry.store_id,
        query_class=entry.query_class,
        conversation_id=entry.conversation_id,
        question=_text(entry.question),
        rewritten_question=_opt_text(entry.rewritten_question),
        answer=_opt_text(entry.answer),
        sources=json.dumps(sources, ensure_ascii=False),
        quoted_documents=json.dumps(list(entry.quoted_document_ids), ensure_ascii=False),
        versions=None if entry.versions is None else json.dumps(dict(entry.versions), ensure_ascii=False),
        level=entry.level,
        threshold=entry.threshold,
        created_at=_utc(entry.created_at),
    )


class SqlHistoryRepository(HistoryRepository):
    """History and ratings in the settings database (its engine, its migrations)."""

    def __init__(self, engine: Engine) -> None:
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    def _session(self) -> AbstractContextManager[Session]:
        return transaction(self._sessions)

    def record(self, entry: HistoryEntry) -> None:
        with self._session() as s:
            s.add(history_row(entry))

    def entry(self, query_id: str) -> HistoryEntry | None:
        with self._session() as s:
            row = s.get(HistoryRow, query_id)
            return _entry(row) if row is not None else None

    def entries(self, user_id: str, first: int, after: Position | None = None) -> list[HistoryEntry]:
        query = select(HistoryRow).where(HistoryRow.user_id == user_id)
        if after is not None:
            query = query.where(_after(HistoryRow.created_at, HistoryRow.query_id, after))
        query = query.order_by(HistoryRow.created_at.desc(), HistoryRow.query_id.desc()).limit(first)
        with self._session() as s:
            return [_entry(r) for r in s.scalars(query)]

    def conversation(self, conversation_id: str, last: int | None = None) -> list[HistoryEntry]:
        query = select(HistoryRow).where(HistoryRow.conversation_id == conversation_id)
        query = query.order_by(HistoryRow.created_at.desc(), HistoryRow.query_id.desc())
        if last is not None:
            query = query.limit(last)
        with self._session() as s:
            return [_entry(r) for r in reversed(list(s.scalars(query)))]

    def conversation_owner(self, conversation_id: str) -> str | None:
        query = select(HistoryRow.user_id).where(HistoryRow.conversation_id == conversation_id).limit(1)
        with self._session() as s:
            return s.scalar(query)

    def delete_entry(self, user_id: str, query_id: str) -> bool:
        with self._session() as s:
            s.execute(delete(FeedbackRow).where(FeedbackRow.query_id == query_id, FeedbackRow.user_id == user_id))
            result = s.execute(delete(HistoryRow).where(HistoryRow.query_id == query_id, HistoryRow.user_id == user_id))
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def delete_conversation(self, user_id: str, conversation_id: str) -> int:
        mine = and_(HistoryRow.conversation_id == conversation_id, HistoryRow.user_id == user_id)
        with self._session() as s:
            s.execute(delete(FeedbackRow).where(FeedbackRow.query_id.in_(select(HistoryRow.query_id).where(mine))))
            return int(s.execute(delete(HistoryRow).where(mine)).rowcount)  # type: ignore[attr-defined]

    def purge(self, before: datetime) -> int:
        old = HistoryRow.created_at < _utc(before)
        with self._session() as s:
            s.execute(delete(FeedbackRow).where(FeedbackRow.query_id.in_(select(HistoryRow.query_id).where(old))))
            return int(s.execute(delete(HistoryRow).where(old)).rowcount)  # type: ignore[attr-defined]

    def rate(self, feedback: Feedback) -> None:
        with self._session() as s:
            s.merge(
                FeedbackRow(
                    query_id=feedback.query_id,
                    user_id=feedback.user_id,
                    store_id=feedback.store_id,
                    rating=feedback.rating,
                    comment=feedback.comment,
                    created_at=_utc(feedback.created_at),
                )
            )

    def ratings(self, query_ids: list[str]) -> dict[str, Feedback]:
        found: dict[str, Feedback] = {}
        with self._session() as s:
            for i in range(0, len(query_ids), _BATCH):
                batch = query_ids[i : i + _BATCH]
                found.update(
                    (r.query_id, _feedback(r))
                    for r in s.scalars(select(FeedbackRow).where(FeedbackRow.query_id.in_(batch)))
                )
        return found

    def feedback(self, store_id: str, first: int, after: Position | None = None) -> list[tuple[Feedback, HistoryEntry]]:
        query = select(FeedbackRow, HistoryRow).join(HistoryRow, HistoryRow.query_id == FeedbackRow.query_id)
        query = query.where(FeedbackRow.store_id == store_id)
        if after is not None:
            query = query.where(_after(FeedbackRow.created_at, FeedbackRow.query_id, after))
        query = query.order_by(FeedbackRow.created_at.desc(), FeedbackRow.query_id.desc()).limit(first)
        with self._session() as s:
            return [(_feedback(f), _entry(h)) for f, h in s.execute(query).all()]
