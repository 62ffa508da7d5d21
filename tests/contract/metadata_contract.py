"""Metadata filters every ``Index`` adapter must evaluate alike, written once; ``IndexContract`` includes it.

Path prefix and glob on the document id, content type, title contains (any case), the modified and indexed
instants at their bounds, custom metadata keys; each alone, combined, ANDed with an ACL filter (never
widening it), narrow (1 % of the chunks) with k results, and junk values refused.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import numpy as np
import pytest

from acl.errors import InvalidArgument
from acl.model import Acl
from indexer.index.attributes import frozen_metadata
from indexer.index.filters import Filter, acl_filter, and_
from indexer.index.port import ChunkRecord, Index

# The module, not its names: index_contract imports this module while it is being defined.
from tests.contract import index_contract as base

STORE = "contract"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


# document id -> (title, content type, modified, indexed at, metadata, allow, deny)
DOCS: dict[str, tuple[str, str, str | None, str | None, dict[str, str], tuple[str, ...], tuple[str, ...]]] = {
    "hr/policy.md": (
        "Leave Policy", "text/markdown", "2024-01-01T00:00:00Z", "2024-06-01T00:00:00Z",
        {"dept": "hr", "year": "2024"}, ("group:everyone",), (),
    ),
    "hr/2023/old.pdf": (
        "Old LEAVE rules", "application/pdf", "2023-05-01T12:00:00.500Z", "2024-06-02T00:00:00Z",
        {"dept": "hr"}, ("group:hr",), (),
    ),
    "it/guide.html": (
        "Password guide", "text/html", "2024-03-15T08:30:00+02:00", "2024-06-03T00:00:00Z",
        {"dept": "it", "secret": "a b=c"}, ("group:everyone",), (),
    ),
    "it/notes.txt": ("Notes 50% [draft]*", "text/plain", None, None, {}, ("group:everyone",), ()),
    "legal/contract[1].pdf": (
        "Vertrag Straße", "application/pdf", "2024-01-01T00:00:00.001Z", "2024-06-01T00:00:00Z",
        {"dept": "legal"}, ("group:legal", "group:everyone"), ("user:mallory",),
    ),
    "q/what?.md": ("Question", "text/markdown", None, "2024-06-04T00:00:00Z", {"dept": "HR"}, ("group:everyone",), ()),
    "x\\y.txt": ("Back slash", "", None, None, {}, ("group:everyone",), ()),
}  # fmt: skip

ALL = set(DOCS)


def metadata_chunk(document_id: str, ordinal: int, vector: Any) -> ChunkRecord:
    title, content_type, modified, indexed, metadata, allow, deny = DOCS[document_id]
    return dataclasses.replace(
        base.chunk(document_id, ordinal, vector, allow=allow, deny=deny),
        title=title,
        content_type=content_type,
        modified=None if modified is None else at(modified),
        indexed_at=None if indexed is None else at(indexed),
        metadata=frozen_metadata(metadata),
    )


def _f(field: str, operator: str, value: Any) -> Filter:
    return {"field": field, "operator": operator, "value": value}


METADATA_CASES: list[tuple[Filter, set[str]]] = [
    (_f("document_id", "prefix", "hr/"), {"hr/policy.md", "hr/2023/old.pdf"}),
    (_f("document_id", "prefix", "HR/"), set()),
    (_f("document_id", "prefix", "it/notes.txt"), {"it/notes.txt"}),
    (_f("document_id", "glob", "hr/*.md"), {"hr/policy.md"}),
    (_f("document_id", "glob", "hr/*"), {"hr/policy.md", "hr/2023/old.pdf"}),  # '*' crosses '/'
    (_f("document_id", "glob", "*.pdf"), {"hr/2023/old.pdf", "legal/contract[1].pdf"}),
    (_f("document_id", "glob", "it/????s.txt"), {"it/notes.txt"}),
    (_f("document_id", "glob", "it/?????.txt"), {"it/notes.txt"}),
    (_f("document_id", "glob", "it/????.txt"), set()),
    (_f("document_id", "glob", "legal/contract[1].pdf"), {"legal/contract[1].pdf"}),  # brackets are literal
    (_f("document_id", "glob", "legal/contract1.pdf"), set()),
    (_f("document_id", "glob", "q/what?.md"), {"q/what?.md"}),
    (_f("document_id", "glob", "x\\y.txt"), {"x\\y.txt"}),
    (_f("document_id", "glob", "*\\*"), {"x\\y.txt"}),
    (_f("document_id", "glob", "*"), ALL),
    (_f("document_id", "glob", "hr"), set()),  # the whole id must match
    (_f("content_type", "==", "application/pdf"), {"hr/2023/old.pdf", "legal/contract[1].pdf"}),
    (_f("content_type", "in", ["text/html", "text/plain", "image/png"]), {"it/guide.html", "it/notes.txt"}),
    (_f("content_type", "not in", ["application/pdf", "text/markdown"]), {"it/guide.html", "it/notes.txt", "x\\y.txt"}),
    (_f("content_type", "==", "Application/PDF"), set()),
    (_f("title", "contains", "leave"), {"hr/policy.md", "hr/2023/old.pdf"}),
    (_f("title", "contains", "LEAVE P"), {"hr/policy.md"}),
    (_f("title", "contains", "50%"), {"it/notes.txt"}),
    (_f("title", "contains", "[draft]*"), {"it/notes.txt"}),
    (_f("title", "contains", "*"), {"it/notes.txt"}),  # literal, not a wildcard
    (_f("title", "contains", "?"), set()),
    (_f("title", "contains", "straße"), {"legal/contract[1].pdf"}),
    (_f("title", "contains", "STRASSE"), set()),  # lower-casing, not Unicode case folding
    (_f("modified", ">=", "2024-01-01T00:00:00Z"), {"hr/policy.md", "it/guide.html", "legal/contract[1].pdf"}),
    (_f("modified", ">=", "2024-01-01T00:00:00.001Z"), {"it/guide.html", "legal/contract[1].pdf"}),
    (_f("modified", "<=", "2024-01-01T00:00:00Z"), {"hr/policy.md", "hr/2023/old.pdf"}),
    (_f("modified", "<=", "2024-01-01T01:00:00+01:00"), {"hr/policy.md", "hr/2023/old.pdf"}),  # the same instant
    (_f("modified", "<=", "2023-05-01T12:00:00.499Z"), set()),
    (_f("modified", ">=", "2024-03-15T06:30:00Z"), {"it/guide.html"}),  # 08:30+02:00 is 06:30Z
    (_f("modified", ">=", "2024-03-15T06:30:00.001Z"), set()),
    (_f("indexed_at", "<=", "2024-06-01"), {"hr/policy.md", "legal/contract[1].pdf"}),
    (
        {"operator": "AND", "conditions": [_f("indexed_at", ">=", "2024-06-02"), _f("indexed_at", "<=", "2024-06-03")]},
        {"hr/2023/old.pdf", "it/guide.html"},
    ),
    (_f("metadata.dept", "==", "hr"), {"hr/policy.md", "hr/2023/old.pdf"}),
    (_f("metadata.dept", "in", ["it", "legal", "none"]), {"it/guide.html", "legal/contract[1].pdf"}),
    (_f("metadata.dept", "not in", ["hr"]), ALL - {"hr/policy.md", "hr/2023/old.pdf"}),  # a missing key too
    (_f("metadata.secret", "==", "a b=c"), {"it/guide.html"}),
    (_f("metadata.secret", "==", "a b"), set()),
    (_f("metadata.year", "in", []), set()),
    (_f("metadata.nokey", "in", ["hr"]), set()),
    (
        {
            "operator": "AND",
            "conditions": [
                _f("document_id", "prefix", "hr/"),
                _f("metadata.dept", "==", "hr"),
                _f("content_type", "==", "application/pdf"),
            ],
        },
        {"hr/2023/old.pdf"},
    ),
    (
        {"operator": "OR", "conditions": [_f("title", "contains", "guide"), _f("document_id", "glob", "*.md")]},
        {"it/guide.html", "hr/policy.md", "q/what?.md"},
    ),
    (
        {"operator": "NOT", "conditions": [_f("modified", ">=", "1970-01-01")]},
        {"it/notes.txt", "q/what?.md", "x\\y.txt"},
    ),
]  # fmt: skip

BAD_METADATA_FILTERS: list[Any] = [
    _f("document_id", "prefix", ""),
    _f("document_id", "glob", ""),
    _f("document_id", "glob", "a" * 257),
    _f("document_id", "glob", ["*.md"]),
    _f("title", "contains", ""),
    _f("title", "==", "Leave Policy"),  # title is no keyword field
    _f("document_id", "contains", "hr"),
    _f("title", "prefix", "Leave"),
    _f("modified", ">=", "yesterday"),
    _f("modified", ">=", "2024-02-30"),
    _f("modified", "<=", "2024-01-01T10:00"),  # a time with no zone
    _f("modified", ">=", 1704067200000),
    _f("modified", "==", "2024-01-01"),
    _f("content_type", ">=", "2024-01-01"),
    _f("metadata.Dept", "==", "hr"),
    _f("metadata.", "==", "hr"),
    _f("metadata.dept", "contains", "h"),
    _f("metadata.dept", "==", ["hr"]),
    _f("mtime", ">=", "2024-01-01"),
    _f("document_id", "regexp", ".*"),
]


@lru_cache(maxsize=1)
def rare_corpus() -> tuple[ChunkRecord, ...]:
    """5,000 chunks in 500 documents; 1 % of them (5 documents) are PDFs of the ``rare`` department."""
    chunks = []
    for row, vector in enumerate(base.random_vectors(5000, seed=21)):
        document = row // 10
        record = base.chunk(f"bulk/doc{document:04d}.md", row % 10, vector)
        if document % 100 == 7:
            record = dataclasses.replace(
                record,
                document_id=f"bulk/doc{document:04d}.pdf",
                chunk_id=f"bulk/doc{document:04d}.pdf#{row % 10}",
                content_type="application/pdf",
                metadata=frozen_metadata({"dept": "rare"}),
            )
        chunks.append(record)
    return tuple(chunks)


class MetadataContract:
    """Included in ``IndexContract``: uses its ``store`` fixture and ``ids`` helper."""

    @pytest.fixture
    def metadata_store(self, store: Index) -> Index:
        vectors = base.random_vectors(2 * len(DOCS), seed=17)
        store.upsert(
            STORE,
            [metadata_chunk(d, o, vectors[2 * i + o]) for i, d in enumerate(DOCS) for o in (0, 1)],
        )
        store.refresh(STORE)
        return store

    @staticmethod
    def documents(index: Index, filter_: Filter, approximate: bool = False) -> set[str]:
        search = index.knn if approximate else index.exact
        return {h.chunk.document_id for h in search(STORE, base.unit(np.ones(base.DIM)), 100, filter_)}

    @pytest.mark.parametrize(("filter_", "expected"), METADATA_CASES)
    def test_metadata_filter(self, metadata_store: Index, filter_: Filter, expected: set[str]) -> None:
        assert self.documents(metadata_store, filter_) == expected
        assert self.documents(metadata_store, filter_, approximate=True) == expected
        assert metadata_store.count(STORE, filter_) == 2 * len(expected)
        lexical = metadata_store.lexical(STORE, "text of", 100, filter_)
        assert {h.chunk.document_id for h in lexical} == expected

    @pytest.mark.parametrize("bad", BAD_METADATA_FILTERS)
    def test_bad_metadata_filter_is_invalid(self, metadata_store: Index, bad: Any) -> None:
        query = base.unit(np.ones(base.DIM))
        for call in (
            lambda: metadata_store.knn(STORE, query, 3, bad),
            lambda: metadata_store.exact(STORE, query, 3, bad),
            lambda: metadata_store.lexical(STORE, "text", 3, bad),
            lambda: metadata_store.count(STORE, bad),
        ):
            with pytest.raises(InvalidArgument):
                call()

    @pytest.mark.parametrize(
        ("principals", "metadata", "expected"),
        [
            (["group:everyone"], _f("document_id", "prefix", "hr/"), {"hr/policy.md"}),
            (["group:hr"], _f("document_id", "prefix", "hr/"), {"hr/2023/old.pdf"}),
            (["group:legal", "user:mallory"], _f("metadata.dept", "==", "legal"), set()),  # deny wins
            (["group:nobody"], _f("document_id", "glob", "*"), set()),
            (["group:everyone"], _f("content_type", "==", "application/pdf"), {"legal/contract[1].pdf"}),
        ],
    )
    def test_metadata_filter_anded_with_the_acl_never_widens_it(
        self, metadata_store: Index, principals: list[str], metadata: Filter, expected: set[str]
    ) -> None:
        combined = and_(acl_filter(principals), metadata)
        for approximate in (False, True):
            assert self.documents(metadata_store, combined, approximate) == expected
        readable = self.documents(metadata_store, acl_filter(principals))
        assert self.documents(metadata_store, combined) <= readable

    def test_attributes_round_trip_and_survive_an_acl_change(self, metadata_store: Index) -> None:
        written = metadata_chunk("it/guide.html", 0, np.ones(base.DIM))
        (hit,) = metadata_store.exact(STORE, base.unit(np.ones(base.DIM)), 1, _f("chunk_id", "==", "it/guide.html#0"))
        assert hit.chunk == dataclasses.replace(written, vector=None)
        assert dict(hit.chunk.metadata) == {"dept": "it", "secret": "a b=c"}
        assert hit.chunk.modified == datetime(2024, 3, 15, 6, 30, tzinfo=UTC)
        metadata_store.set_document_acl(STORE, "it/guide.html", Acl.of(["group:it"]))
        metadata_store.refresh(STORE)
        only_it = and_(acl_filter(["group:it"]), _f("metadata.dept", "==", "it"), _f("modified", "<=", "2024-12-31"))
        (moved,) = {h.chunk for h in metadata_store.exact(STORE, base.unit(np.ones(base.DIM)), 10, only_it)} - {
            h.chunk for h in metadata_store.exact(STORE, base.unit(np.ones(base.DIM)), 10, only_it) if h.chunk.ordinal
        }
        assert (moved.metadata, moved.content_type, moved.indexed_at) == (
            written.metadata,
            written.content_type,
            written.indexed_at,
        )
        assert self.documents(metadata_store, _f("metadata.dept", "==", "it")) == {"it/guide.html"}

    def test_reupsert_with_new_metadata_replaces_the_old(self, metadata_store: Index) -> None:
        changed = [
            dataclasses.replace(metadata_chunk("hr/policy.md", o, np.ones(base.DIM) + o), metadata=frozen_metadata({}))
            for o in (0, 1)
        ]
        metadata_store.upsert(STORE, changed)
        metadata_store.refresh(STORE)
        assert self.documents(metadata_store, _f("metadata.dept", "==", "hr")) == {"hr/2023/old.pdf"}
        assert self.documents(metadata_store, _f("metadata.year", "==", "2024")) == set()

    def test_narrow_metadata_filter_still_returns_k(self, store: Index) -> None:
        store.upsert(STORE, rare_corpus())
        store.refresh(STORE)
        rare = and_(
            acl_filter(["group:everyone"]),
            _f("metadata.dept", "==", "rare"),
            _f("content_type", "in", ["application/pdf"]),
            _f("document_id", "glob", "bulk/*.pdf"),
        )
        assert store.count(STORE, rare) == 50
        for query in base.random_vectors(4, seed=23):
            approximate = store.knn(STORE, query, 10, rare)
            exact = store.exact(STORE, query, 10, rare)
            assert len(approximate) == len(exact) == 10
            assert all(h.chunk.metadata.get("dept") == "rare" for h in approximate)
            assert len({h.chunk.chunk_id for h in approximate} & {h.chunk.chunk_id for h in exact}) >= 9
