"""``AdminService.StartAdaptation`` and ``GetAdaptation``: requests to ``AdaptRequest``, statuses to messages."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from service.adaptation.background import AdaptRequest, AdaptStatus


def adapt_request(options: Any) -> AdaptRequest:
    """The ``AdaptationOptions`` message as a request (no principals: the server's default)."""
    return AdaptRequest(
        principals=tuple(options.principals) or None,
        all_content=options.all_content,
        max_queries=options.max_queries if options.HasField("max_queries") else None,
        layers=options.layers if options.HasField("layers") else None,
        epochs=options.epochs if options.HasField("epochs") else None,
    )


def adaptation_message(admin: ModuleType, s: AdaptStatus) -> Any:
    """``Adaptation`` of ``s`` (``admin``: the generated ``admin_pb2`` module)."""
    return admin.Adaptation(
        store_id=s.store_id,
        state=admin.AdaptationState.Value(f"ADAPTATION_STATE_{s.state.name}"),
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
