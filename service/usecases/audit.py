"""Every query the servers answer, audited and measured; the audit trail, read back per caller.

Both entry points (gRPC and GraphQL) ask through ``AuditedQueries`` so that a
query is recorded once, the same way, whatever the interface: query id, user,
store, class, documents in scope, chunks returned, threshold, timings, outcome.
The question and any text are never stored, and a row is bounded whatever the
request held: the ids a request named are kept as their count and the first
few, each cut to a bounded length, so a rejected 15 MB request leaves a row of
a few kilobytes.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from acl.errors import InvalidArgument
from indexer.index.attributes import parse_instant
from service.domain.analysis import Comparison, Summary
from service.domain.authorization import AdminOperation, require_admin
from service.domain.history import HistoryEntry
from service.domain.queries import Answer, DocumentQuery, MultiDocumentQuery, Query, VectorQuery
from service.observability.metrics import Metrics
from service.persistence.ports import AuditLog, AuditRecord
from service.query.cancellation import Cancellation
from service.query.disclosure import shown_to
from service.query.engine import QueryEngine
from service.security.tokens import Identity

log = logging.getLogger("docqa.audit")
R = TypeVar("R", Answer, Summary, Comparison)

MAX_AUDIT_LIMIT = 1000
#: Document ids an audit row keeps of a request's scope (the count keeps the rest).
AUDIT_DOCUMENT_IDS = 20
#: Chunk ids an audit row keeps of an answer's sources (a store answers with at most 100).
AUDIT_CHUNK_IDS = 100
#: The longest id an audit row keeps whole; a longer one is cut and ends with "…".
AUDIT_ID_CHARS = 200
_CLASS = {VectorQuery: "vector", MultiDocumentQuery: "multi_document", DocumentQuery: "document"}


def query_class(query: Query) -> str:
    return _CLASS[type(query)]


def bounded_ids(ids: Sequence[object], keep: int) -> tuple[tuple[str, ...], int]:
    """The first ``keep`` ids, each at most AUDIT_ID_CHARS long, and how many there were."""
    first = tuple(str(i) for i in ids[:keep])
    cut = tuple(i if len(i) <= AUDIT_ID_CHARS else i[: AUDIT_ID_CHARS - 1] + "…" for i in first)
    return cut, len(ids)


def _scope(query: Query) -> tuple[tuple[str, ...], int]:
    if isinstance(query, MultiDocumentQuery):
        return bounded_ids(query.document_ids, AUDIT_DOCUMENT_IDS)
    if isinstance(query, DocumentQuery):
        return bounded_ids((query.document_id,), AUDIT_DOCUMENT_IDS)
    return (), 0


#: A failure's audit outcome: the status name the entry points' one error table gives it
#: (``service.api.errors.outcome_of``, handed in by the transport that builds the use case).
Outcome = Callable[[BaseException], str]


def record_answer(
    repository: AuditLog,
    record: AuditRecord,
    history: Sequence[HistoryEntry],
    failed: Callable[[str], None],
    outcome_of: Outcome,
) -> None:
    """An answer's audit ``record`` and its ``history`` entries in one transaction: both kept, or neither. When
    they cannot be written, ``failed(outcome)`` leaves the failure's audit row in their place (the answer's text
    may have been streamed already), and the error goes on to the caller."""
    try:
        repository.record_audit(record, history=history)
    except Exception as exc:
        failed(outcome_of(exc))
        raise


def _store(query: Query) -> str:
    return str(query.store_id)[:63]  # unvalidated on a rejected request


@dataclass
class AuditedQueries:
    """Asks the engine for a verified identity, then writes the audit record and the metrics."""

    engine: Callable[[], QueryEngine]
    repository: Callable[[], AuditLog]
    metrics: Metrics
    #: The CLI on the server: its operator may read the audit trail, so results keep their timings.
    operator: bool = False
    #: The audit outcome of a failure (``service.api.errors.outcome_of``).
    outcome_of: Outcome = field(kw_only=True)

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
        kept: list[HistoryEntry] = []  # the answer's history entry, written with its audit row
        try:
            answer = self.engine().ask(identity.caller(), query, on_text, cancel, keep=kept.append)
            if cancel is not None:
                cancel.check()  # an answer nobody waits for any more is audited as such, and not kept
        except (Exception, KeyboardInterrupt) as exc:  # Ctrl-C: audited CANCELLED, nothing kept in history
            self._record_failure(identity, query, name, interface, self.outcome_of(exc), started)
            raise
        self.metrics.query_latency.labels(name).observe(time.perf_counter() - started)
        generate_ms = answer.timings_ms.get("generate")
        if answer.llm_called and generate_ms is not None:
            self.metrics.llm_latency.observe(generate_ms / 1000)
        documents, document_count = _scope(query)
        chunks, chunk_count = bounded_ids([c.chunk_id for c in answer.chunks], AUDIT_CHUNK_IDS)
        record = AuditRecord(
            query_id=answer.query_id,
            user_id=identity.user_id,
            store_id=_store(query),
            query_class=name,
            document_ids=documents,
            chunk_ids=chunks,
            threshold=answer.threshold,
            timings_ms=dict(answer.timings_ms),
            outcome="OK" if answer.generation_error is None else "OK_NO_ANSWER",
            interface=interface,
            created_at=datetime.now(UTC),
            document_count=document_count,
            chunk_count=chunk_count,
        )
        record_answer(
            self.repository(),
            record,
            kept,
            lambda outcome: self._record_failure(identity, query, name, interface, outcome, started, answer.query_id),
            self.outcome_of,
        )
        if not identity.authenticated:
            log.warning("query %s answered for an unauthenticated caller", answer.query_id)
        return self.shown(identity, answer)

    def shown(self, identity: Identity, result: R) -> R:
        """``result`` as its caller sees it: the audit row keeps the timings; a non-admin is not shown them."""
        return result if self.operator else shown_to(identity, result)

    def _record_failure(
        self,
        identity: Identity,
        query: Query,
        name: str,
        interface: str,
        outcome: str,
        started: float,
        query_id: str | None = None,
    ) -> None:
        """A failed query's audit row; ``query_id``: the answer's, when the answer was made (and perhaps streamed)
        but could not be kept, so that the row and what the caller saw share an id."""
        elapsed = (time.perf_counter() - started) * 1000
        try:
            documents, document_count = _scope(query)
            self.repository().record_audit(
                AuditRecord(
                    query_id=query_id or str(uuid.uuid4()),
                    user_id=identity.user_id,
                    store_id=_store(query),
                    query_class=name,
                    document_ids=documents,
                    chunk_ids=(),
                    threshold=None,
                    timings_ms={"total": elapsed},
                    outcome=outcome,
                    interface=interface,
                    created_at=datetime.now(UTC),
                    document_count=document_count,
                    chunk_count=0,
                )
            )
        except Exception:  # the caller gets the original error; the audit failure is logged
            log.exception("could not write the audit record of a failed query")

    def entries(
        self,
        identity: Identity,
        user_id: str | None = None,
        limit: int = 100,
        since: str | None = None,
        until: str | None = None,
    ) -> list[AuditRecord]:
        """A caller's own records; an admin may read anyone's (``user_id``) or all (None).

        ``since`` and ``until`` (ISO-8601; inclusive) bound when the queries were made; a bare date is a
        whole UTC day, so ``until: 2024-05-01`` includes that day.
        """
        if isinstance(limit, bool) or not 1 <= limit <= MAX_AUDIT_LIMIT:
            raise InvalidArgument(f"limit must be between 1 and {MAX_AUDIT_LIMIT}")
        if not identity.is_admin:
            if user_id not in (None, "", identity.user_id):
                require_admin(identity, AdminOperation.READ_OTHERS_AUDIT)
            user_id = identity.user_id
        start = None if since is None else parse_instant(since, "since")
        end = None if until is None else _end_of(until)
        if start is not None and end is not None and end <= start:
            raise InvalidArgument("until must not be before since")
        return self.repository().audit_records(user_id or None, limit, start, end)


def _end_of(until: str) -> datetime | None:
    """The first instant after ``until``: the next midnight for a bare date (2024-05-01 or 20240501), else a
    millisecond later; None (no bound) when that is past the calendar's end."""
    instant = parse_instant(until, "until")
    whole_day = not any(mark in until for mark in ("T", "t", " ", ":"))
    try:
        return instant + (timedelta(days=1) if whole_day else timedelta(milliseconds=1))
    except OverflowError:
        return None
