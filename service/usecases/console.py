"""What the web console asks besides the queries: a store's readable documents (the document picker) and the
admin's relevancy preview.

The picker lists only documents the caller may read, decided by the same access check every query runs; a
store where they may read nothing is NOT_FOUND, as for every other operation. The preview is an ordinary
vector query (the admin's own rights, audited, kept out of history) with no threshold, each chunk marked with
the highest level at which it would still pass, so that a slider can show the effect of a level at once.
GraphQL presents both (``service.api.graphql.console``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from acl.errors import InvalidArgument, NotFound
from indexer.loaders import content_type_for
from indexer.source_uris import shown_source_uri
from service.access.store_summaries import StoreSummaries
from service.domain.authorization import AdminOperation, require_admin
from service.domain.queries import SourceChunk, VectorQuery
from service.domain.source_links import source_link
from service.security.tokens import Identity
from service.usecases.audit import AuditedQueries

if TYPE_CHECKING:
    from service.persistence.ports import SettingsRepository
    from service.query.engine import QueryEngine

#: Most documents one picker request lists.
MAX_DOCUMENTS = 200
#: Most chunks one preview scores.
MAX_PREVIEW_CHUNKS = 50
#: The audit trail's interface name for preview queries (so they are told apart from users' questions).
PREVIEW_INTERFACE = "console-preview"
#: The preview's notice to an admin who administers a store but may read none of its documents.
NOTHING_READABLE = "you can read none of this store's documents"


class ConsoleApp(Protocol):
    """What the picker and the preview need of the wiring (``service.bootstrap.App``)."""

    @property
    def repository(self) -> SettingsRepository: ...

    @property
    def one_shot_engine(self) -> QueryEngine: ...


@dataclass(frozen=True, slots=True)
class ReadableDocument:
    """A document the caller may read (for choosing what to ask about)."""

    document_id: str
    title: str
    #: The indexed URI; only http(s) is shown to remote callers.
    source_uri: str
    #: Its media type, where its name tells.
    content_type: str | None
    #: Where to open it (http(s)); None when nowhere.
    link: str | None
    chunks: int


@dataclass(frozen=True, slots=True)
class Preview:
    """A sample question's top chunks with no threshold, scored on the store's scale: a chunk passes at level L
    when L == 0 or L <= its relevance."""

    store_id: str
    level: float
    min_threshold: float
    max_threshold: float
    chunks: tuple[SourceChunk, ...]
    #: Why there are no chunks to judge, when it is not the question: the admin may read none of them.
    notice: str | None = None


@dataclass(frozen=True, slots=True)
class _Page:
    search: str | None
    first: int

    @classmethod
    def of(cls, search: str | None, first: int | None) -> _Page:
        size = 50 if first is None else first
        if isinstance(size, bool) or not 1 <= size <= MAX_DOCUMENTS:
            raise InvalidArgument(f"first must be between 1 and {MAX_DOCUMENTS}")
        if search is not None and len(search) > 200:
            raise InvalidArgument("search is longer than 200 characters")
        text = None if search is None else search.strip().casefold()
        return cls(text or None, size)

    def matches(self, document_id: str, title: str) -> bool:
        return self.search is None or self.search in document_id.casefold() or self.search in title.casefold()


def readable_documents(
    app: ConsoleApp, identity: Identity, store_id: str, search: str | None, first: int | None
) -> list[ReadableDocument]:
    """The documents of ``store_id`` the caller may read whose id or title holds ``search``, by title."""
    page = _Page.of(search, first)
    store, readable = StoreSummaries(app.repository).readable_documents(store_id, identity.caller())
    shown = [d for d in readable if page.matches(d.id, d.title)]
    shown.sort(key=lambda d: (d.title.casefold(), d.id))
    return [
        ReadableDocument(
            document_id=d.id,
            title=d.title,
            source_uri=shown_source_uri(d.source_uri, local=False),
            content_type=content_type_for(d.id),
            link=source_link(d.id, d.source_uri, base_url=store.source_base_url),
            chunks=d.chunk_count,
        )
        for d in shown[: page.first]
    ]


def relevancy_preview(
    app: ConsoleApp, queries: AuditedQueries, identity: Identity, store_id: str, question: str, k: int | None
) -> Preview:
    """The top ``k`` chunks the admin may read for ``question``, with no threshold (admin only)."""
    require_admin(identity, AdminOperation.RELEVANCY_PREVIEW)
    size = 20 if k is None else k
    if isinstance(size, bool) or not 1 <= size <= MAX_PREVIEW_CHUNKS:
        raise InvalidArgument(f"k must be between 1 and {MAX_PREVIEW_CHUNKS}")
    store = app.repository.get_store(store_id) if isinstance(store_id, str) else None
    if store is None:
        raise NotFound(f"store {store_id!r} not found")
    engine = app.one_shot_engine  # kept out of the admin's history
    one_shot = AuditedQueries(lambda: engine, queries.repository, queries.metrics, outcome_of=queries.outcome_of)
    query = VectorQuery(store.id, question, level=0.0, max_chunks=size, perform_llm_query=False)
    answer = one_shot.ask(identity, query, PREVIEW_INTERFACE)
    # The admin's own rights decide the preview: say so when they read nothing here, not "0 of 0 pass".
    principals = engine.principals(identity.caller(), store.id)
    readable = bool(answer.chunks) or app.repository.store_for_reader(store.id, principals) is not None
    return Preview(
        store_id=store.id,
        level=store.level,
        min_threshold=store.min_threshold,
        max_threshold=store.max_threshold,
        chunks=answer.chunks,
        notice=None if readable else NOTHING_READABLE,
    )
