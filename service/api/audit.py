"""Every query the servers answer, audited and measured; the audit trail, read back per caller.

Both entry points (gRPC and GraphQL) ask through ``AuditedQueries`` so that a
query is recorded once, the same way, whatever the interface: query id, user,
store, class, documents in scope, chunks returned, threshold, timings, outcome.
The question and any text are never stored.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from acl.errors import DocQAError, InvalidArgument, PermissionDenied
from service.api.errors import mapping_for
from service.domain.queries import Answer, DocumentQuery, MultiDocumentQuery, Query, VectorQuery
from service.observability.metrics import Metrics
from service.persistence.ports import AuditLog, AuditRecord
from service.query.cancellation import Cancellation
from service.query.engine import QueryEngine
from service.security.tokens import Identity

log = logging.getLogger("docqa.audit")

MAX_AUDIT_LIMIT = 1000
_CLASS = {VectorQuery: "vector", MultiDocumentQuery: "multi_document", DocumentQuery: "document"}


def query_class(query: Query) -> str:
    return _CLASS[type(query)]


def _scope(query: Query) -> tuple[str, ...]:
    if isinstance(query, MultiDocumentQuery):
        return tuple(str(d) for d in query.document_ids)[:1000]
    if isinstance(query, DocumentQuery):
        return (str(query.document_id),)
    return ()


@dataclass
class AuditedQueries:
    """Asks the engine for a verified identity, then writes the audit record and the metrics."""

    engine: Callable[[], QueryEngine]
    repository: Callable[[], AuditLog]
    metrics: Metrics

    def ask(
        self,
        identity: Identity,
        query: Query,
        interface: str,
        on_text: Callable[[str], None] | None = None,
        cancel: Cancellation | None = None,
    ) -> Answer:
        """The engine's answer; the record is written (outcome = status name) whether it succeeds or not.

        ``on_text`` receives the answer text as the generator streams it; ``cancel``
        stops the query once its caller went away (outcome CANCELLED or DEADLINE_EXCEEDED).
        """
        name = query_class(query)
        started = time.perf_counter()
        try:
            answer = self.engine().ask(identity.caller(), query, on_text, cancel)
        except DocQAError as exc:
            self._record_failure(identity, query, name, interface, mapping_for(exc).grpc_status, started)
            raise
        except Exception:
            self._record_failure(identity, query, name, interface, "INTERNAL", started)
            raise
        self.metrics.query_latency.labels(name).observe(time.perf_counter() - started)
        generate_ms = answer.timings_ms.get("generate")
        if answer.llm_called and generate_ms is not None:
            self.metrics.llm_latency.observe(generate_ms / 1000)
        self.repository().record_audit(
            AuditRecord(
                query_id=answer.query_id,
                user_id=identity.user_id,
                store_id=query.store_id,
                query_class=name,
                document_ids=_scope(query),
                chunk_ids=tuple(c.chunk_id for c in answer.chunks),
                threshold=answer.threshold,
                timings_ms=dict(answer.timings_ms),
                outcome="OK" if answer.generation_error is None else "OK_NO_ANSWER",
                interface=interface,
                created_at=datetime.now(UTC),
            )
        )
        if not identity.authenticated:
            log.warning("query %s answered for an unauthenticated caller", answer.query_id)
        return answer

    def _record_failure(
        self, identity: Identity, query: Query, name: str, interface: str, outcome: str, started: float
    ) -> None:
        elapsed = (time.perf_counter() - started) * 1000
        try:
            self.repository().record_audit(
                AuditRecord(
                    query_id=str(uuid.uuid4()),
                    user_id=identity.user_id,
                    store_id=str(query.store_id)[:63],
                    query_class=name,
                    document_ids=_scope(query),
                    chunk_ids=(),
                    threshold=None,
                    timings_ms={"total": elapsed},
                    outcome=outcome,
                    interface=interface,
                    created_at=datetime.now(UTC),
                )
            )
        except Exception:  # the caller gets the original error; the audit failure is logged
            log.exception("could not write the audit record of a failed query")

    def entries(self, identity: Identity, user_id: str | None = None, limit: int = 100) -> list[AuditRecord]:
        """A caller's own records; an admin may read anyone's (``user_id``) or all (None)."""
        if isinstance(limit, bool) or not 1 <= limit <= MAX_AUDIT_LIMIT:
            raise InvalidArgument(f"limit must be between 1 and {MAX_AUDIT_LIMIT}")
        if not identity.is_admin:
            if user_id not in (None, "", identity.user_id):
                raise PermissionDenied("only an admin may read another user's audit entries")
            user_id = identity.user_id
        return self.repository().audit_records(user_id or None, limit)
