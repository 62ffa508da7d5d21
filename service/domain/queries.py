"""The three query classes, the caller, and the answer they produce."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acl.directory import GroupDirectory, expand_principals
from acl.model import user_principal
from indexer.source_uris import shown_source_uri

NO_RELEVANT_DOCUMENT = (
    "I'm unable to answer your question because there is no relevant document available to provide context."
)
NO_ANSWER_GENERATED = "No answer was generated; the sources found are listed below."


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is asking: a user id, groups vouched for by a verified token, and roles."""

    user_id: str
    asserted_groups: tuple[str, ...] = ()
    is_admin: bool = False

    @property
    def principal(self) -> str:
        return user_principal(self.user_id)

    def principals(self, directory: GroupDirectory, store_id: str | None = None) -> frozenset[str]:
        """The caller's principal set: user, transitive groups, token groups, everyone.

        With ``store_id``, groups of that store's own manifest count too (never another store's).
        """
        return expand_principals(self.principal, directory.memberships(store_id), self.asserted_groups)


@dataclass(frozen=True, slots=True)
class VectorQuery:
    """A question over the whole store (ANN with the caller's ACL inside the search)."""

    store_id: str
    question: str
    level: float | None = None
    max_chunks: int | None = None
    perform_llm_query: bool = True


@dataclass(frozen=True, slots=True)
class MultiDocumentQuery:
    """A question over chosen documents (exact kNN restricted to them).

    ``max_chunks = -1`` sends the whole documents instead of chunks.
    """

    store_id: str
    question: str
    document_ids: tuple[str, ...]
    level: float | None = None
    max_chunks: int | None = None
    perform_llm_query: bool = True


@dataclass(frozen=True, slots=True)
class DocumentQuery:
    """A question about one document: its whole text while it fits the model's budget."""

    store_id: str
    question: str
    document_id: str
    level: float | None = None
    perform_llm_query: bool = True


Query = VectorQuery | MultiDocumentQuery | DocumentQuery


@dataclass(frozen=True, slots=True)
class SourceChunk:
    """A chunk an answer is based on, with its raw score and 0-1 relevance."""

    document_id: str
    chunk_id: str
    title: str
    source_uri: str
    text: str
    heading_path: tuple[str, ...]
    score: float | None
    relevance: float | None
    start: int
    end: int

    def to_dict(self, *, local: bool = False) -> dict[str, Any]:
        """The one presentation of a source chunk. Remote callers see http(s) source URIs only;
        ``local`` (the CLI, on the server) shows ``file:`` URIs too (``indexer.source_uris``)."""
        return {
            "document_id": self.document_id,
            "chunk_id": self.chunk_id,
            "title": self.title,
            "source_uri": shown_source_uri(self.source_uri, local=local),
            "text": self.text,
            "heading_path": list(self.heading_path),
            "score": self.score,
            "relevance": self.relevance,
            "start": self.start,
            "end": self.end,
        }


@dataclass(frozen=True, slots=True)
class Answer:
    """What every query class returns."""

    query_id: str
    query_class: str
    answer: str | None
    chunks: tuple[SourceChunk, ...]
    threshold: float | None
    level: float | None
    no_relevant_document: bool
    retry_without_threshold_allowed: bool
    model_id: str | None = None
    llm_called: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)
    #: Why no answer was generated although one was asked for (the language model
    #: failed, or not even the best source fits its window); None otherwise.
    generation_error: str | None = None
    #: What a reader should know about the answer text (citations of sources that do not exist
    #: were removed, sentences that cite no source, …); empty when nothing is amiss.
    warnings: tuple[str, ...] = ()

    def to_dict(self, *, local: bool = False) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "query_class": self.query_class,
            "answer": self.answer,
            "chunks": [c.to_dict(local=local) for c in self.chunks],
            "threshold": self.threshold,
            "level": self.level,
            "no_relevant_document": self.no_relevant_document,
            "retry_without_threshold_allowed": self.retry_without_threshold_allowed,
            "model_id": self.model_id,
            "llm_called": self.llm_called,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "timings_ms": {k: round(v, 3) for k, v in self.timings_ms.items()},
            "generation_error": self.generation_error,
            "warnings": list(self.warnings),
        }
