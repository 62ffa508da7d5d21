"""The summary and comparison query classes: their requests, their bounds and the results they produce."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from acl.errors import InvalidArgument
from service.domain.limits import check_document_id, storable_text
from service.domain.queries import SourceChunk, SourceDocument

#: Documents one comparison takes, at least and at most.
MIN_COMPARED, MAX_COMPARED = 2, 5
#: The longest question a comparison may be ranked by (the same bound as a query's question).
MAX_COMPARISON_QUESTION_CHARS = 4000


def evenly(count: int, budget: int) -> list[int]:
    """Positions of ``count`` items to consider: all of them within ``budget``, else ``budget`` of them spread
    evenly over the whole, in order."""
    if count <= budget:
        return list(range(count))
    return [i * count // budget for i in range(budget)]


def long_document(considered: int, total: int, unit: str, document_id: str | None = None) -> str:
    """The warning of a result whose budget cut a document: how much of it was considered."""
    which = "the document" if document_id is None else f"document {document_id}"
    return f"{which} is long: {considered} of {total} {unit} were considered"


class SummaryLength(Enum):
    """How long a summary is: sentences in the whole summary, sentences per section, tokens per map step."""

    SHORT = "short"
    MEDIUM = "medium"
    LONG = "long"

    @property
    def sentences(self) -> int:
        """Sentences the whole summary has at most."""
        return {"short": 5, "medium": 12, "long": 30}[self.value]

    @property
    def section_sentences(self) -> int:
        """Sentences one section's own summary has at most."""
        return {"short": 1, "medium": 2, "long": 4}[self.value]

    @property
    def tokens(self) -> int:
        """Tokens the whole summary aims at (the language model's target; the extractive one counts sentences)."""
        return {"short": 120, "medium": 300, "long": 700}[self.value]


def parse_length(value: object) -> SummaryLength:
    """``value`` (a SummaryLength or its name in any case; None = MEDIUM) as a SummaryLength."""
    if value is None:
        return SummaryLength.MEDIUM
    if isinstance(value, SummaryLength):
        return value
    if isinstance(value, str) and value.strip().lower() in {m.value for m in SummaryLength}:
        return SummaryLength(value.strip().lower())
    raise InvalidArgument("length must be one of short, medium, long")


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """Summarise one document the caller may read."""

    store_id: str
    document_id: str
    length: SummaryLength | str | None = None


@dataclass(frozen=True, slots=True)
class ComparisonRequest:
    """Compare 2-5 documents the caller may read, topics ranked by ``question`` when given."""

    store_id: str
    document_ids: tuple[str, ...]
    question: str | None = None


def compared_ids(ids: Sequence[object], max_id_chars: int) -> list[str]:
    """The ids of a comparison, in order: 2-5 distinct non-empty strings, else InvalidArgument."""
    if isinstance(ids, str) or not isinstance(ids, Sequence):
        raise InvalidArgument("document ids must be a list")
    if not MIN_COMPARED <= len(ids) <= MAX_COMPARED:
        raise InvalidArgument(f"a comparison takes {MIN_COMPARED} to {MAX_COMPARED} document ids, got {len(ids)}")
    for document_id in ids:
        check_document_id(document_id, max_id_chars)
    if len(set(ids)) != len(ids):
        raise InvalidArgument("a document id appears twice in the comparison")
    return [str(i) for i in ids]


def comparison_question(question: object) -> str | None:
    """The question a comparison is ranked by, stripped (None or blank = none); InvalidArgument when too long."""
    if question is None:
        return None
    if not isinstance(question, str):
        raise InvalidArgument("question must be a string")
    if len(question) > MAX_COMPARISON_QUESTION_CHARS:
        raise InvalidArgument(f"question is longer than {MAX_COMPARISON_QUESTION_CHARS} characters")
    storable_text(question, "question")
    return question.strip() or None


@dataclass(frozen=True, slots=True)
class SummarySection:
    """One section of a summarised document (consecutive chunks under one heading path) and what was said of it.

    ``citation`` is the number the summary text cites it by (``[n]``); ``summary`` is the section's own
    summary (its most central sentences, or the language model's map step)."""

    citation: int
    heading_path: tuple[str, ...]
    chunk_ids: tuple[str, ...]
    pages: tuple[int, ...]
    anchor: str
    link: str | None
    summary: str
    cited: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "citation": self.citation,
            "heading_path": list(self.heading_path),
            "chunk_ids": list(self.chunk_ids),
            "pages": list(self.pages),
            "anchor": self.anchor,
            "link": self.link,
            "summary": self.summary,
            "cited": self.cited,
        }


@dataclass(frozen=True, slots=True)
class Summary:
    """A document's summary. ``extractive``: its sentences are quoted from the document, not written by a model;
    ``method``: ``whole`` (the whole text in one prompt), ``map_reduce`` or ``extractive``."""

    query_id: str
    document_id: str
    title: str
    length: str
    summary: str
    extractive: bool
    method: str
    sections: tuple[SummarySection, ...]
    sources: tuple[SourceChunk, ...]
    documents: tuple[SourceDocument, ...]
    model_id: str | None = None
    llm_called: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    generation_error: str | None = None

    @property
    def sections_covered(self) -> int:
        """Sections the summary text cites."""
        return sum(1 for s in self.sections if s.cited)

    def to_dict(self, *, local: bool = False) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "query_class": "summary",
            "document_id": self.document_id,
            "title": self.title,
            "length": self.length,
            "summary": self.summary,
            "extractive": self.extractive,
            "method": self.method,
            "sections": [s.to_dict() for s in self.sections],
            "sections_covered": self.sections_covered,
            **_outcome(self, local),
        }


@dataclass(frozen=True, slots=True)
class TopicEntry:
    """What one document says about a topic: its best chunk (cited as ``[citation]``) and the quoted statement."""

    document_id: str
    citation: int
    chunk: SourceChunk
    similarity: float
    statement: str

    def to_dict(self, *, local: bool = False) -> dict[str, Any]:
        return {
            "document_id": self.document_id,
            "citation": self.citation,
            "chunk": self.chunk.to_dict(local=local),
            "similarity": self.similarity,
            "statement": self.statement,
        }


@dataclass(frozen=True, slots=True)
class ComparisonTopic:
    """Chunks of the compared documents that speak of one thing. ``only_in``: the one document that has it
    (None when two or more do); ``relevance``: cosine of the topic to the question (None without one)."""

    label: str
    entries: tuple[TopicEntry, ...]
    only_in: str | None
    relevance: float | None

    def to_dict(self, *, local: bool = False) -> dict[str, Any]:
        return {
            "label": self.label,
            "documents": [e.document_id for e in self.entries],
            "entries": [e.to_dict(local=local) for e in self.entries],
            "only_in": self.only_in,
            "relevance": self.relevance,
        }


@dataclass(frozen=True, slots=True)
class Comparison:
    """A comparison of documents by topic. ``comparison`` is the written comparison (every statement cites
    ``[n]``, the n-th of ``sources``); ``extractive``: quoted statements, no model wrote it."""

    query_id: str
    document_ids: tuple[str, ...]
    question: str | None
    topics: tuple[ComparisonTopic, ...]
    comparison: str
    extractive: bool
    sources: tuple[SourceChunk, ...]
    documents: tuple[SourceDocument, ...]
    model_id: str | None = None
    llm_called: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    generation_error: str | None = None

    def to_dict(self, *, local: bool = False) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "query_class": "comparison",
            "document_ids": list(self.document_ids),
            "question": self.question,
            "topics": [t.to_dict(local=local) for t in self.topics],
            "comparison": self.comparison,
            "extractive": self.extractive,
            **_outcome(self, local),
        }


def _outcome(result: Summary | Comparison, local: bool) -> dict[str, Any]:
    """What a summary's and a comparison's presentations share: sources, documents and how the result was made."""
    return {
        "sources": [c.to_dict(local=local) for c in result.sources],
        "documents": [d.to_dict(local=local) for d in result.documents],
        "model_id": result.model_id,
        "llm_called": result.llm_called,
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "timings_ms": {k: round(v, 3) for k, v in result.timings_ms.items()},
        "warnings": list(result.warnings),
        "generation_error": result.generation_error,
    }
