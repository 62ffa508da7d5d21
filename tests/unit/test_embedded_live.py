"""A fresh process adopts the saved HNSW graph; a running one applies other processes' writes incrementally."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import struct
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from acl.model import Acl
from indexer.index.embedded import changes
from indexer.index.embedded.graph_file import MAGIC
from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.embedded.sqlite import ChunkTable
from indexer.index.embedded.stats import EmbeddedStats
from indexer.index.filters import acl_filter, documents_filter
from indexer.index.port import ChunkRecord, StoreSpec
from tests.contract.index_contract import DIM, STORE, chunk, random_vectors

EVERYONE = acl_filter(["group:everyone"])
ROWS = 6000


def corpus(rows: int, seed: int = 0, prefix: str = "d") -> list[ChunkRecord]:
    """``rows`` chunks, 5 per document, document d readable by ``group:g<d % 20>`` and everyone."""
    return [
        chunk(f"{prefix}{i // 5:05d}", i % 5, v, allow=(f"group:g{(i // 5) % 20}", "group:everyone"))
        for i, v in enumerate(random_vectors(rows, seed))
    ]


def ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.chunk.chunk_id for h in hits]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "index"


@contextlib.contextmanager
def serving(data_dir: Path, chunks: list[ChunkRecord]) -> Iterator[EmbeddedIndex]:
    """A running index serving ``chunks`` in one store whose graph is built (and so saved, with its rows)."""
    index = EmbeddedIndex(data_dir, background=False)
    try:
        index.ensure(StoreSpec(STORE, DIM))
        index.upsert(STORE, chunks)
        index.prepare(STORE)
        yield index
    finally:
        index.close()


@pytest.fixture
def served(data_dir: Path) -> Iterator[tuple[EmbeddedIndex, list[ChunkRecord]]]:
    """A store of ``ROWS`` chunks whose graph is built (and so saved), served by a running index."""
    chunks = corpus(ROWS)
    with serving(data_dir, chunks) as index:
        yield index, chunks


def graph_file(data_dir: Path, store: str = STORE) -> Path:
    return data_dir / f"{store}.sqlite.hnsw"


def reopened(data_dir: Path) -> EmbeddedStats:
    """The stats of the store as a fresh process opens it."""
    index = EmbeddedIndex(data_dir, background=False)
    try:
        return index.stats(STORE)
    finally:
        index.close()


# -- the saved graph ----------------------------------------------------------


def test_a_fresh_process_adopts_the_saved_graph(
    served: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path
) -> None:
    index, _ = served
    assert graph_file(data_dir).stat().st_mode & 0o077 == 0  # private, as the SQLite file is
    queries = random_vectors(10, seed=31)
    before = [ids(index.knn(STORE, q, 10, EVERYONE)) for q in queries]
    fresh = EmbeddedIndex(data_dir, background=False)
    try:
        after = [ids(fresh.knn(STORE, q, 10, EVERYONE)) for q in queries]
        stats = fresh.stats(STORE)
        assert stats.graph_loaded and stats.graph_builds == 0 and stats.graph_rows == ROWS
        assert stats.last_plan == "hnsw" and stats.ef_policy == index.stats(STORE).ef_policy
        assert stats.ef_policy.wide  # both calibrations come back from the file
        assert after == before
    finally:
        fresh.close()


def test_a_saved_graph_serves_rows_changed_after_it_was_saved(
    served: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path
) -> None:
    index, chunks = served
    gone, reacled = chunks[0], chunks[10]
    index.delete_document(STORE, gone.document_id)
    index.set_document_acl(STORE, reacled.document_id, Acl.of(["user:only"]))
    target = random_vectors(1, seed=77)[0]
    index.upsert(STORE, [chunk("new", 0, target)])
    fresh = EmbeddedIndex(data_dir, background=False)
    try:
        assert fresh.stats(STORE).graph_loaded
        for victim in (gone, reacled):
            hits = fresh.knn(STORE, victim.vector, 10, EVERYONE)  # type: ignore[arg-type]
            assert fresh.stats(STORE).last_plan == "hnsw"
            assert victim.document_id not in {h.chunk.document_id for h in hits}
        only = fresh.knn(STORE, reacled.vector, 1, acl_filter(["user:only"]))  # type: ignore[arg-type]
        assert ids(only) == [reacled.chunk_id]
        assert ids(fresh.knn(STORE, target, 1, EVERYONE)) == ["new#0"]
        assert fresh.count(STORE) == ROWS - 5 + 1
    finally:
        fresh.close()


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage"])
def test_a_damaged_graph_file_is_rebuilt_never_served(
    served: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path, damage: str
) -> None:
    path = graph_file(data_dir)
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[-1000] ^= 0xFF
    path.write_bytes(
        bytes(data[: len(data) // 2]) if damage == "truncate" else b"junk" if damage == "garbage" else data
    )
    fresh = EmbeddedIndex(data_dir, background=False)
    try:
        query = random_vectors(1, seed=5)[0]
        assert ids(fresh.knn(STORE, query, 10, EVERYONE)) == ids(fresh.exact(STORE, query, 10, EVERYONE))
        stats = fresh.stats(STORE)
        assert not stats.graph_loaded and stats.graph_builds == 1  # rebuilt at the first query
        assert path.exists() and reopened(data_dir).graph_loaded  # and saved again
    finally:
        fresh.close()


@pytest.mark.parametrize(
    "field, value",
    [
        ("wide_policy", [[1.0, 1e999]]),  # int(inf): OverflowError
        ("wide_policy", [[1.0, -5]]),
        ("wide_policy", [[0.0, 64]]),
        ("wide_policy", [[0.5, 64], [1.0, 32]]),  # not broadest first
        ("policy", [[1.0, 0]]),
        ("policy", [[float("nan"), 64]]),
        ("calibrated_rows", 1e999),
    ],
)
def test_an_edited_graph_header_is_rebuilt_never_served(
    served: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path, field: str, value: object
) -> None:
    """The checksum covers the payload only: a header value that would break the planner is refused too."""
    path = graph_file(data_dir)
    raw = path.read_bytes()
    (length,) = struct.unpack_from("<Q", raw, len(MAGIC))
    start = len(MAGIC) + 8
    header = json.loads(raw[start : start + length])
    header[field] = value
    edited = json.dumps(header).encode()
    path.write_bytes(MAGIC + struct.pack("<Q", len(edited)) + edited + raw[start + length :])
    fresh = EmbeddedIndex(data_dir, background=False)
    try:
        for query in random_vectors(3, seed=6):
            for k in (10, 60):
                assert ids(fresh.knn(STORE, query, k, EVERYONE)) == ids(fresh.exact(STORE, query, k, EVERYONE))
        stats = fresh.stats(STORE)
        assert not stats.graph_loaded and stats.graph_builds == 1 and stats.ef_policy.wide
    finally:
        fresh.close()


def test_a_graph_file_of_another_store_is_not_served(
    served: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path
) -> None:
    index, _ = served
    index.ensure(StoreSpec("other", DIM))
    index.upsert("other", corpus(ROWS, seed=9))  # the same seqs, other vectors
    graph_file(data_dir, "other").write_bytes(graph_file(data_dir).read_bytes())
    fresh = EmbeddedIndex(data_dir, background=False)
    try:
        assert not fresh.stats("other").graph_loaded
        assert not graph_file(data_dir, "other").exists()
    finally:
        fresh.close()


def test_dropping_a_store_removes_its_graph_file(
    served: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path
) -> None:
    index, _ = served
    index.drop(STORE)
    assert not graph_file(data_dir).exists()


# -- other processes' writes --------------------------------------------------


def test_another_writers_adds_removes_and_acl_changes_are_applied_incrementally(
    served: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path
) -> None:
    index, chunks = served
    writer = EmbeddedIndex(data_dir, background=False)
    try:
        gone, reacled = chunks[0], chunks[10]
        target = random_vectors(1, seed=77)[0]
        writer.delete_document(STORE, gone.document_id)
        writer.set_document_acl(STORE, reacled.document_id, Acl.of(["user:only"]))
        writer.upsert(STORE, [chunk("new", 0, target, allow=("group:everyone",))])
        for victim in (gone, reacled):
            hits = index.knn(STORE, victim.vector, 10, EVERYONE)  # type: ignore[arg-type]
            assert index.stats(STORE).last_plan == "hnsw"
            assert victim.document_id not in {h.chunk.document_id for h in hits}
        only = index.knn(STORE, reacled.vector, 1, acl_filter(["user:only"]))  # type: ignore[arg-type]
        assert ids(only) == [reacled.chunk_id]
        assert ids(index.knn(STORE, target, 1, EVERYONE)) == ["new#0"]
        # the reader writes too before it has seen the writer's next write: both are applied
        writer.upsert(STORE, [chunk("newer", 0, target)])
        index.upsert(STORE, [chunk("newest", 0, target)])
        assert index.count(STORE, documents_filter(["new", "newer", "newest"])) == 3
        stats = index.stats(STORE)
        assert stats.reloads == 0 and stats.catch_ups >= 2
        assert stats.graph_rows == ROWS and stats.graph_builds == 1  # the graph was kept
    finally:
        writer.close()


def test_a_write_by_another_program_is_logged_too(
    served: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path
) -> None:
    index, chunks = served
    with sqlite3.connect(data_dir / f"{STORE}.sqlite") as conn:  # like a DocQA from before the log
        conn.execute("UPDATE chunks SET acl_allow = 'user:only' WHERE document_id = ?", (chunks[0].document_id,))
        conn.execute("DELETE FROM chunks WHERE document_id = ?", (chunks[5].document_id,))
    assert index.count(STORE, acl_filter(["user:only"])) == 5
    assert index.count(STORE) == ROWS - 5
    stats = index.stats(STORE)
    assert stats.reloads == 0 and stats.catch_ups == 1


def test_a_reader_behind_the_pruned_log_reloads_everything(
    served: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index, chunks = served
    monkeypatch.setattr(changes, "KEEP", 2)
    writer = EmbeddedIndex(data_dir, background=False)
    try:
        for victim in chunks[:25:5]:
            writer.delete_document(STORE, victim.document_id)
    finally:
        writer.close()
    assert index.count(STORE) == ROWS - 25
    assert index.stats(STORE).reloads == 1


WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from acl.model import Acl
    from indexer.index.embedded.index import EmbeddedIndex
    from tests.contract.index_contract import STORE, chunk, random_vectors
    index = EmbeddedIndex(Path(sys.argv[1]))
    index.delete_document(STORE, "d00000")
    index.set_document_acl(STORE, "d00002", Acl.of(["user:only"]))
    index.upsert(STORE, [chunk("child", 0, random_vectors(1, seed=77)[0])])
    index.close()
""")


def test_a_subprocess_writers_changes_are_applied_incrementally(
    served: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path
) -> None:
    index, chunks = served
    subprocess.run([sys.executable, "-c", WRITER, str(data_dir)], check=True, cwd=Path(__file__).resolve().parents[2])
    assert index.count(STORE, documents_filter(["d00000"])) == 0
    assert ids(index.knn(STORE, random_vectors(1, seed=77)[0], 1, EVERYONE)) == ["child#0"]
    assert index.stats(STORE).last_plan == "hnsw"
    reacled = index.knn(STORE, chunks[10].vector, 10, EVERYONE)  # type: ignore[arg-type]
    assert "d00002" not in {h.chunk.document_id for h in reacled}
    assert ids(index.knn(STORE, chunks[10].vector, 1, acl_filter(["user:only"]))) == [chunks[10].chunk_id]  # type: ignore[arg-type]
    stats = index.stats(STORE)
    assert stats.reloads == 0 and stats.catch_ups >= 1


def test_rows_another_process_adds_join_the_adopted_graph(
    served: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path
) -> None:
    fresh = EmbeddedIndex(data_dir, background=False)
    writer = EmbeddedIndex(data_dir, background=False)
    try:
        fresh.knn(STORE, random_vectors(1, seed=3)[0], 10, EVERYONE)
        late = corpus(4200, seed=4, prefix="late")
        writer.upsert(STORE, late)
        assert ids(fresh.knn(STORE, late[-1].vector, 1, EVERYONE)) == [late[-1].chunk_id]  # type: ignore[arg-type]
        stats = fresh.stats(STORE)
        assert stats.graph_loaded and stats.graph_builds == 0 and stats.reloads == 0
        assert stats.graph_rows == ROWS + 4200  # extended, not rebuilt
    finally:
        writer.close()
        fresh.close()
    assert reopened(data_dir).graph_rows == ROWS + 4200  # and saved again


def test_a_commit_racing_a_catch_up_is_caught_up_next_not_reloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = ChunkTable.create(tmp_path / "race.sqlite", DIM)
    writer = ChunkTable.open(tmp_path / "race.sqlite")
    assert writer is not None
    try:
        two = [chunk("x", 0, random_vectors(1, 1)[0]), chunk("y", 0, random_vectors(1, 2)[0])]
        writer.replace_documents(two, random_vectors(2, 3))
        reader.load()
        writer.delete_document("x")
        real = reader._data_version
        raced: list[bool] = []

        def racing() -> int:
            if not raced:  # another process commits while the reader catches up
                raced.append(True)
                writer.delete_document("y")
            return real()

        monkeypatch.setattr(reader, "_data_version", racing)
        first = reader.catch_up()
        assert first is not None and first[0] == ["x"]
        assert not reader.is_current()
        second = reader.catch_up()
        assert second is not None and second[0] == ["y"]  # not None: that would reload every row
        assert reader.is_current()
    finally:
        writer.close()
        reader.close()
