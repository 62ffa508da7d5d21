"""``AdminService.ExplainAccess``: an access explanation (a document's, or a question's chunks) as its proto message."""

from __future__ import annotations

from service.access.explain import Explanation, Principal
from service.access.explain_query import QueryExplanation
from service.api.grpc.stubs import admin_pb2, common_pb2
from service.persistence.ports import ADMIN_SOURCE


def explanation_message(result: Explanation) -> admin_pb2.ExplainAccessResponse:
    """``result`` as an ``ExplainAccessResponse``."""
    view = result.acl
    reply = admin_pb2.ExplainAccessResponse(
        user_id=result.user,
        store_id=view.store_id,
        document_id=view.document_id,
        readable=result.readable,
        reason=result.reason,
        acl=common_pb2.Acl(allow=sorted(view.effective.allow), deny=sorted(view.effective.deny)),
        acl_source=view.source,
        principals=_held(result.principals),
    )
    if result.deciding is not None:
        reply.deciding_entry = result.deciding
    if view.source == ADMIN_SOURCE:
        reply.acl_changed_by = view.changed_by or ""
        reply.acl_changed_at = "" if view.changed_at is None else view.changed_at.isoformat()
    return reply


def question_message(result: QueryExplanation) -> admin_pb2.ExplainAccessResponse:
    """``result`` (the question form) as an ``ExplainAccessResponse``: chunks, and no document fields."""
    reply = admin_pb2.ExplainAccessResponse(
        user_id=result.user, store_id=result.store_id, principals=_held(result.principals)
    )
    for chunk in result.chunks:
        message = reply.chunks.add(
            chunk_id=chunk.chunk_id,
            document_id=chunk.document_id,
            visible=chunk.visible,
            reason=chunk.explanation.reason,
        )
        if chunk.score is not None:
            message.score = chunk.score
        if chunk.relevance is not None:
            message.relevance = chunk.relevance
        if chunk.explanation.deciding is not None:
            message.deciding_entry = chunk.explanation.deciding
    return reply


def _held(principals: tuple[Principal, ...]) -> list[admin_pb2.HeldPrincipal]:
    return [
        admin_pb2.HeldPrincipal(
            principal=p.principal,
            path=p.path(),
            chain=[admin_pb2.MembershipLink(member=k.member, group=k.group, source=k.source) for k in p.chain],
        )
        for p in principals
    ]
