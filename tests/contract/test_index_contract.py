"""The index contract against the fake and the embedded adapter (memory, file, forced HNSW)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.embedded.search import Planner
from indexer.index.port import Index
from tests.contract.index_contract import IndexContract
from tests.fakes import FakeIndex

# Makes HNSW look cheap, free to build and trusted at any selectivity, so every
# knn with more than k matches walks the graph (extended after every write): the
# contract then covers the graph path, its bitmap filter, its tail of unindexed
# rows and its fallback to exact.
ALWAYS_HNSW = Planner(
    exact_row_cost_us=1000.0,
    ef_max=1_000_000,
    calibrate=False,
    build_cost_us_per_row=0.0,
    min_graph_rows=1,
    tail_rows=1,
)


class TestFakeIndex(IndexContract):
    @pytest.fixture
    def index(self) -> Iterator[Index]:
        yield FakeIndex()


class TestEmbeddedIndexInMemory(IndexContract):
    @pytest.fixture
    def index(self) -> Iterator[Index]:
        index = EmbeddedIndex(None)
        yield index
        index.close()


class TestEmbeddedIndexPersistent(IndexContract):
    @pytest.fixture
    def index(self, tmp_path: Path) -> Iterator[Index]:
        index = EmbeddedIndex(tmp_path / "index")
        yield index
        index.close()


class TestEmbeddedIndexHnsw(IndexContract):
    @pytest.fixture
    def index(self, tmp_path: Path) -> Iterator[Index]:
        index = EmbeddedIndex(tmp_path / "index", planner=ALWAYS_HNSW, background=False)
        yield index
        index.close()


class TestEmbeddedIndexLexiconInMemory(IndexContract):
    """As ``docqa serve`` runs it: BM25 ranked from the in-memory copy of the full-text index."""

    @pytest.fixture
    def index(self, tmp_path: Path) -> Iterator[Index]:
        index = EmbeddedIndex(tmp_path / "index", background=False)
        index.keep_lexicons(10**9)
        yield index
        index.close()
