"""The three query classes, the caller, and the answer they produce."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from acl.directory import GroupDirectory, expand_by_level
from acl.model import user_principal
from indexer.source_uris import shown_source_uri
from service.domain.filters import MetadataFilter
from service.domain.source_links import source_link

NO_RELEVANT_DOCUMENT = (
    "I'm unable to answer your question because there is no relevant document available to provide context."
)
NO_ANSWER_GENERATED = "No answer was generated; the sources found are listed below."


def unmentioned_warning(terms: Sequence[str]) -> str:
    """What an answer says when the question names something no readable document mentions."""
    names = ", ".join(f"“{t}”" for t in terms)
    return f"no document you can read mentions {names}: the documents found are about something else"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is asking: a user id, groups vouched for by a verified token, and roles."""

    user_id: str
    asserted_groups: tuple[str, ...] = ()
    is_admin: bool = False
    #: May read other users' conversations (read-only, sources still re-checked against its own rights):
    #: the token role ``history.audit_role``, or ``docqa history show --audit`` on the server.
    history_auditor: bool = False

    @property
    def principal(self) -> str:
        return user_principal(self.user_id)

    def principals(self, directory: GroupDirectory, store_id: str | None = None) -> frozenset[str]:
        """The caller's principal set: user, transitive groups, token groups, everyone.

        With ``store_id``, groups of that store's own manifest count too (never another store's).
        """
        return expand_by_level(
            self.principal, lambda members: directory.groups_of(members, store_id), self.asserted_groups
        )


@dataclass(frozen=True, slots=True)
class VectorQuery:
    """A question over the whole store (ANN with the caller's ACL inside the search)."""

    store_id: str
    question: str
    level: float | None = None
    max_chunks: int | None = None
    perform_llm_query: bool = True
    #: Metadata conditions ANDed with the caller's access inside the search.
    filters: MetadataFilter | None = None
    #: An earlier conversation of the caller's to continue; None starts a new one (``service.history``).
    conversation_id: str | None = None


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
    #: Metadata conditions: a named document that does not match them gives no chunk.
    filters: MetadataFilter | None = None
    conversation_id: str | None = None


@dataclass(frozen=True, slots=True)
class DocumentQuery:
    """A question about one document: its whole text while it fits the model's budget."""

    store_id: str
    question: str
    document_id: str
    level: float | None = None
    perform_llm_query: bool = True
    #: Metadata conditions: a document that does not match them gives no chunk.
    filters: MetadataFilter | None = None
    conversation_id: str | None = None


Query = VectorQuery | MultiDocumentQuery | DocumentQuery


@dataclass(frozen=True, slots=True)
class SourceChunk:
    """A chunk an answer is based on, with its raw score and 0-1 relevance.

    ``pages``: the 1-based PDF pages its text spans (() without pages); ``anchor``: the HTML ``id`` of
    its section ("" when none); ``link``: where a remote reader opens it (``service.domain.source_links``),
    None when there is no such place (a ``file:`` path of the indexing host without a base URL).
    """

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
    pages: tuple[int, ...] = ()
    anchor: str = ""
    link: str | None = None

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
            "pages": list(self.pages),
            "anchor": self.anchor,
            "link": self.link,
        }


@dataclass(frozen=True, slots=True)
class SourceDocument:
    """The sources of an answer from one document: its best score and relevance, the pages its
    chunks span, a link to the document (no fragment), and its chunks in the answer's rank order."""

    document_id: str
    title: str
    source_uri: str
    link: str | None
    best_score: float | None
    best_relevance: float | None
    pages: tuple[int, ...]
    chunks: tuple[SourceChunk, ...]

    def to_dict(self, *, local: bool = False) -> dict[str, Any]:
        """The one presentation of a document's sources; ``local`` as in ``SourceChunk.to_dict``."""
        return {
            "document_id": self.document_id,
            "title": self.title,
            "source_uri": shown_source_uri(self.source_uri, local=local),
            "link": self.link,
            "best_score": self.best_score,
            "best_relevance": self.best_relevance,
            "pages": list(self.pages),
            "chunks": [c.to_dict(local=local) for c in self.chunks],
        }


def group_by_document(chunks: Sequence[SourceChunk], base_url: str | None) -> tuple[SourceDocument, ...]:
    """``chunks`` grouped per document: groups in the order of each document's first chunk, chunks
    within a group in their order in ``chunks``. Only these chunks are read: a group holds nothing else."""
    groups: dict[str, list[SourceChunk]] = {}
    for chunk in chunks:
        groups.setdefault(chunk.document_id, []).append(chunk)
    return tuple(_document(members, base_url) for members in groups.values())


def _document(chunks: list[SourceChunk], base_url: str | None) -> SourceDocument:
    first = chunks[0]
    scores = [c.score for c in chunks if c.score is not None]
    relevances = [c.relevance for c in chunks if c.relevance is not None]
    link = source_link(first.document_id, first.source_uri, base_url=base_url) or first.link
    return SourceDocument(
        document_id=first.document_id,
        title=first.title,
        source_uri=first.source_uri,
        link=link,
        best_score=max(scores, default=None),
        best_relevance=max(relevances, default=None),
        pages=tuple(sorted({p for c in chunks for p in c.pages})),
        chunks=tuple(chunks),
    )


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
    #: The same chunks grouped per document (``group_by_document``), in rank order of each first chunk.
    documents: tuple[SourceDocument, ...] = ()
    #: What a reader should know about the answer text (citations of sources that do not exist
    #: were removed, sentences that cite no source, …); empty when nothing is amiss.
    warnings: tuple[str, ...] = ()
    #: The conversation this answer is a turn of (new when the query named none); None outside history.
    conversation_id: str | None = None
    #: What was searched when a follow-up was rewritten from the conversation's earlier turns.
    rewritten_question: str | None = None

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
            "documents": [d.to_dict(local=local) for d in self.documents],
            "warnings": list(self.warnings),
            "conversation_id": self.conversation_id,
            "rewritten_question": self.rewritten_question,
        }
