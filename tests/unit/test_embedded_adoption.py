"""A running index adopts the HNSW graph another process saves for its store later, and only a whole, valid one."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from acl.model import Acl
from indexer.index.embedded import graph_file
from indexer.index.embedded.filters import filter_mask
from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.embedded.search import Planner
from indexer.index.embedded.sqlite import ChunkTable
from indexer.index.filters import acl_filter
from indexer.index.port import ChunkRecord, StoreSpec
from tests.contract.index_contract import DIM, STORE, chunk, random_vectors
from tests.unit.test_embedded_live import EVERYONE, ROWS, corpus, ids

WATCHFUL = Planner(graph_file_check_s=0.0)  # look at the graph file at every call
QUERIES = random_vectors(8, seed=41)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "index"


@pytest.fixture
def server(data_dir: Path) -> Iterator[tuple[EmbeddedIndex, list[ChunkRecord]]]:
    """A running index on a store of ``ROWS`` chunks that has no graph yet (it searches exactly)."""
    index = EmbeddedIndex(data_dir, planner=WATCHFUL, background=False)
    index.ensure(StoreSpec(STORE, DIM))
    chunks = corpus(ROWS)
    index.upsert(STORE, chunks)
    index.knn(STORE, QUERIES[0], 10, EVERYONE)
    stats = index.stats(STORE)
    assert stats.graph_rows == 0 and stats.last_plan == "exact"
    yield index, chunks
    index.close()


def path_of(data_dir: Path) -> Path:
    return graph_file.graph_path(data_dir / f"{STORE}.sqlite")


def build_elsewhere(data_dir: Path) -> None:
    """What ``docqa index`` in another process does at its end: build the graph, save it, exit."""
    other = EmbeddedIndex(data_dir, background=False)
    try:
        other.prepare(STORE)
    finally:
        other.close()


def assert_exact(index: EmbeddedIndex, filter_: object, plan: str = "hnsw") -> None:
    for query in QUERIES:
        approximate = ids(index.knn(STORE, query, 10, filter_))  # type: ignore[arg-type]
        assert index.stats(STORE).last_plan == plan
        assert approximate == ids(index.exact(STORE, query, 10, filter_))  # type: ignore[arg-type]


def test_a_running_server_adopts_the_graph_another_process_saves_later(
    server: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path
) -> None:
    index, _ = server
    build_elsewhere(data_dir)
    assert_exact(index, EVERYONE)
    stats = index.stats(STORE)
    assert stats.graph_adoptions == 1 and stats.graph_loaded
    assert stats.graph_builds == 0 and stats.graph_rows == ROWS  # adopted, not built here
    assert stats.reloads == 0
    assert_exact(index, EVERYONE)
    assert index.stats(STORE).graph_adoptions == 1  # its own file is not adopted again


def test_the_adopted_graph_honours_writes_made_after_it_was_saved(
    server: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path
) -> None:
    index, chunks = server
    build_elsewhere(data_dir)
    gone, reacled = chunks[0], chunks[10]
    writer = EmbeddedIndex(data_dir, background=False)  # another process, after the graph was saved
    try:
        writer.delete_document(STORE, gone.document_id)
        writer.set_document_acl(STORE, reacled.document_id, Acl.of(["user:only"]))
        writer.upsert(STORE, [chunk("late", 0, QUERIES[1], allow=("group:everyone",))])
    finally:
        writer.close()
    index.set_document_acl(STORE, chunks[20].document_id, Acl.of(["user:other"]))  # and this process
    for victim in (gone, reacled, chunks[20]):
        hits = index.knn(STORE, victim.vector, 10, EVERYONE)  # type: ignore[arg-type]
        assert victim.document_id not in {h.chunk.document_id for h in hits}
    assert index.stats(STORE).graph_adoptions == 1
    assert ids(index.knn(STORE, reacled.vector, 1, acl_filter(["user:only"]))) == [reacled.chunk_id]  # type: ignore[arg-type]
    assert ids(index.knn(STORE, QUERIES[1], 1, EVERYONE)) == ["late#0"]  # in the exact tail
    assert_exact(index, EVERYONE)
    assert_exact(index, acl_filter(["group:g3"]), plan="exact")  # 5 %: exact wins, on the current rows
    assert index.count(STORE) == ROWS - 5 + 1
    assert index.stats(STORE).reloads == 0


def test_a_graph_no_larger_than_the_served_one_is_not_adopted(data_dir: Path) -> None:
    index = EmbeddedIndex(data_dir, planner=WATCHFUL, background=False)
    try:
        index.ensure(StoreSpec(STORE, DIM))
        index.upsert(STORE, corpus(ROWS))
        index.prepare(STORE)  # built and saved here
        older = data_dir / "older.hnsw"
        shutil.copy(path_of(data_dir), older)
        index.upsert(STORE, corpus(1000, seed=3, prefix="more"))
        index.prepare(STORE)  # grown by more than a tenth: saved again
        os.replace(older, path_of(data_dir))  # another process puts back a graph of fewer rows
        assert_exact(index, EVERYONE)
        stats = index.stats(STORE)
        assert stats.graph_adoptions == 0 and stats.graph_rows == ROWS + 1000 and not stats.graph_loaded
    finally:
        index.close()


@pytest.mark.parametrize("damage", ["flip", "garbage", "other store"])
def test_a_corrupt_graph_file_saved_later_is_ignored_and_logged(
    server: tuple[EmbeddedIndex, list[ChunkRecord]],
    data_dir: Path,
    damage: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    index, _ = server
    build_elsewhere(data_dir)
    path = path_of(data_dir)
    good = path.read_bytes()
    data = bytearray(good)
    if damage == "flip":
        data[-1000] ^= 0xFF
    elif damage == "garbage":
        data = bytearray(b"junk")
    else:
        data = data.replace(index._open(STORE).store_uuid.encode(), b"f" * 32, 1)
    aside = path.with_name("damaged")
    aside.write_bytes(bytes(data))
    os.replace(aside, path)
    with caplog.at_level(logging.WARNING, logger="indexer.index.embedded.store"):
        assert_exact(index, EVERYONE, plan="exact")
    assert index.stats(STORE).graph_adoptions == 0
    assert [r for r in caplog.records if "ignoring the HNSW graph file" in r.getMessage()]
    assert len(caplog.records) == 1  # logged once, not at every query
    aside.write_bytes(good)
    os.replace(aside, path)  # then a good one: adopted
    assert_exact(index, EVERYONE)
    assert index.stats(STORE).graph_adoptions == 1


def test_a_graph_file_written_in_place_is_adopted_only_once_whole(
    server: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    index, _ = server
    build_elsewhere(data_dir)
    path = path_of(data_dir)
    whole = path.read_bytes()
    path.unlink()
    with open(path, "wb") as out:  # a copy under way (``cp``), not DocQA's write-aside-and-rename
        out.write(whole[: len(whole) // 2])
        out.flush()
        with caplog.at_level(logging.WARNING, logger="indexer.index.embedded.store"):
            assert_exact(index, EVERYONE, plan="exact")
        assert index.stats(STORE).graph_adoptions == 0
        assert "checksum mismatch" in caplog.text
        out.write(whole[len(whole) // 2 :])
    assert_exact(index, EVERYONE)
    assert index.stats(STORE).graph_adoptions == 1


def test_save_writes_aside_and_renames_so_no_reader_sees_a_partial_file(
    server: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index, _ = server
    build_elsewhere(data_dir)
    path = path_of(data_dir)
    previous = path.read_bytes()
    index.upsert(STORE, corpus(1000, seed=3, prefix="more"))  # a tenth more: the next build saves again
    seen: list[bytes] = []
    real = os.replace

    def replacing(source: str | Path, target: str | Path) -> None:
        seen.append(path.read_bytes())  # what a reader gets while the new file is complete but aside
        assert graph_file.nodes_claimed(Path(source), index._open(STORE).store_uuid) == ROWS + 1000
        real(source, target)

    monkeypatch.setattr(graph_file.os, "replace", replacing)
    build_elsewhere(data_dir)
    assert seen == [previous]
    assert graph_file.nodes_claimed(path, index._open(STORE).store_uuid) == ROWS + 1000
    assert [p.name for p in data_dir.iterdir() if p.name.endswith(".tmp")] == []


def test_a_server_does_not_overwrite_a_larger_graph_another_process_saved(data_dir: Path) -> None:
    index = EmbeddedIndex(data_dir, planner=Planner(graph_file_check_s=1e9), background=False)  # never looks
    try:
        index.ensure(StoreSpec(STORE, DIM))
        index.upsert(STORE, corpus(ROWS))
        index.prepare(STORE)
        other = EmbeddedIndex(data_dir, background=False)
        try:
            more = corpus(2000, seed=5, prefix="more")
            other.upsert(STORE, more)
            other.prepare(STORE)  # saves a graph of ROWS + 2000 rows
            larger = path_of(data_dir).read_bytes()
            for document in sorted({c.document_id for c in more}):
                other.delete_document(STORE, document)
        finally:
            other.close()
        index.upsert(STORE, corpus(1000, seed=6, prefix="own"))
        index.prepare(STORE)  # its own graph grew by a tenth, to ROWS + 1000 rows
        assert index.stats(STORE).graph_rows == ROWS + 1000
        assert path_of(data_dir).read_bytes() == larger  # kept for a look, not overwritten
    finally:
        index.close()


def test_rows_swapped_in_by_an_adoption_are_caught_up_before_any_query_sees_them(
    server: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A revocation committed while the adopted graph's rows were laid out is in the rows swapped in: a query
    that refreshed before the swap (and waited for the lock meanwhile) must not answer from the older read."""
    index, chunks = server
    build_elsewhere(data_dir)
    victim = chunks[10]
    real = ChunkTable.snapshot.__func__  # type: ignore[attr-defined]

    def snapshot_then_revoke(cls: type[ChunkTable], path: Path, dimension: int) -> object:
        taken = real(cls, path, dimension)
        writer = EmbeddedIndex(data_dir, background=False)  # another process revokes right after the read
        try:
            writer.set_document_acl(STORE, victim.document_id, Acl.of(["user:only"]))
        finally:
            writer.close()
        return taken

    monkeypatch.setattr(ChunkTable, "snapshot", classmethod(snapshot_then_revoke))
    store = index._stores[STORE]
    store.look_for_graph()  # the adoption, as the next query's refresh starts it
    assert index.stats(STORE).graph_adoptions == 1
    with store.lock.read():  # what a query holding the read lock next sees, with no refresh of its own
        readable = filter_mask(EVERYONE, store.rows)
        rows = store.rows.live_rows_of("document_id", [victim.document_id])
        assert len(rows) and not readable[rows].any()
