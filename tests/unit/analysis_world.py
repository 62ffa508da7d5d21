"""Engine worlds for summaries and comparisons: documents with sections, the extractive or a recording generator."""

from __future__ import annotations

from collections.abc import Sequence

from acl.model import Acl
from indexer.documents import DocumentRecord
from indexer.index import ChunkRecord
from service.generation.extractive import ExtractiveGenerator
from service.generation.port import Generator
from service.query.engine import QueryEngine
from tests.unit.engine_world import STORE, World, make_world

EVERYONE = Acl.of(["group:everyone"])
FINANCE = Acl.of(["group:finance"])

#: (heading, paragraphs) per section: each section has one sentence that shares words with the others.
HANDBOOK: list[tuple[str, list[str]]] = [
    (
        "Vacation",
        [
            "Employees earn vacation days every month of service. Vacation days accrue from the first month. "
            "The cafeteria serves soup on Fridays. Unused vacation days carry over to the next year.",
            "Vacation days that carry over expire after one year. A manager approves vacation days in advance.",
        ],
    ),
    (
        "Expenses",
        [
            "Travel expenses are reimbursed within thirty days. Receipts are required for all travel expenses. "
            "The parking garage closes at midnight. Expenses above the limit need the approval of a director.",
        ],
    ),
    (
        "Security",
        [
            "Badges must be worn on the premises at all times. A lost badge is reported to security at once. "
            "Security replaces a lost badge within a day. The lobby has a new painting.",
        ],
    ),
]


def with_generator(world: World, generator: Generator) -> World:
    """``world`` answering with ``generator`` (the same settings database and index)."""
    world.engine = QueryEngine(
        repository=world.repo, index=world.index, embedder_for=lambda _: world.embedder, generator=generator
    )
    return world


def extractive_world() -> World:
    return with_generator(make_world(), ExtractiveGenerator())


def add_sections(
    world: World,
    document_id: str,
    sections: Sequence[tuple[str, Sequence[str]]],
    acl: Acl,
    *,
    index_acl: Acl | None = None,
) -> list[ChunkRecord]:
    """Index ``document_id`` as one chunk per paragraph, under its section's heading; record it in the catalog."""
    records: list[ChunkRecord] = []
    offset = 0
    texts = [p for _, paragraphs in sections for p in paragraphs]
    vectors = world.embedder.embed_documents(texts)
    row = 0
    for heading, paragraphs in sections:
        for paragraph in paragraphs:
            records.append(
                ChunkRecord(
                    chunk_id=f"{document_id}#{row}",
                    document_id=document_id,
                    ordinal=row,
                    text=paragraph,
                    title=document_id.upper(),
                    source_uri=f"file:///{document_id}",
                    heading_path=(document_id.upper(), heading),
                    start=offset,
                    end=offset + len(paragraph),
                    acl=index_acl or acl,
                    vector=vectors[row],
                    pages=(row + 1,),
                )
            )
            offset += len(paragraph) + 2
            row += 1
    world.index.upsert(STORE, records)
    text = "\n\n".join(texts)
    world.repo.save_document(
        DocumentRecord(
            STORE, document_id, document_id.upper(), f"file:///{document_id}", "h", text, acl, chunk_count=len(records)
        )
    )
    world.docs[document_id] = texts
    return records
