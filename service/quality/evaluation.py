"""``docqa eval``: a store scored on a question set, as its users would meet it.

Each question runs twice through the query engine, as the given caller:
once for retrieval (no threshold, no language model, ``depth`` chunks) to find
the rank of the first expected document among the documents of the ranked
chunks, and once as a user asks it (the store's level, the store's language
model) to see whether it is answered or refused and whether the answer quotes
a key term. Metrics: hit@1, hit@5, MRR over answerable questions; hit@3 over
those that name an exact identifier (``identifier: true``); the share
of answerable questions answered and of unanswerable ones refused (near the
domain and off it, apart); key-term presence; passage recall (the answer
holds a piece of the answering passage); answers carrying extraction debris
(HTML character references, letter-spaced or glued-together words); retrieval
latency percentiles.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from acl.errors import InvalidArgument, NotFound
from service.domain.queries import Caller, VectorQuery
from service.persistence.ports import DocumentCatalog, SettingsRepository
from service.quality.questions import EvalQuestion, QuestionSet
from service.query.engine import QueryEngine

#: Chunks fetched by the retrieval run: enough for five distinct documents in practice.
DEFAULT_DEPTH = 20
#: What text extraction leaves in an answer that a reader should never see: a character reference
#: ("&lt;"), a word set letter by letter ("A r c h i t e c t u r e"), words run together ("Thisdocumentmaybe").
DEBRIS = re.compile(
    r"&(?:[A-Za-z]{2,8}|#\d{1,7}|#x[0-9A-Fa-f]{1,6});|(?<!\w)(?:[A-Za-z] ){4,}[A-Za-z](?!\w)|[a-z]{26,}"
)


def has_debris(text: str) -> bool:
    """Whether ``text`` holds extraction debris (``DEBRIS``)."""
    return DEBRIS.search(text) is not None


@dataclass(frozen=True, slots=True)
class QuestionResult:
    """How one question fared."""

    id: str
    line: int
    question: str
    unanswerable: bool
    expected: tuple[str, ...]
    #: Documents in rank order, as the retrieval run returned them (first appearance of each).
    ranked: tuple[str, ...]
    #: 1-based rank of the first expected document among ``ranked``; None when absent (or unanswerable).
    rank: int | None
    #: Whether the question as a user asks it was answered (not refused for want of a relevant document).
    answered: bool
    answer: str | None
    #: Whether the answer quotes one of the question's key terms; None without terms or for unanswerable ones.
    term_found: bool | None
    top_score: float | None
    retrieval_ms: float
    warnings: tuple[str, ...] = ()
    #: Whether the answer holds a piece of the answering passage; None without a passage or when unanswerable.
    passage_found: bool | None = None
    near: bool = False
    #: Whether the answer carries extraction debris (``DEBRIS``).
    debris: bool = False
    #: Whether the question names an exact identifier (``EvalQuestion.identifier``).
    identifier: bool = False


@dataclass(frozen=True, slots=True)
class EvalSummary:
    questions: int
    answerable: int
    unanswerable: int
    hit_at_1: float
    hit_at_5: float
    mrr: float
    #: Share of answerable questions answered at the level used.
    answered: float
    #: Share of unanswerable questions refused at the level used.
    refused: float
    #: Share of answerable questions with key terms whose answer quotes one (None: no terms anywhere).
    terms: float | None
    retrieval_p50_ms: float
    retrieval_p95_ms: float
    #: Share of answerable questions with a passage whose answer holds a piece of it (None: no passages).
    passages: float | None = None
    #: Share of unanswerable questions near the domain refused, and of those off it (None: none such).
    refused_near: float | None = None
    refused_off: float | None = None
    #: Answers (of all questions) carrying extraction debris.
    debris: int = 0
    #: Share of the questions naming an exact identifier whose expected document is among the first three
    #: (None: no such question).
    identifier_hit_at_3: float | None = None
    #: How many questions name an exact identifier.
    identifier_questions: int = 0


@dataclass(frozen=True, slots=True)
class EvalReport:
    store_id: str
    questions_file: str
    level: float | None
    summary: EvalSummary
    results: tuple[QuestionResult, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "store_id": self.store_id,
            "questions_file": self.questions_file,
            "level": self.level,
            "summary": asdict(self.summary),
            "results": [asdict(r) for r in self.results],
        }


def check_documents(catalog: DocumentCatalog, store_id: str, questions: QuestionSet) -> None:
    """InvalidArgument naming the line of the first expected document the store does not hold."""
    known: dict[str, bool] = {}
    for question in questions.questions:
        for document_id in question.documents:
            if document_id not in known:
                known[document_id] = catalog.get_document(store_id, document_id) is not None
            if not known[document_id]:
                raise InvalidArgument(
                    f"{questions.path}:{question.line}: question {question.id!r} expects document "
                    f"{document_id!r}, which store {store_id!r} does not hold"
                )


def evaluate(
    engine: QueryEngine,
    catalog: SettingsRepository,
    caller: Caller,
    store_id: str,
    questions: QuestionSet,
    *,
    level: float | None = None,
    depth: int = DEFAULT_DEPTH,
    on_result: Callable[[QuestionResult], None] | None = None,
) -> EvalReport:
    """Score ``store_id`` on ``questions`` as ``caller``; nothing is changed. NotFound for an unknown store,
    InvalidArgument (naming the line) for a question expecting a document the store does not hold."""
    if catalog.get_store(store_id) is None:
        raise NotFound(f"store {store_id!r} not found")
    check_documents(catalog, store_id, questions)
    results: list[QuestionResult] = []
    for question in questions.questions:
        try:
            result = _run(engine, caller, store_id, question, level, depth)
        except InvalidArgument as exc:  # a question the engine refuses (too long, ...): name its line
            raise InvalidArgument(f"{questions.path}:{question.line}: {exc.message}") from None
        results.append(result)
        if on_result is not None:
            on_result(result)
    return EvalReport(store_id, questions.path, level, summarize(results), tuple(results))


def _run(
    engine: QueryEngine, caller: Caller, store_id: str, question: EvalQuestion, level: float | None, depth: int
) -> QuestionResult:
    retrieved = engine.ask(caller, VectorQuery(store_id, question.question, 0.0, depth, perform_llm_query=False))
    ranked = tuple(dict.fromkeys(c.document_id for c in retrieved.chunks))
    rank = None
    if not question.unanswerable:
        positions = [ranked.index(d) + 1 for d in question.documents if d in ranked]
        rank = min(positions) if positions else None
    asked = engine.ask(caller, VectorQuery(store_id, question.question, level))
    answered = not asked.no_relevant_document
    term_found, passage_found = judge(question, asked.answer if answered else None)
    scores = [c.score for c in retrieved.chunks if c.score is not None]
    return QuestionResult(
        id=question.id,
        line=question.line,
        question=question.question,
        unanswerable=question.unanswerable,
        expected=question.documents,
        ranked=ranked[:10],
        rank=rank,
        answered=answered,
        answer=asked.answer,
        term_found=term_found,
        top_score=max(scores) if scores else None,
        retrieval_ms=retrieved.timings_ms.get("total", 0.0),
        warnings=(*retrieved.warnings, *(w for w in asked.warnings if w not in retrieved.warnings)),
        passage_found=passage_found,
        near=question.near,
        debris=has_debris(asked.answer or ""),
        identifier=question.identifier,
    )


def judge(question: EvalQuestion, answer: str | None) -> tuple[bool | None, bool | None]:
    """Whether ``answer`` (None: refused) quotes one of the question's key terms, and a piece of its passage;
    None for either when the question has none (or is unanswerable)."""
    if question.unanswerable:
        return None, None
    text = answer or ""
    term_found = any(t.casefold() in text.casefold() for t in question.terms) if question.terms else None
    passage_found = bool(question.quotes_passage(text)) if question.passages else None
    return term_found, passage_found


def summarize(results: list[QuestionResult]) -> EvalSummary:
    """The metrics of a run (shares in [0, 1]; 0 where a group is empty)."""
    answerable = [r for r in results if not r.unanswerable]
    unanswerable = [r for r in results if r.unanswerable]
    with_terms = [r for r in answerable if r.term_found is not None]
    with_passages = [r for r in answerable if r.passage_found is not None]
    near = [r for r in unanswerable if r.near]
    off = [r for r in unanswerable if not r.near]
    identifier = [r for r in answerable if r.identifier]
    times = sorted(r.retrieval_ms for r in results) or [0.0]

    def share(items: list[QuestionResult], test: Callable[[QuestionResult], bool]) -> float:
        return sum(1 for r in items if test(r)) / len(items) if items else 0.0

    return EvalSummary(
        questions=len(results),
        answerable=len(answerable),
        unanswerable=len(unanswerable),
        hit_at_1=share(answerable, lambda r: r.rank == 1),
        hit_at_5=share(answerable, lambda r: r.rank is not None and r.rank <= 5),
        mrr=sum(1.0 / r.rank for r in answerable if r.rank) / len(answerable) if answerable else 0.0,
        answered=share(answerable, lambda r: r.answered),
        refused=share(unanswerable, lambda r: not r.answered),
        terms=share(with_terms, lambda r: bool(r.term_found)) if with_terms else None,
        retrieval_p50_ms=statistics.median(times),
        retrieval_p95_ms=times[min(len(times) - 1, round(0.95 * (len(times) - 1)))],
        passages=share(with_passages, lambda r: bool(r.passage_found)) if with_passages else None,
        refused_near=share(near, lambda r: not r.answered) if near else None,
        refused_off=share(off, lambda r: not r.answered) if off else None,
        debris=sum(1 for r in results if r.debris),
        identifier_hit_at_3=share(identifier, lambda r: r.rank is not None and r.rank <= 3) if identifier else None,
        identifier_questions=len(identifier),
    )
