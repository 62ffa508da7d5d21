"""The port of users' query history and ratings, kept in the settings database beside (never in) the audit log."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from service.domain.history import Feedback, HistoryEntry, Position


class HistoryRepository(ABC):
    """Answered queries per user, grouped in conversations, and one rating per query.

    Every read that serves a user is scoped to that user by the caller of this port (``service.history``);
    ``delete_*`` take the owner so that a row of another user's is never touched.
    """

    @abstractmethod
    def record(self, entry: HistoryEntry) -> None:
        """Keep ``entry`` (its query id is new)."""

    @abstractmethod
    def entry(self, query_id: str) -> HistoryEntry | None: ...

    @abstractmethod
    def entries(self, user_id: str, first: int, after: Position | None = None) -> list[HistoryEntry]:
        """``user_id``'s entries newest first (created_at, then query id, descending), at most ``first``,
        strictly after ``after`` in that order."""

    @abstractmethod
    def conversation(self, conversation_id: str, last: int | None = None) -> list[HistoryEntry]:
        """The entries of a conversation, oldest first (only its newest ``last`` when given)."""

    @abstractmethod
    def conversation_owner(self, conversation_id: str) -> str | None:
        """The user whose conversation it is; None when it has no entry (unknown, deleted or purged)."""

    @abstractmethod
    def delete_entry(self, user_id: str, query_id: str) -> bool:
        """Delete ``user_id``'s entry and its rating; False when there is no such entry of theirs."""

    @abstractmethod
    def delete_conversation(self, user_id: str, conversation_id: str) -> int:
        """Delete every entry (and rating) of ``user_id``'s conversation; how many entries went."""

    @abstractmethod
    def purge(self, before: datetime) -> int:
        """Delete every entry (and rating) made before ``before``; how many entries went."""

    @abstractmethod
    def rate(self, feedback: Feedback) -> None:
        """Make ``feedback`` the one rating of its query (replacing any earlier one)."""

    @abstractmethod
    def ratings(self, query_ids: list[str]) -> dict[str, Feedback]:
        """The rating of each of these queries that has one."""

    @abstractmethod
    def feedback(self, store_id: str, first: int, after: Position | None = None) -> list[tuple[Feedback, HistoryEntry]]:
        """Rated entries of a store with their ratings, newest rating first ((created_at, query id)
        descending), at most ``first``, strictly after ``after``."""


@dataclass(frozen=True, slots=True)
class QuotedSpan:
    """Text an answer quoted from a document: ``text`` was ``document.text[start:end]`` when it was read."""

    document_id: str
    start: int
    end: int
    text: str


class DocumentVersions(ABC):
    """The versions of a store's documents (the catalog's content hash), for binding history to what it cited."""

    @abstractmethod
    def current(self, store_id: str, document_ids: Iterable[str]) -> dict[str, str]:
        """The version of each of these documents that exists now ("" while one waits to be indexed again)."""

    @abstractmethod
    def quoted(self, store_id: str, spans: Sequence[QuotedSpan]) -> dict[str, str]:
        """For each document of ``spans``: its version now when every span's text is still its text at
        ``[start:end]``, else "" (the text quoted is not the version the catalog holds: never current)."""
