"""GraphQL types and resolver bodies of users' history, conversations and ratings (``service.history``).

Lists are Relay connections (``edges { cursor node }``, ``pageInfo { endCursor hasNextPage }``). Every entry
is shown as its reader may see it today: ``sourcesRevoked`` without the sources they may not read,
``changed`` when a cited document changed since, and ``withheld`` saying why the answer and the rating's
comment are left out.
"""

from __future__ import annotations

from enum import Enum

import strawberry

from service.api.graphql.context import RequestContext
from service.domain.history import Position, ShownEntry
from service.history.service import FeedbackPage


@strawberry.enum(description="A rating of an answer.")
class Rating(Enum):
    UP = "UP"
    DOWN = "DOWN"


@strawberry.type(description="A chunk an old answer cited (ids, title and scores; readable by the viewer today).")
class HistorySource:
    document_id: str
    chunk_id: str
    title: str
    score: float | None
    relevance: float | None


@strawberry.type(description="One answered query of the caller's history, re-checked against today's ACL.")
class HistoryEntry:
    query_id: str
    conversation_id: str
    store_id: str
    query_class: str
    question: str
    rewritten_question: str | None = strawberry.field(description="What was searched for a follow-up.")
    answer: str | None = strawberry.field(
        description="Null when withheld (see withheld) or when no answer was asked for."
    )
    sources: list[HistorySource]
    level: float | None
    threshold: float | None
    created_at: str
    sources_revoked: bool = strawberry.field(
        description="A cited document is not readable by the viewer: the answer is withheld and that source removed."
    )
    changed: bool = strawberry.field(
        description="A cited document changed or went since the answer: it is shown to its asker alone."
    )
    withheld: str | None = strawberry.field(
        description="Why the answer and the rating's comment are withheld from the viewer; null when shown."
    )
    rating: Rating | None
    rating_comment: str | None = strawberry.field(description="Empty when withheld with the answer.")

    @staticmethod
    def of(shown: ShownEntry) -> HistoryEntry:
        e = shown.entry
        return HistoryEntry(
            query_id=e.query_id,
            conversation_id=e.conversation_id,
            store_id=e.store_id,
            query_class=e.query_class,
            question=e.question,
            rewritten_question=e.rewritten_question,
            answer=e.answer,
            sources=[HistorySource(**{f: getattr(s, f) for f in s.__slots__}) for s in e.sources],
            level=e.level,
            threshold=e.threshold,
            created_at=e.created_at.isoformat(),
            sources_revoked=shown.sources_revoked,
            changed=shown.changed,
            withheld=shown.withheld,
            rating=None if shown.rating is None else Rating(shown.rating.rating),
            rating_comment=shown.comment,
        )


@strawberry.type
class PageInfo:
    end_cursor: str | None
    has_next_page: bool


@strawberry.type
class HistoryEdge:
    cursor: str
    node: HistoryEntry


@strawberry.type(description="The caller's history, newest first.")
class HistoryConnection:
    edges: list[HistoryEdge]
    page_info: PageInfo


@strawberry.type(description="A conversation's turns, oldest first.")
class Conversation:
    id: str
    turns: list[HistoryEntry]


@strawberry.type(description="A rating and the entry it rates, the entry as the reading admin may see it.")
class FeedbackEntry:
    query_id: str
    user_id: str
    rating: Rating
    comment: str = strawberry.field(description="Empty when withheld with the answer (see entry.withheld).")
    rated_at: str
    entry: HistoryEntry


@strawberry.type
class FeedbackEdge:
    cursor: str
    node: FeedbackEntry


@strawberry.type(description="A store's ratings, newest first (admin only).")
class FeedbackConnection:
    edges: list[FeedbackEdge]
    page_info: PageInfo


@strawberry.type(description="The caller's rating of one of their answers.")
class AnswerRating:
    query_id: str
    rating: Rating
    comment: str
    rated_at: str


def history(context: RequestContext, first: int | None, after: str | None) -> HistoryConnection:
    page = context.services.app.history.page(context.identity().caller(), first, after)
    edges = [HistoryEdge(cursor=Position.of(s.entry).cursor(), node=HistoryEntry.of(s)) for s in page.entries]
    end = edges[-1].cursor if edges else None
    return HistoryConnection(
        edges=edges, page_info=PageInfo(end_cursor=end, has_next_page=page.next_cursor is not None)
    )


def conversation(context: RequestContext, conversation_id: str) -> Conversation:
    turns = context.services.app.history.conversation(context.identity().caller(), conversation_id)
    return Conversation(id=conversation_id, turns=[HistoryEntry.of(t) for t in turns])


def feedback(context: RequestContext, store_id: str, first: int | None, after: str | None) -> FeedbackConnection:
    page: FeedbackPage = context.services.app.history.feedback(context.identity().caller(), store_id, first, after)
    edges = [
        FeedbackEdge(
            cursor=Position(f.created_at, f.query_id).cursor(),
            node=FeedbackEntry(
                query_id=f.query_id,
                user_id=f.user_id,
                rating=Rating(f.rating),
                comment=f.comment,
                rated_at=f.created_at.isoformat(),
                entry=HistoryEntry.of(s),
            ),
        )
        for f, s in page.items
    ]
    end = edges[-1].cursor if edges else None
    return FeedbackConnection(
        edges=edges, page_info=PageInfo(end_cursor=end, has_next_page=page.next_cursor is not None)
    )


def delete_history_entry(context: RequestContext, query_id: str) -> bool:
    context.services.app.history.delete_entry(context.identity().caller(), query_id)
    return True


def delete_conversation(context: RequestContext, conversation_id: str) -> int:
    return context.services.app.history.delete_conversation(context.identity().caller(), conversation_id)


def rate_answer(context: RequestContext, query_id: str, rating: Rating, comment: str | None) -> AnswerRating:
    f = context.services.app.history.rate(context.identity().caller(), query_id, rating.value, comment)
    return AnswerRating(
        query_id=f.query_id, rating=Rating(f.rating), comment=f.comment, rated_at=f.created_at.isoformat()
    )
