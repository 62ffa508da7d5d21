"""``docqa.v1.HistoryService``: the caller's history, conversations and ratings; a store's ratings for admins."""

from __future__ import annotations

import grpc

from acl.errors import InvalidArgument
from service.api.grpc.context import Services, rpc
from service.api.grpc.stubs import history_pb2, history_pb2_grpc
from service.domain.history import Feedback, ShownEntry
from service.domain.queries import Caller

_RATINGS = {history_pb2.UP: "UP", history_pb2.DOWN: "DOWN"}


def _rating_number(feedback: Feedback | None) -> history_pb2.Rating.ValueType:
    if feedback is None:
        return history_pb2.RATING_UNSPECIFIED
    return history_pb2.UP if feedback.rating == "UP" else history_pb2.DOWN


def entry_message(services: Services, shown: ShownEntry) -> history_pb2.HistoryEntry:
    e = shown.entry
    message = history_pb2.HistoryEntry(
        query_id=e.query_id,
        conversation_id=e.conversation_id,
        store_id=e.store_id,
        query_class=e.query_class,
        question=e.question,
        sources=[
            history_pb2.HistorySource(**{k: v for k, v in ((f, getattr(s, f)) for f in s.__slots__) if v is not None})
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


class HistoryServicer(history_pb2_grpc.HistoryServiceServicer):
    """Parses, calls the history service for the verified caller, and answers."""

    def __init__(self, services: Services) -> None:
        self.services = services

    def _caller(self, context: grpc.ServicerContext) -> Caller:
        return self.services.identity(context).caller()

    @rpc
    def ListHistory(
        self, request: history_pb2.ListHistoryRequest, context: grpc.ServicerContext
    ) -> history_pb2.ListHistoryResponse:
        page = self.services.app.history.page(
            self._caller(context), request.page_size or None, request.page_token or None
        )
        return history_pb2.ListHistoryResponse(
            entries=[entry_message(self.services, s) for s in page.entries], next_page_token=page.next_cursor or ""
        )

    @rpc
    def GetConversation(
        self, request: history_pb2.GetConversationRequest, context: grpc.ServicerContext
    ) -> history_pb2.Conversation:
        turns = self.services.app.history.conversation(self._caller(context), request.conversation_id)
        return history_pb2.Conversation(
            conversation_id=request.conversation_id, turns=[entry_message(self.services, s) for s in turns]
        )

    @rpc
    def DeleteHistoryEntry(
        self, request: history_pb2.DeleteHistoryEntryRequest, context: grpc.ServicerContext
    ) -> history_pb2.DeleteHistoryEntryResponse:
        self.services.app.history.delete_entry(self._caller(context), request.query_id)
        return history_pb2.DeleteHistoryEntryResponse()

    @rpc
    def DeleteConversation(
        self, request: history_pb2.DeleteConversationRequest, context: grpc.ServicerContext
    ) -> history_pb2.DeleteConversationResponse:
        deleted = self.services.app.history.delete_conversation(self._caller(context), request.conversation_id)
        return history_pb2.DeleteConversationResponse(deleted=deleted)

    @rpc
    def RateAnswer(
        self, request: history_pb2.RateAnswerRequest, context: grpc.ServicerContext
    ) -> history_pb2.AnswerRating:
        rating = _RATINGS.get(request.rating)
        if rating is None:
            raise InvalidArgument("rating must be UP or DOWN")
        f = self.services.app.history.rate(self._caller(context), request.query_id, rating, request.comment)
        return history_pb2.AnswerRating(
            query_id=f.query_id, rating=_rating_number(f), comment=f.comment, rated_at=f.created_at.isoformat()
        )

    @rpc
    def ListFeedback(
        self, request: history_pb2.ListFeedbackRequest, context: grpc.ServicerContext
    ) -> history_pb2.ListFeedbackResponse:
        page = self.services.app.history.feedback(
            self._caller(context), request.store_id, request.page_size or None, request.page_token or None
        )
        return history_pb2.ListFeedbackResponse(
            feedback=[
                history_pb2.FeedbackEntry(
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
