"""``startAdaptation`` / ``adaptation``: one entry for gRPC and GraphQL — start a store's adaptation in the
background, and read how far it is.

Only an admin may do either (``require_admin`` here, for every transport: the run trains on the store's
documents and installs a model that ranks every caller's sources). A start is recorded in the audit trail
(class ``adapt``: who, when, over which interface) before its thread starts; a start the audit trail cannot
record does not happen. The CLI's ``docqa adapt`` runs in the foreground and is the server's own
administrator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from service.adaptation.background import AdaptRequest, AdaptStatus
from service.domain.authorization import AdminOperation, HasRole, require_admin
from service.persistence.ports import AuditRecord

if TYPE_CHECKING:
    from service.adaptation.background import AdaptJobs
    from service.persistence.ports import SettingsRepository

#: The audit trail's class of an adaptation started through the servers.
ADAPT_AUDIT_CLASS = "adapt"


class AdaptationApp(Protocol):
    """What starting and reading an adaptation needs of the wiring (``service.bootstrap.App``)."""

    @property
    def repository(self) -> SettingsRepository: ...

    @property
    def adapt_jobs(self) -> AdaptJobs: ...


def start_adaptation(
    app: AdaptationApp, caller: HasRole, store_id: str, request: AdaptRequest, *, user_id: str, interface: str
) -> AdaptStatus:
    """The first status of a run of ``store_id`` now started in the background. PermissionDenied unless
    ``caller`` is an admin (before anything is read); InvalidArgument, NotFound, ResourceExhausted as
    ``AdaptJobs.start``."""
    require_admin(caller, AdminOperation.ADAPT_STORE)

    def audit(job_id: str, status: AdaptStatus) -> None:
        assert status.started_at is not None  # a started run has a start
        app.repository.record_audit(
            AuditRecord(
                query_id=job_id,
                user_id=user_id,
                store_id=status.store_id,
                query_class=ADAPT_AUDIT_CLASS,
                document_ids=(),
                chunk_ids=(),
                threshold=None,
                timings_ms={},
                outcome="OK",
                interface=interface,
                created_at=status.started_at,
                document_count=0,
                chunk_count=0,
            )
        )

    return app.adapt_jobs.start(store_id, request, user_id, on_start=audit)


def adaptation(app: AdaptationApp, caller: HasRole, store_id: str) -> AdaptStatus:
    """The store's adaptation as ``AdaptJobs.status`` tells it. PermissionDenied unless ``caller`` is an admin."""
    require_admin(caller, AdminOperation.ADAPT_STORE)
    return app.adapt_jobs.status(store_id)
