"""A query as a turn of its user's conversation: the follow-up rewritten, earlier turns quoted, the turn kept.

``begin`` runs before any search: it checks that the named conversation is the caller's (unknown and
another user's read the same: NotFound; an auditor may read conversations, not continue them), rewrites a
follow-up from the earlier questions, and picks the earlier turns the prompt may quote — only those whose
every cited document the caller may still read, in the version they quoted, so a revoked or outdated answer
never reaches the language model again. ``record`` keeps the answered query in the caller's history with the
version of every document its text draws on: those of the chunks it cited, as their text was read, and those
of the turns it quoted.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from acl.errors import NotFound
from service.domain.analysis import Comparison, Summary
from service.domain.history import NO_SUCH_CONVERSATION, CitedSource, HistoryEntry, known_id, merged_versions
from service.domain.queries import NO_ANSWER_GENERATED, NO_RELEVANT_DOCUMENT, Answer, Caller, SourceChunk
from service.generation.turns import EarlierTurn
from service.history.recheck import Recheck
from service.history.rewrite import Rewriter
from service.persistence.history_ports import HistoryRepository

_NOT_ANSWERS = frozenset({NO_RELEVANT_DOCUMENT, NO_ANSWER_GENERATED})


@dataclass(frozen=True, slots=True)
class Turn:
    """A query's place in its conversation: what to search, and what the prompt may quote."""

    conversation_id: str
    #: The question to search: the rewrite of a follow-up, else the question as asked.
    searched: str
    #: What was searched, when the conversation had earlier turns; None for a conversation's first turn.
    rewritten: str | None
    earlier: tuple[EarlierTurn, ...]
    #: The documents behind the quoted earlier turns (``HistoryEntry.quoted_document_ids`` of this turn).
    quoted: tuple[str, ...] = ()
    #: Their versions, as the quoted turns quoted them (all current when the turn began).
    quoted_versions: tuple[tuple[str, str], ...] = ()


class Conversations:
    """Opens and records the turns of conversations, for the query engine."""

    def __init__(
        self,
        history: HistoryRepository,
        recheck: Recheck,
        rewriter: Rewriter,
        *,
        turns: int = 6,
        max_question_chars: int = 4000,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._history = history
        self._recheck = recheck
        self._rewriter = rewriter
        self._turns = turns
        self._max_chars = max_question_chars
        self._now = now

    def begin(self, caller: Caller, conversation_id: str | None, question: str, model_id: str, store_id: str) -> Turn:
        """The turn ``question`` (on ``store_id``) opens; NotFound unless ``conversation_id`` (when given) is the
        caller's."""
        if conversation_id is None:
            return Turn(str(uuid.uuid4()), question, None, ())
        known_id(conversation_id, "conversation")
        entries = self._history.conversation(conversation_id, last=self._turns)
        if not entries or entries[-1].user_id != caller.user_id:
            raise NotFound(NO_SUCH_CONVERSATION)
        earlier_questions = [e.rewritten_question or e.question for e in entries]
        searched = self._rewriter.rewrite(earlier_questions, question, model_id)[: self._max_chars] or question
        quoted = self._quotable(caller, [e for e in entries if e.store_id == store_id])
        documents = tuple(dict.fromkeys(d for e in quoted for d in e.depends_on))
        return Turn(
            conversation_id,
            searched,
            searched,
            tuple(EarlierTurn(e.question, e.answer or "") for e in quoted),
            documents,
            merged_versions(*(dict(e.versions or ()) for e in quoted)),
        )

    def _quotable(self, caller: Caller, entries: Sequence[HistoryEntry]) -> list[HistoryEntry]:
        """The earlier turns the prompt may quote: answered, and every document their answer draws on (cited, or
        behind a turn they quoted in turn) still readable. Only turns of the queried store are quoted, so that
        what a turn draws on is always in its own store, where it is checked again whenever it is read. A turn
        whose documents changed since is not quoted either: the model would restate what they no longer say."""
        readable = self._recheck.readable(caller, entries)
        current = self._recheck.current(entries)
        return [
            e
            for e in entries
            if e.answer is not None
            and e.answer not in _NOT_ANSWERS
            and e.query_id in current
            and all(d in readable.get(e.store_id, frozenset()) for d in e.depends_on)
        ]

    def keep(
        self,
        caller: Caller,
        store_id: str,
        query_class: str,
        label: str,
        result: Summary | Comparison,
        documents: Sequence[str],
        keep: Callable[[HistoryEntry], None] | None = None,
    ) -> None:
        """Keep a summary or comparison in the caller's history, as a conversation of its own.

        ``label`` stands for the question (it names no document: an entry whose documents were revoked must
        not name them); the entry depends on every one of ``documents``, so revoking any redacts it.
        ``keep``: where the entry goes instead of being committed here, as for ``record``.
        """
        # The documents were read whole: their version now, unless a cited chunk shows that it changed meanwhile.
        versions = merged_versions(
            self._recheck.versions_now(store_id, documents), self._recheck.quoted_versions(store_id, result.sources)
        )
        (keep or self._history.record)(
            HistoryEntry(
                query_id=result.query_id,
                user_id=caller.user_id,
                store_id=store_id,
                query_class=query_class,
                conversation_id=str(uuid.uuid4()),
                question=label,
                rewritten_question=None,
                answer=result.summary if isinstance(result, Summary) else result.comparison,
                sources=_cited(result.sources),
                level=None,
                threshold=None,
                created_at=self._now(),
                quoted_document_ids=tuple(dict.fromkeys(documents)),
                versions=versions,
            )
        )

    def record(
        self,
        caller: Caller,
        store_id: str,
        question: str,
        turn: Turn,
        answer: Answer,
        keep: Callable[[HistoryEntry], None] | None = None,
    ) -> Answer:
        """Keep the answered query in the caller's history; the answer with its conversation and rewrite.

        ``keep``: where the entry goes instead of being committed here (the audited servers write it in one
        transaction with the query's audit row)."""
        quoted = turn.quoted_versions if answer.llm_called else ()
        versions = merged_versions(dict(quoted), self._recheck.quoted_versions(store_id, answer.chunks))
        (keep or self._history.record)(
            HistoryEntry(
                query_id=answer.query_id,
                user_id=caller.user_id,
                store_id=store_id,
                query_class=answer.query_class,
                conversation_id=turn.conversation_id,
                question=question,
                rewritten_question=turn.rewritten,
                answer=answer.answer,
                sources=_cited(answer.chunks),
                level=answer.level,
                threshold=answer.threshold,
                created_at=self._now(),
                # What the prompt quoted, only when the generator saw it (a search-only turn quoted nothing).
                quoted_document_ids=turn.quoted if answer.llm_called else (),
                versions=versions,
            )
        )
        return replace(answer, conversation_id=turn.conversation_id, rewritten_question=turn.rewritten)


def _cited(chunks: Sequence[SourceChunk]) -> tuple[CitedSource, ...]:
    """What history keeps of the chunks a result cited: where they are and how they scored, never their text."""
    return tuple(CitedSource(c.document_id, c.chunk_id, c.title, c.score, c.relevance) for c in chunks)
