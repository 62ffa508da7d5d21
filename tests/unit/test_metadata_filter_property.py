"""Property: for random metadata filters and random callers, every chunk a query returns is readable and
matches the filter, and — with no threshold and k above the corpus — it returns exactly what a brute-force
oracle over the corpus says, on the embedded index and on the fake, through the query engine."""

from __future__ import annotations

import fnmatch
import random
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from hypothesis import given, settings
from hypothesis import strategies as st

from acl.model import Acl
from indexer.documents import DocumentRecord
from indexer.index import ChunkRecord, Index
from indexer.index.attributes import frozen_metadata
from indexer.index.embedded.index import EmbeddedIndex
from service.domain.filters import MetadataFilter
from service.domain.queries import Caller, DocumentQuery, MultiDocumentQuery, VectorQuery
from tests.fakes import FakeIndex
from tests.unit.engine_world import STORE, World, make_world

FOLDERS = ["hr/", "hr/2023/", "it/", "it/ops/", "legal/", ""]
NAMES = ["a", "b", "leave", "x?y", "notes[1]"]
SUFFIXES = {".md": "text/markdown", ".pdf": "application/pdf", ".html": "text/html", ".txt": "text/plain"}
TITLES = ["Leave Policy", "old LEAVE rules", "Password guide", "Notes 50%", "Straße", "On-call"]
DAYS = [datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=d, milliseconds=m) for d in (0, 10, 40) for m in (0, 1)]
DEPTS = ["hr", "it", "legal", "HR"]
PRINCIPALS = ["user:ann", "user:bob", "group:x", "group:everyone"]
USERS = ["ann", "bob", "cyd"]


@lru_cache(maxsize=2)
def world(kind: str) -> World:
    rng = random.Random(5)
    w = make_world(index=EmbeddedIndex(None) if kind == "embedded" else FakeIndex(), level=0.0)
    w.access.add_member("group:x", "user:ann", "test")
    documents = {f"{rng.choice(FOLDERS)}{rng.choice(NAMES)}{rng.choice(list(SUFFIXES))}" for _ in range(40)}
    for document_id in sorted(documents):
        acl = Acl.of(rng.sample(PRINCIPALS, rng.randint(0, 2)), rng.sample(PRINCIPALS[:2], rng.randint(0, 1)))
        title = rng.choice(TITLES)
        texts = [f"{title} paragraph {i} about {document_id}" for i in range(rng.randint(1, 3))]
        vectors = w.embedder.embed_documents(texts)
        metadata = {"dept": rng.choice(DEPTS)} if rng.random() < 0.7 else {}
        if rng.random() < 0.3:
            metadata["year"] = rng.choice(["2023", "2024"])
        common = {
            "content_type": SUFFIXES[document_id[document_id.rindex(".") :]],
            "modified": rng.choice([*DAYS, None]),
            "indexed_at": rng.choice([*DAYS, None]),
            "metadata": frozen_metadata(metadata),
        }
        records = [
            ChunkRecord(f"{document_id}#{i}", document_id, i, text, title, "", (), 0, len(text), acl, vector, **common)  # type: ignore[arg-type]
            for i, (text, vector) in enumerate(zip(texts, vectors, strict=True))
        ]
        w.index.upsert(STORE, records)
        w.repo.save_document(
            DocumentRecord(STORE, document_id, title, "", "h", "\n\n".join(texts), acl, chunk_count=len(records))
        )
    return w


def corpus(index: Index) -> list[ChunkRecord]:
    query = world("fake").embedder.embed_query("anything")
    return [
        h.chunk for h in index.exact(STORE, query, 10_000, {"field": "chunk_id", "operator": "not in", "value": []})
    ]


def matches(f: MetadataFilter, c: ChunkRecord) -> bool:
    """The oracle: the filter's meaning, written out plainly."""
    checks = [
        f.path_prefix is None or c.document_id.startswith(f.path_prefix),
        f.path_glob is None or fnmatch.fnmatchcase(c.document_id, f.path_glob.replace("[", "[[]")),
        not f.content_types or c.content_type in f.content_types,
        f.title_contains is None or f.title_contains.lower() in c.title.lower(),
        f.modified_from is None or (c.modified is not None and c.modified >= f.modified_from),
        f.modified_to is None or (c.modified is not None and c.modified <= f.modified_to),
        f.indexed_from is None or (c.indexed_at is not None and c.indexed_at >= f.indexed_from),
        f.indexed_to is None or (c.indexed_at is not None and c.indexed_at <= f.indexed_to),
        all(c.metadata.get(m.key) in m.values for m in f.metadata),
    ]
    return all(checks)


def readable(acl: Acl, principals: frozenset[str]) -> bool:
    return bool(acl.allow & principals) and not acl.deny & principals


def _maybe(strategy: st.SearchStrategy[str]) -> st.SearchStrategy[str | None]:
    return st.one_of(st.none(), strategy)


DATES = st.sampled_from(DAYS)
filters = st.builds(
    MetadataFilter,
    path_prefix=_maybe(st.sampled_from(["hr/", "hr", "it/ops/", "legal/l", "a", "x?"])),
    path_glob=_maybe(st.sampled_from(["*.md", "hr/*", "*/a.*", "x?y.*", "*notes[1]*", "it/????.pdf", "*"])),
    content_types=st.lists(st.sampled_from(list(SUFFIXES.values())), max_size=2, unique=True).map(tuple),
    title_contains=_maybe(st.sampled_from(["leave", "LEAVE", "50%", "ß", "guide", "-"])),
    modified_from=st.one_of(st.none(), DATES),
    indexed_to=st.one_of(st.none(), DATES),
    metadata=st.lists(
        st.sampled_from([("dept", ("hr",)), ("dept", ("it", "legal")), ("year", ("2024",)), ("dept", ("HR", "hr"))]),
        max_size=1,
    ).map(
        lambda items: tuple(
            __import__("service.domain.filters").domain.filters.MetadataCondition(k, v) for k, v in items
        )
    ),
)


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(["embedded", "fake"]), f=filters, user=st.sampled_from(USERS), data=st.data())
def test_filtered_queries_return_exactly_the_readable_matching_chunks(
    kind: str, f: MetadataFilter, user: str, data: st.DataObject
) -> None:
    w = world(kind)
    principals = w.engine.principals(Caller(user), STORE)
    chunks = corpus(w.index)
    expected = {c.chunk_id for c in chunks if readable(c.acl, principals) and matches(f, c)}
    answer = w.engine.ask(Caller(user), VectorQuery(STORE, "paragraph about policy", 0.0, 100, False, f))
    returned = {c.chunk_id for c in answer.chunks}
    by_id = {c.chunk_id: c for c in chunks}
    assert all(readable(by_id[i].acl, principals) and matches(f, by_id[i]) for i in returned)
    assert returned == expected
    readable_documents = sorted({c.document_id for c in chunks if readable(c.acl, principals)})
    if readable_documents:
        chosen = data.draw(st.lists(st.sampled_from(readable_documents), min_size=1, max_size=3, unique=True))
        multi = w.engine.ask(Caller(user), MultiDocumentQuery(STORE, "paragraph", tuple(chosen), 0.0, 100, False, f))
        assert {c.chunk_id for c in multi.chunks} == {i for i in expected if by_id[i].document_id in chosen}
        one = w.engine.ask(Caller(user), DocumentQuery(STORE, "paragraph", chosen[0], 0.0, False, f))
        matching = any(by_id[i].document_id == chosen[0] for i in expected)
        assert (not one.no_relevant_document) == matching
        assert {c.document_id for c in one.chunks} == ({chosen[0]} if matching else set())
