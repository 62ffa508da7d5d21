"""The one way to read a store's indexed content and document text on a caller's behalf.

``CallerIndex`` is built from the store, the caller's principal set and the authoritative access check. Every
search it runs has the caller's ACL filter inside it (ANDed with the scope, never replaced by it), and what
the index returns comes out only through ``checked``, which drops every hit whose document the authoritative
source (``acl.checker``) does not let the caller read now: a revocation the index copy has not seen yet is
dropped. The decisions are kept for the object's life (one query), so a document asked about twice costs one
statement, and asking first and reading after (NOT_FOUND before any work) costs no second one.

``StoreWideReads`` is the one other reader, and it is named for what it is: a store's calibration reads every
chunk whatever its ACL (its report is numbers only, and a store's scale serves every caller of the store).

No other module under ``service/`` calls the ``Index`` port's read methods (``READ_METHODS``):
``tests/unit/test_guarded_reads.py`` walks the code and fails on a new direct call.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from acl.checker import AccessChecker
from acl.errors import NotFound
from indexer.index import ChunkRecord, Filter, Index, SearchHit, acl_filter, and_, documents_filter
from indexer.index.port import Vector
from service.domain.filters import MetadataFilter, restrict
from service.persistence.ports import AccessRepository, DocumentCatalog

#: The ``Index`` port's read methods: only this module calls them.
READ_METHODS = frozenset({"knn", "exact", "lexical", "best_per_document", "document_chunks", "count"})
#: Every chunk of a store: no chunk id is left out (the store-wide reads' filter).
ALL_CHUNKS: Filter = {"field": "chunk_id", "operator": "not in", "value": []}


@dataclass(frozen=True, slots=True)
class Within:
    """What a read is narrowed to besides the caller's access: some documents (None: the whole store) and the
    caller's metadata filters. Neither can widen the access filter: both are ANDed with it."""

    documents: tuple[str, ...] | None = None
    filters: MetadataFilter | None = None


class Found:
    """What one search returned, not yet checked: its hits come out only through ``CallerIndex.checked``.

    ``fetched`` and ``last_score`` (the index's own list: how many, the last one's score) tell whether asking
    for more could find more; they never reach the caller."""

    __slots__ = ("_hits", "fetched", "last_score")

    def __init__(self, hits: list[SearchHit]) -> None:
        self._hits = hits
        self.fetched = len(hits)
        self.last_score: float | None = hits[-1].score if hits else None

    def reaches(self, asked: int, threshold: float | None) -> bool:
        """Whether the list, cut at ``asked``, may go on with hits at or above ``threshold``."""
        full = self.fetched >= asked and self.last_score is not None
        return full and (threshold is None or (self.last_score is not None and self.last_score >= threshold))


@dataclass(frozen=True, slots=True)
class Checked:
    """Each searched list with only the hits the caller may read now; ``dropped``: some were not."""

    lists: tuple[list[SearchHit], ...]
    dropped: bool


class CallerIndex:
    """One store's indexed content as one caller may read it, for one query."""

    def __init__(
        self,
        *,
        index: Index,
        checker: AccessChecker,
        catalog: DocumentCatalog,
        store_id: str,
        principals: frozenset[str],
        decided: dict[str, bool] | None = None,
    ) -> None:
        """``decided``: the authoritative decisions made so far for this query (document id → readable),
        shared by every ``CallerIndex`` of the query; a new one when None."""
        self._index = index
        self._checker = checker
        self._catalog = catalog
        self._store_id = store_id
        self._principals = principals
        self._acl = acl_filter(principals)
        self._decided = {} if decided is None else decided

    @property
    def store_id(self) -> str:
        return self._store_id

    def filter(self, within: Within) -> Filter:
        """The caller's ACL filter AND the scope (documents, then metadata): what every search runs under."""
        access = self._acl if within.documents is None else and_(self._acl, documents_filter(within.documents))
        return restrict(access, within.filters)

    # The authoritative check.

    def readable(self, document_ids: Iterable[str]) -> frozenset[str]:
        """The documents of ``document_ids`` the caller may read now (the source is asked once per document
        and query; one it does not know is not readable)."""
        wanted = set(document_ids)
        unknown = wanted.difference(self._decided)
        if unknown:
            allowed = self._checker.readable(self._store_id, self._principals, unknown)
            self._decided.update((d, d in allowed) for d in unknown)
        return frozenset(d for d in wanted if self._decided[d])

    def require_readable(self, document_ids: Sequence[str]) -> None:
        """NotFound for the first document the caller may not read, in the words used for one that does not
        exist."""
        readable = self.readable(document_ids)
        for document_id in document_ids:
            if document_id not in readable:
                raise NotFound(f"document {document_id!r} not found in store {self._store_id!r}")

    def checked(self, *found: Found) -> Checked:
        """The hits of each search whose document the caller may read now, in their order (one statement for
        all of them, none when every document was decided already)."""
        readable = self.readable({h.chunk.document_id for f in found for h in f._hits})
        lists = tuple([h for h in f._hits if h.chunk.document_id in readable] for f in found)
        return Checked(lists, sum(len(kept) for kept in lists) < sum(f.fetched for f in found))

    # Searches: the ACL inside, the hits out only through ``checked``.

    def approximate(self, vector: Vector, k: int, within: Within) -> Found:
        """Approximate nearest neighbours (ANN) among the chunks the caller may read within the scope."""
        return Found(self._index.knn(self._store_id, vector, k, self.filter(within)))

    def exhaustive(self, vector: Vector, k: int, within: Within) -> Found:
        """Exact nearest neighbours among the chunks the caller may read within the scope."""
        return Found(self._index.exact(self._store_id, vector, k, self.filter(within)))

    def keyword(self, text: str, k: int, within: Within) -> Found:
        """BM25 search of ``text`` among the chunks the caller may read within the scope."""
        return Found(self._index.lexical(self._store_id, text, k, self.filter(within)))

    def best_of_each(self, vector: Vector, documents: int, within: Within) -> Found:
        """The best chunk of each of at most ``documents`` documents the caller may read within the scope."""
        return Found(self._index.best_per_document(self._store_id, vector, documents, self.filter(within)))

    # Whole documents.

    def chunks_of(self, document_id: str, filters: MetadataFilter | None = None) -> list[ChunkRecord]:
        """Every chunk of a document the caller may read (NotFound otherwise), in order."""
        self.require_readable([document_id])
        scope = Within((document_id,), filters)
        chunks = self._index.document_chunks(self._store_id, document_id, self.filter(scope))
        return [c for c in chunks if c.document_id == document_id]

    def whole_document(self, document_id: str, score: float) -> SearchHit:
        """The document's whole extracted text as one hit (``<id>#all``; ``score`` NaN = unknown); NotFound
        unless the caller may read it."""
        self.require_readable([document_id])
        document = self._catalog.get_document(self._store_id, document_id)
        if document is None:
            raise NotFound(f"document {document_id!r} not found in store {self._store_id!r}")
        return SearchHit(
            ChunkRecord(
                chunk_id=f"{document_id}#all",
                document_id=document_id,
                ordinal=0,
                text=document.text,
                title=document.title,
                source_uri=document.source_uri,
                heading_path=(),
                start=0,
                end=len(document.text),
                acl=document.acl,
            ),
            score,
        )


class StoreWideReads:
    """Every chunk of one store, whatever its ACL: for calibrating the store's relevancy scale only.

    Calibration stays store-wide by contract (README, *Calibrating the relevancy scale*: "scored by its best
    cosine over all chunks (the calibration is an admin's)"): the scale serves every caller of the store, so it
    is measured on all of its content, and the report holds numbers only, never a probe or a chunk's text.
    Only ``service.query.calibration`` builds one, after the admin check of ``service.usecases.calibration``."""

    def __init__(self, index: Index, store_id: str) -> None:
        self._index = index
        self._store_id = store_id

    def chunk_count(self) -> int:
        """Chunks in the store; 0 for a store never indexed."""
        try:
            return self._index.count(self._store_id)
        except NotFound:
            return 0

    def document_hits(self, vector: Vector, k: int, document_id: str) -> list[SearchHit]:
        """The ``k`` chunks of one document nearest ``vector`` (exact)."""
        return self._index.exact(self._store_id, vector, k, documents_filter([document_id]))

    def nearest(self, vector: Vector, k: int) -> list[SearchHit]:
        """The ``k`` chunks of the store nearest ``vector`` (approximate)."""
        return self._index.knn(self._store_id, vector, k, ALL_CHUNKS)


class TrainingReads:
    """The content a store's adapted reranker may learn from (``docqa adapt``), and nothing else.

    A model trained on a chunk is a weak channel to that chunk for whoever it later ranks for, so by default it
    learns only from what every caller of the store may read: the documents the principal set ``principals``
    (``group:everyone`` unless an admin names a wider-read group) may read, through a ``CallerIndex`` for them,
    so every search and every chunk passes the same ACL filter and authoritative check as a caller's query; and
    of those, only the documents whose authoritative ACL denies nobody (``group:everyone`` may read a document
    that denies ``user:bob``: every caller of the store may not). ``everything`` (an admin's documented opt-in)
    reads every chunk of the store whatever its ACL."""

    def __init__(
        self,
        *,
        index: Index,
        checker: AccessChecker,
        catalog: DocumentCatalog,
        access: AccessRepository,
        store_id: str,
        principals: frozenset[str],
        everything: bool = False,
    ) -> None:
        self._index = index
        self._catalog = catalog
        self._access = access
        self._in_scope: frozenset[str] | None = None
        self._store_id = store_id
        self.everything = everything
        self.principals = principals
        self._caller = CallerIndex(
            index=index, checker=checker, catalog=catalog, store_id=store_id, principals=principals
        )

    @property
    def scope(self) -> str:
        """What the model learns from, in words (kept in its manifest)."""
        return "all content" if self.everything else "readable by " + ", ".join(sorted(self.principals))

    def documents(self) -> list[str]:
        """The ids of the store's documents in scope, sorted."""
        ids = sorted(d.id for d in self._catalog.list_documents(self._store_id))
        if not self.everything:
            readable = self._caller.readable(ids)
            acls = self._access.acls(self._store_id, readable)
            ids = [d for d in ids if d in readable and d in acls and not acls[d].deny]
        self._in_scope = frozenset(ids)
        return ids

    def _scope(self) -> frozenset[str]:
        return self._in_scope if self._in_scope is not None else frozenset(self.documents())

    def chunks_of(self, document_id: str) -> list[ChunkRecord]:
        """A document's chunks in order (NotFound for one out of scope)."""
        if not self.everything:
            if document_id not in self._scope():
                raise NotFound(f"document {document_id!r} not found in store {self._store_id!r}")
            return self._caller.chunks_of(document_id)
        scope = documents_filter([document_id])
        chunks = self._index.document_chunks(self._store_id, document_id, scope)
        return [c for c in chunks if c.document_id == document_id]

    def nearest(self, vector: Vector, k: int) -> list[SearchHit]:
        """The ``k`` chunks in scope nearest ``vector`` (approximate)."""
        if self.everything:
            return self._index.knn(self._store_id, vector, k, ALL_CHUNKS)
        hits = self._caller.checked(self._caller.approximate(vector, k, Within())).lists[0]
        return [h for h in hits if h.chunk.document_id in self._scope()]

    def keyword(self, text: str, k: int) -> list[SearchHit]:
        """BM25's ``k`` best chunks in scope for ``text``."""
        if self.everything:
            return self._index.lexical(self._store_id, text, k, ALL_CHUNKS)
        hits = self._caller.checked(self._caller.keyword(text, k, Within())).lists[0]
        return [h for h in hits if h.chunk.document_id in self._scope()]
