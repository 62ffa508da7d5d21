"""``AdminService.StartAdaptation`` and ``GetAdaptation``: requests to ``AdaptRequest``, statuses to messages."""

from __future__ import annotations

from service.adaptation.background import AdaptRequest, AdaptStatus
from service.api.grpc.stubs import admin_pb2


def adapt_request(options: admin_pb2.AdaptationOptions) -> AdaptRequest:
    """The ``AdaptationOptions`` message as a request (no principals: the server's default)."""
    return AdaptRequest(
        principals=tuple(options.principals) or None,
        all_content=options.all_content,
        max_queries=options.max_queries if options.HasField("max_queries") else None,
        layers=options.layers if options.HasField("layers") else None,
        epochs=options.epochs if options.HasField("epochs") else None,
    )


def adaptation_message(s: AdaptStatus) -> admin_pb2.Adaptation:
    """``Adaptation`` of ``s``."""
    return admin_pb2.Adaptation(
        store_id=s.store_id,
        state=admin_pb2.AdaptationState.Value(f"ADAPTATION_STATE_{s.state.name}"),
        phase=s.phase,
        done=s.done,
        total=s.total,
        started_at="" if s.started_at is None else s.started_at.isoformat(),
        finished_at="" if s.finished_at is None else s.finished_at.isoformat(),
        started_by=s.started_by or "",
        message=s.message,
        installed=s.installed,
        error=s.error or "",
    )
