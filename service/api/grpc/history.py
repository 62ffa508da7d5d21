"""``docqa.v1.HistoryService``: the caller's history, conversations and ratings; a store's ratings for admins."""

from __future__ import annotations

from typing import Any

import grpc

from acl.errors import InvalidArgument
from service.api.grpc.context import Services, rpc
from service.domain.history import Feedback, ShownEntry

_RATINGS = {1: "UP", 2: "DOWN"}


def _rating_number(feedback: Feedback | None) -> int:
    return 0 if feedback is None else (1 if feedback.rating == "UP" else 2)


def entry_message(services: Services, shown: ShownEntry) -> Any:
    stubs, e = services.stubs.history, shown.entry
    message = stubs.HistoryEntry(
        query_id=e.query_id,
        conversation_id=e.conversation_id,
        store_id=e.store_id,
        query_class=e.query_class,
        question=e.question,
        sources=[
            stubs.HistorySource(**{k: v for k, v in ((f, getattr(s, f)) for f in s.__slots__) if v is not None})
            for s in e.sources
        ],
        created_at=e.created_at.isoformat(),
        sources_revoked=shown.sources_revoked,
        changed=shown.changed,
        rating=_rating_number(shown.rating),
    )
    for name, value in (
        ("rewritten_question", e.rewritten_question),
        ("answer", e.answer),
        ("level", e.level),
        ("threshold", e.threshold),
        ("rating_comment", shown.comment),
        ("withheld", shown.withheld),
    ):
        if value is not None:
            setattr(message, name, value)
    return message


class HistoryServicer:
    """Parses, calls the history service for the verified caller, and answers."""

    def __init__(self, services: Services) -> None:
        self.services = services

    def _caller(self, context: grpc.ServicerContext) -> Any:
        return self.services.identity(context).caller()

    @rpc
    def ListHistory(self, request: Any, context: grpc.ServicerContext) -> Any:
        page = self.services.app.history.page(
            self._caller(context), request.page_size or None, request.page_token or None
        )
        return self.services.stubs.history.ListHistoryResponse(
            entries=[entry_message(self.services, s) for s in page.entries], next_page_token=page.next_cursor or ""
        )

    @rpc
    def GetConversation(self, request: Any, context: grpc.ServicerContext) -> Any:
        turns = self.services.app.history.conversation(self._caller(context), request.conversation_id)
        return self.services.stubs.history.Conversation(
            conversation_id=request.conversation_id, turns=[entry_message(self.services, s) for s in turns]
        )

    @rpc
    def DeleteHistoryEntry(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.services.app.history.delete_entry(self._caller(context), request.query_id)
        return self.services.stubs.history.DeleteHistoryEntryResponse()

    @rpc
    def DeleteConversation(self, request: Any, context: grpc.ServicerContext) -> Any:
        deleted = self.services.app.history.delete_conversation(self._caller(context), request.conversation_id)
        return self.services.stubs.history.DeleteConversationResponse(deleted=deleted)

    @rpc
    def RateAnswer(self, request: Any, context: grpc.ServicerContext) -> Any:
        rating = _RATINGS.get(request.rating)
        if rating is None:
            raise InvalidArgument("rating must be UP or DOWN")
        f = self.services.app.history.rate(self._caller(context), request.query_id, rating, request.comment)
        return self.services.stubs.history.AnswerRating(
            query_id=f.query_id, rating=_rating_number(f), comment=f.comment, rated_at=f.created_at.isoformat()
        )

    @rpc
    def ListFeedback(self, request: Any, context: grpc.ServicerContext) -> Any:
        page = self.services.app.history.feedback(
            self._caller(context), request.store_id, request.page_size or None, request.page_token or None
        )
        stubs = self.services.stubs.history
        return stubs.ListFeedbackResponse(
            feedback=[
                stubs.FeedbackEntry(
                    query_id=f.query_id,
                    user_id=f.user_id,
                    rating=_rating_number(f),
                    comment=f.comment,
                    rated_at=f.created_at.isoformat(),
                    entry=entry_message(self.services, s),
                )
                for f, s in page.items
            ],
            next_page_token=page.next_cursor or "",
        )
