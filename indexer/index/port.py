"""The index port: where chunks and their vectors live, and how they are searched."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from acl.errors import InvalidArgument
from acl.model import Acl
from indexer.errors import IndexUnavailable
from indexer.index.attributes import EMPTY_METADATA
from indexer.index.filters import Filter

Vector = npt.NDArray[np.float32]


class DocumentsRejected(IndexUnavailable):
    """The index refused the chunks of some documents; it holds none of their chunks now.

    The other documents of the same ``upsert`` were written. The caller should
    report these documents and index them again later.
    """

    def __init__(self, message: str, document_ids: Sequence[str]) -> None:
        super().__init__(message)
        self.document_ids = tuple(document_ids)


@dataclass(frozen=True, slots=True)
class StoreSpec:
    """What an adapter needs to create a store's index."""

    store_id: str
    dimension: int


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """One chunk as stored in the index.

    ``chunk_id`` is deterministic (``f"{document_id}#{ordinal}"``), so
    re-indexing a document overwrites rather than duplicates. ``vector`` is
    L2-normalised float32 of the store's dimension; adapters may return hits
    with ``vector=None``. ``acl`` is a copy of the document's ACL, used only
    for filtering inside the search; the authoritative check happens later.
    ``pages`` are the 1-based PDF pages the chunk's text spans (``()`` when
    the document has no pages); ``anchor`` is the HTML ``id`` of the section
    or heading the chunk lies in (``""`` when none).

    The last four are what metadata filters read (``indexer.index.filters``):
    ``content_type`` is the document's media type (``""``: unknown);
    ``modified`` its modification time (a file's mtime, or what a push gave;
    None: unknown) and ``indexed_at`` when the chunk was written, both UTC at
    millisecond precision (``attributes.instant``); ``metadata`` the custom
    metadata the indexing API set, an immutable map (``attributes.frozen_metadata``).
    """

    chunk_id: str
    document_id: str
    ordinal: int
    text: str
    title: str
    source_uri: str
    heading_path: tuple[str, ...]
    start: int
    end: int
    acl: Acl
    vector: Vector | None = field(default=None, compare=False, repr=False)
    #: 1-based PDF pages the chunk's text spans; () when the document has no pages.
    pages: tuple[int, ...] = ()
    #: The HTML id of the section the chunk lies in; "" when none.
    anchor: str = ""
    content_type: str = ""
    modified: datetime | None = None
    indexed_at: datetime | None = None
    metadata: Mapping[str, str] = field(default_factory=lambda: EMPTY_METADATA, hash=False)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A chunk and its similarity to the query.

    ``score`` is cosine similarity in [-1, 1] on every adapter, so a store's
    thresholds mean the same whichever adapter holds it (``Index.lexical``
    alone answers BM25 scores).
    """

    chunk: ChunkRecord
    score: float


class Index(ABC):
    """A vector index holding the chunks of one or more stores.

    All methods take the store id; each store is independent. Results of
    ``knn`` and ``exact`` are sorted by descending score, ties by chunk id,
    and hold at most ``k`` hits, fewer only when fewer chunks match the filter.
    """

    @abstractmethod
    def ensure(self, store: StoreSpec) -> None:
        """Create the store's index if missing; refuse an incompatible one."""

    @abstractmethod
    def upsert(self, store_id: str, chunks: Sequence[ChunkRecord]) -> None:
        """Write chunks. For every document that has a chunk in ``chunks``, the
        given chunks become that document's complete set (older chunks of the
        document are removed), atomically per document."""

    @abstractmethod
    def delete_document(self, store_id: str, document_id: str) -> None:
        """Remove every chunk of the document (no error if there is none)."""

    @abstractmethod
    def set_document_acl(self, store_id: str, document_id: str, acl: Acl) -> None:
        """Replace the ACL copied into every chunk of the document."""

    @abstractmethod
    def knn(self, store_id: str, vector: Vector, k: int, filter: Filter) -> list[SearchHit]:
        """Approximate nearest neighbours among chunks matching ``filter``.

        The filter is applied inside the search: when at least ``k`` chunks
        match, ``k`` hits come back, however narrow the filter is."""

    @abstractmethod
    def exact(self, store_id: str, vector: Vector, k: int, filter: Filter) -> list[SearchHit]:
        """Exact nearest neighbours among chunks matching ``filter``."""

    @abstractmethod
    def lexical(self, store_id: str, text: str, k: int, filter: Filter) -> list[SearchHit]:
        """BM25 full-text search of the chunks' text (and title and headings) among chunks matching ``filter``.

        ``text`` is user text, reduced to plain words (``lexical.query_terms``): it is never query syntax, and
        text with no searchable word gives ``[]``. The filter is applied inside the search, as in ``knn``:
        when ``k`` matching chunks contain a word, ``k`` hits come back. ``score`` is the engine's BM25 score
        (higher is better, not a cosine); hits are sorted by descending score, ties by chunk id, and each
        carries its ``chunk.vector`` (L2-normalised float32) so the caller can compute the cosine."""

    def best_per_document(self, store_id: str, vector: Vector, documents: int, filter: Filter) -> list[SearchHit]:
        """The best chunk (exact score) of each document with a chunk matching ``filter``, best document first,
        at most ``documents`` of them (ties by chunk id).

        The default ranks every matching chunk; an adapter with a server overrides it with one bounded request.
        """
        if isinstance(documents, bool) or not isinstance(documents, int) or documents < 1:
            raise InvalidArgument(f"documents must be a positive integer, got {documents!r}")
        best: dict[str, SearchHit] = {}
        for hit in self.exact(store_id, vector, max(self.count(store_id, filter), 1), filter):
            best.setdefault(hit.chunk.document_id, hit)
        return list(best.values())[:documents]

    @abstractmethod
    def document_chunks(self, store_id: str, document_id: str, filter: Filter) -> list[ChunkRecord]:
        """Every chunk of ``document_id`` that matches ``filter``, ordered by ordinal (ties by chunk id), each
        with its L2-normalised float32 ``vector``.

        The caller passes the ACL filter and the document filter itself (defense in depth: the document id
        alone never selects what ``filter`` does not allow). Reads are bounded per request; a document of any
        length comes back whole."""

    @abstractmethod
    def count(self, store_id: str, filter: Filter | None = None) -> int:
        """Number of chunks matching ``filter`` (all chunks when ``None``)."""

    @abstractmethod
    def drop(self, store_id: str) -> None:
        """Delete the store's index and everything in it."""

    def ping(self) -> None:  # noqa: B027 - optional hook
        """Raise ``IndexUnavailable`` if the index cannot serve queries right now (one quick attempt, no retries).

        For readiness probes. The default, for an index that lives in this process, does nothing.
        """

    def refresh(self, store_id: str) -> None:  # noqa: B027 - optional hook
        """Make every write so far visible to searches now (the indexer calls it once at the end of a run).

        Writes become visible on their own shortly after (OpenSearch refreshes every second); the
        default, for an index that lives in this process, does nothing.
        """

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources; the default does nothing."""
