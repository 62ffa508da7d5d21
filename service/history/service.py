"""What a user does with their history, and an admin with the ratings: list, read, delete, rate, purge.

Every entry leaves through ``Recheck``: its cited documents are checked against today's ACL for the reader
(the owner, an auditor, an admin reading ratings), never for the user who asked, and against the versions
it quoted; a rating's comment is shown only with the answer it rates. Unknown and another
user's query or conversation read the same (NotFound), and nothing is changed for them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from acl.errors import NotFound
from service.domain.authorization import AdminOperation, require_admin
from service.domain.history import (
    NO_SUCH_CONVERSATION,
    NO_SUCH_QUERY,
    Feedback,
    Position,
    ShownEntry,
    known_id,
    page_size,
    parse_cursor,
    parse_rating,
    rated,
)
from service.domain.queries import Caller
from service.history.recheck import Recheck
from service.persistence.history_ports import HistoryRepository
from service.persistence.ports import StoreRepository


@dataclass(frozen=True, slots=True)
class EntryPage:
    """One page of a user's history, newest first; ``next_cursor`` None on the last page."""

    entries: tuple[ShownEntry, ...]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class FeedbackPage:
    """One page of a store's ratings, newest first, each entry as the admin reading it may see it."""

    #: Each rating as the entry it rates is shown: its comment "" when the answer is withheld.
    items: tuple[tuple[Feedback, ShownEntry], ...]
    next_cursor: str | None


class HistoryService:
    """Users' history and ratings, through the history port and the access re-check."""

    def __init__(
        self,
        history: HistoryRepository,
        recheck: Recheck,
        stores: StoreRepository,
        *,
        retention_days: int = 90,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.repository = history
        self._history = history
        self._recheck = recheck
        self._stores = stores
        self._retention = timedelta(days=retention_days)
        self._now = now

    # a user's own history ---------------------------------------------------------------------------------
    def page(self, caller: Caller, first: Any = None, after: str | None = None) -> EntryPage:
        """The caller's entries, newest first, ``first`` (1–100, default 20) after the cursor ``after``."""
        size = page_size(first)
        position = parse_cursor(after)
        entries = self._history.entries(caller.user_id, size + 1, position)
        more = len(entries) > size
        entries = entries[:size]
        cursor = Position.of(entries[-1]).cursor() if more and entries else None
        return EntryPage(tuple(self._with_ratings(self._recheck.show(caller, entries))), cursor)

    def conversation(self, caller: Caller, conversation_id: Any) -> tuple[ShownEntry, ...]:
        """The turns of a conversation, oldest first: the caller's own, or any for a history auditor."""
        known_id(conversation_id, "conversation")
        entries = self._history.conversation(conversation_id)
        if not entries or (entries[-1].user_id != caller.user_id and not caller.history_auditor):
            raise NotFound(NO_SUCH_CONVERSATION)
        return tuple(self._with_ratings(self._recheck.show(caller, entries)))

    def delete_entry(self, caller: Caller, query_id: Any) -> None:
        """Delete one of the caller's entries (and its rating); NotFound for any other."""
        if not self._history.delete_entry(caller.user_id, known_id(query_id, "query")):
            raise NotFound(NO_SUCH_QUERY)

    def delete_conversation(self, caller: Caller, conversation_id: Any) -> int:
        """Delete every turn of one of the caller's conversations; how many; NotFound for any other."""
        deleted = self._history.delete_conversation(caller.user_id, known_id(conversation_id, "conversation"))
        if not deleted:
            raise NotFound(NO_SUCH_CONVERSATION)
        return deleted

    def purge(self) -> int:
        """Delete every entry older than the retention; how many went."""
        return self._history.purge(self._now() - self._retention)

    # ratings ------------------------------------------------------------------------------------------
    def rate(self, caller: Caller, query_id: Any, rating: Any, comment: Any = None) -> Feedback:
        """Rate one of the caller's answers (a later rating replaces the earlier); NotFound for any other."""
        word, text = parse_rating(rating, comment)
        entry = self._history.entry(known_id(query_id, "query"))
        if entry is None or entry.user_id != caller.user_id:
            raise NotFound(NO_SUCH_QUERY)
        feedback = Feedback(entry.query_id, caller.user_id, entry.store_id, word, text, self._now())
        self._history.rate(feedback)
        return feedback

    def feedback(self, admin: Caller, store_id: Any, first: Any = None, after: str | None = None) -> FeedbackPage:
        """A store's ratings, newest first (admin only), each entry re-checked against the admin's own rights."""
        require_admin(admin, AdminOperation.READ_FEEDBACK)
        size = page_size(first)
        position = parse_cursor(after)
        if not isinstance(store_id, str) or self._stores.get_store(store_id) is None:
            raise NotFound(f"store {store_id!r} not found")
        rows = self._history.feedback(store_id, size + 1, position)
        more = len(rows) > size
        rows = rows[:size]
        shown = [rated(s, f) for (f, _), s in zip(rows, self._recheck.show(admin, [e for _, e in rows]), strict=True)]
        cursor = Position(rows[-1][0].created_at, rows[-1][0].query_id).cursor() if more and rows else None
        return FeedbackPage(tuple((s.rating or f, s) for (f, _), s in zip(rows, shown, strict=True)), cursor)

    def documents_named(self, reader: Caller, store_id: str, names: list[str]) -> tuple[frozenset[str], frozenset[str]]:
        """Which of ``names`` are documents of ``store_id`` that ``reader`` may read today, and which are
        documents of it they may not read (so that text quoting them can leave them out)."""
        return self._recheck.readable_named(reader, store_id, names)

    def _with_ratings(self, entries: list[ShownEntry]) -> list[ShownEntry]:
        ratings = self._history.ratings([s.entry.query_id for s in entries])
        return [rated(s, ratings.get(s.entry.query_id)) for s in entries]
