"""A small world for engine tests: an in-memory settings DB, an index, fake embedder and generator."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from acl.model import Acl
from indexer.documents import DocumentRecord
from indexer.index import ChunkRecord, Index, StoreSpec
from service.access.state import AccessState
from service.domain.queries import Answer, Caller, Query
from service.domain.store import Store
from service.persistence.sql_settings import SqlSettingsRepository
from service.query.engine import QueryEngine
from tests.fakes import FakeIndex
from tests.fakes_service import FakeEmbedder, RecordingGenerator

STORE = "s"


@dataclass
class World:
    repo: SqlSettingsRepository
    index: Index
    embedder: FakeEmbedder
    generator: RecordingGenerator
    engine: QueryEngine
    access: AccessState
    docs: dict[str, list[str]] = field(default_factory=dict)

    def add(self, document_id: str, paragraphs: Iterable[str], acl: Acl, *, index_acl: Acl | None = None) -> None:
        texts = list(paragraphs)
        vectors = self.embedder.embed_documents(texts)
        records = []
        offset = 0
        for ordinal, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            records.append(
                ChunkRecord(
                    chunk_id=f"{document_id}#{ordinal}",
                    document_id=document_id,
                    ordinal=ordinal,
                    text=text,
                    title=document_id.upper(),
                    source_uri=f"file:///{document_id}",
                    heading_path=(document_id,),
                    start=offset,
                    end=offset + len(text),
                    acl=index_acl or acl,
                    vector=vector,
                )
            )
            offset += len(text) + 2
        self.index.upsert(STORE, records)
        self.repo.save_document(
            DocumentRecord(
                STORE,
                document_id,
                document_id.upper(),
                f"file:///{document_id}",
                hashlib.sha256("\n\n".join(texts).encode()).hexdigest(),  # a rewrite is a new version
                "\n\n".join(texts),
                acl,
                chunk_count=len(records),
            )
        )
        self.docs[document_id] = texts

    def ask(self, user: str, query: Query) -> Answer:
        return self.engine.ask(Caller(user), query)


def make_world(
    *,
    level: float = 0.5,
    min_threshold: float = 0.1,
    max_threshold: float = 0.6,
    max_chunks: int = 4,
    context_tokens: int = 8192,
    index: Index | None = None,
    dimension: int = 64,
) -> World:
    repo = SqlSettingsRepository.from_url("sqlite://")
    repo.create_store(Store(STORE, STORE, "fake", level, min_threshold, max_threshold, max_chunks))
    embedder = FakeEmbedder(dimension=dimension)
    index = index or FakeIndex()
    index.ensure(StoreSpec(STORE, dimension))
    generator = RecordingGenerator(context_tokens=context_tokens)
    engine = QueryEngine(repository=repo, index=index, embedder_for=lambda _: embedder, generator=generator)
    # The access state without the index: an admin change here leaves the index copy stale on purpose.
    return World(repo, index, embedder, generator, engine, AccessState(repo))
