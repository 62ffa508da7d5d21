"""Summaries and comparisons asked through the servers, audited like queries (ids and counts, never text)."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from service.domain.analysis import Comparison, ComparisonRequest, Summary, SummaryRequest
from service.domain.history import HistoryEntry
from service.persistence.ports import AuditRecord
from service.query.cancellation import Cancellation
from service.security.tokens import Identity
from service.usecases.audit import (
    AUDIT_CHUNK_IDS,
    AUDIT_DOCUMENT_IDS,
    AuditedQueries,
    bounded_ids,
    record_answer,
)

R = TypeVar("R", Summary, Comparison)

log = logging.getLogger("docqa.audit")


@dataclass
class AuditedAnalysis:
    """The engine's ``summarize`` and ``compare`` for a verified identity, with an audit row and metrics each."""

    queries: AuditedQueries

    def summarize(
        self,
        identity: Identity,
        request: SummaryRequest,
        interface: str,
        on_text: Callable[[str], None] | None = None,
        cancel: Cancellation | None = None,
    ) -> Summary:
        return self._audited(
            identity,
            "summary",
            request.store_id,
            [request.document_id],
            interface,
            lambda keep: self.queries.engine().summarize(identity.caller(), request, on_text, cancel, keep),
            cancel,
        )

    def compare(
        self,
        identity: Identity,
        request: ComparisonRequest,
        interface: str,
        on_text: Callable[[str], None] | None = None,
        cancel: Cancellation | None = None,
    ) -> Comparison:
        ids = list(request.document_ids) if isinstance(request.document_ids, tuple | list) else []
        return self._audited(
            identity,
            "comparison",
            request.store_id,
            ids,
            interface,
            lambda keep: self.queries.engine().compare(identity.caller(), request, on_text, cancel, keep),
            cancel,
        )

    def _audited(
        self,
        identity: Identity,
        name: str,
        store_id: object,
        ids: Sequence[object],
        interface: str,
        work: Callable[[Callable[[HistoryEntry], None]], R],
        cancel: Cancellation | None,
    ) -> R:
        """``work(keep)``: the engine's call, handing its history entry to ``keep``; it is written with the audit
        row, in one transaction. A result its caller no longer wants (``cancel``) is audited CANCELLED or
        DEADLINE_EXCEEDED and not kept in history."""
        started = time.perf_counter()
        documents, document_count = bounded_ids(ids, AUDIT_DOCUMENT_IDS)
        kept: list[HistoryEntry] = []
        try:
            result = work(kept.append)
            if cancel is not None:
                cancel.check()
        except (Exception, KeyboardInterrupt) as exc:  # Ctrl-C: audited CANCELLED, nothing kept in history
            self._record(
                identity, name, store_id, documents, document_count, interface, self.queries.outcome_of(exc), started
            )
            raise
        self.queries.metrics.query_latency.labels(name).observe(time.perf_counter() - started)
        chunks, chunk_count = bounded_ids([c.chunk_id for c in result.sources], AUDIT_CHUNK_IDS)
        record = AuditRecord(
            query_id=result.query_id,
            user_id=identity.user_id,
            store_id=str(store_id)[:63],
            query_class=name,
            document_ids=documents,
            chunk_ids=chunks,
            threshold=None,
            timings_ms=dict(result.timings_ms),
            outcome="OK" if result.generation_error is None else "OK_NO_ANSWER",
            interface=interface,
            created_at=datetime.now(UTC),
            document_count=document_count,
            chunk_count=chunk_count,
        )
        record_answer(
            self.queries.repository(),
            record,
            kept,
            lambda outcome: self._record(
                identity, name, store_id, documents, document_count, interface, outcome, started, result.query_id
            ),
            self.queries.outcome_of,
        )
        return self.queries.shown(identity, result)

    def _record(
        self,
        identity: Identity,
        name: str,
        store_id: object,
        documents: tuple[str, ...],
        document_count: int,
        interface: str,
        outcome: str,
        started: float,
        query_id: str | None = None,
    ) -> None:
        """A failure's audit row (``query_id``: the result's, when it was made but could not be kept); if that
        cannot be written either, the caller gets the original error (logged)."""
        try:
            self.queries.repository().record_audit(
                AuditRecord(
                    query_id=query_id or str(uuid.uuid4()),
                    user_id=identity.user_id,
                    store_id=str(store_id)[:63],
                    query_class=name,
                    document_ids=documents,
                    chunk_ids=(),
                    threshold=None,
                    timings_ms={"total": (time.perf_counter() - started) * 1000},
                    outcome=outcome,
                    interface=interface,
                    created_at=datetime.now(UTC),
                    document_count=document_count,
                    chunk_count=0,
                )
            )
        except Exception:
            log.exception("could not write the audit record of a failed %s", name)
