"""The engine's summary and comparison classes: validated requests in, results out, misconfiguration hidden."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from acl.errors import ConfigurationError, Unavailable
from service.domain.analysis import (
    Comparison,
    ComparisonRequest,
    Summary,
    SummaryRequest,
    compared_ids,
    comparison_question,
    parse_length,
)
from service.domain.limits import Limits
from service.domain.store import Store
from service.generation.port import Generator
from service.query.cancellation import Cancellation
from service.query.comparison import Comparing
from service.query.context import QueryContext
from service.query.retrieval import Retrieval
from service.query.summary import Summarizing

log = logging.getLogger("docqa.query")

#: All a caller learns of a language model that is misconfigured (as for queries).
LANGUAGE_MODEL_UNAVAILABLE = "the language model is unavailable"


@contextmanager
def _model_errors(store: Store) -> Iterator[None]:
    try:
        yield
    except ConfigurationError as exc:
        # The operator's to fix, and it may name a URL, a model or a project: the log gets it, the caller not.
        log.error("store %s: the language model is misconfigured: %s", store.id, exc.message)
        raise Unavailable(LANGUAGE_MODEL_UNAVAILABLE) from None


class Analysis:
    """Validates summary and comparison requests, then hands them to their query class."""

    def __init__(self, retrieval: Retrieval, generator: Generator, link_allowlist: Sequence[str] = ()) -> None:
        self._summarizing = Summarizing(retrieval, generator, link_allowlist)
        self._comparing = Comparing(retrieval, generator, link_allowlist)

    def summarize(
        self,
        store: Store,
        principals: frozenset[str],
        limits: Limits,
        request: SummaryRequest,
        on_text: Callable[[str], None] | None,
        cancel: Cancellation | None,
    ) -> Summary:
        [document_id] = limits.document_ids([request.document_id])
        length = parse_length(request.length)
        ctx = QueryContext(store, "", None, principals)
        with _model_errors(store):
            return self._summarizing.summarize(
                ctx, document_id, length, on_text, cancel, limits.max_sentences, limits.max_compared_chunks
            )

    def compare(
        self,
        store: Store,
        principals: frozenset[str],
        limits: Limits,
        request: ComparisonRequest,
        on_text: Callable[[str], None] | None,
        cancel: Cancellation | None,
    ) -> Comparison:
        ids = compared_ids(request.document_ids, limits.max_document_id_chars)
        question = comparison_question(request.question)
        ctx = QueryContext(store, question or "", None, principals)
        with _model_errors(store):
            return self._comparing.compare(ctx, ids, question, on_text, cancel, limits.max_compared_chunks)
