"""``docqa index`` leaves the embedded store's HNSW graph saved, so a server started next serves it at once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.port import StoreSpec
from service.api.cli.parser import build_parser
from service.api.cli.queries import _save_graph
from service.bootstrap import build_app
from service.config import Settings
from tests.contract.index_contract import chunk
from tests.fakes_service import FakeEmbedder

STORE = "big"
DIM = 8  # low-dimensional random vectors: a graph that meets its recall target


def _fill(index: EmbeddedIndex, rows: int) -> None:
    index.ensure(StoreSpec(STORE, DIM))
    vectors = np.random.default_rng(3).standard_normal((rows, DIM)).astype(np.float32)
    index.upsert(STORE, [chunk(f"d{i}", 0, vectors[i]) for i in range(rows)])


def test_the_graph_is_saved_and_loaded_by_the_next_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = build_app(Settings(data_dir=tmp_path), embedder_factory=lambda _: FakeEmbedder(dimension=DIM))
    index = app.index
    assert isinstance(index, EmbeddedIndex)
    _fill(index, 2500)  # above the planner's min_graph_rows
    _save_graph(app, STORE, quiet=False)
    assert "HNSW graph of 2500 rows saved with the store" in capsys.readouterr().err
    app.close()
    server = EmbeddedIndex(tmp_path / "index")
    try:
        stats = server.stats(STORE)
        assert stats.graph_loaded and stats.graph_rows == 2500
    finally:
        server.close()


def test_a_small_store_gets_no_graph_and_no_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = build_app(Settings(data_dir=tmp_path), embedder_factory=lambda _: FakeEmbedder(dimension=DIM))
    index = app.index
    assert isinstance(index, EmbeddedIndex)
    _fill(index, 50)
    _save_graph(app, STORE, quiet=False)
    assert capsys.readouterr().err == "" and index.stats(STORE).graph_rows == 0
    app.close()


def test_no_graph_is_an_option_of_index() -> None:
    args = build_parser().parse_args(["index", "docs", "--store", "s", "--no-graph"])
    assert args.no_graph
    assert not build_parser().parse_args(["index", "docs", "--store", "s"]).no_graph
