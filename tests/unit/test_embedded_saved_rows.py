"""The rows saved with the HNSW graph: a fresh process starts from them and catches up through the change log.

They are a cache like the graph: every test here checks that a process opening them answers exactly
what a process reading every row out of SQLite answers, whatever changed since the save -- an ACL
revoked, a document deleted or added, the store file restored from an older copy, rows changed
behind the change log's back.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acl.model import Acl
from indexer.index.embedded import saved_rows
from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.embedded.rows import RowAttributes, RowTable
from indexer.index.filters import acl_filter, and_, documents_filter
from indexer.index.port import ChunkRecord, StoreSpec
from tests.contract.index_contract import DIM, STORE, chunk, random_vectors
from tests.unit.test_embedded_live import ids, serving

ROWS = 4000
EVERYONE = acl_filter(["group:everyone"])
CALLERS = [EVERYONE, acl_filter(["group:g3"]), acl_filter(["group:g3", "group:g7"]), acl_filter(["user:only"])]


def corpus(rows: int) -> list[ChunkRecord]:
    """5 chunks per document; document d readable by ``group:g<d % 20>``, and by everyone unless d % 3 == 0."""
    return [
        chunk(
            f"d{i // 5:05d}",
            i % 5,
            v,
            allow=(f"group:g{(i // 5) % 20}", *(() if (i // 5) % 3 == 0 else ("group:everyone",))),
        )
        for i, v in enumerate(random_vectors(rows, 0))
    ]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "index"


@pytest.fixture
def served(data_dir: Path) -> Iterator[tuple[EmbeddedIndex, list[ChunkRecord]]]:
    """A store whose graph (and rows) were saved, served by a running index."""
    chunks = corpus(ROWS)
    with serving(data_dir, chunks) as index:
        yield index, chunks


def answers(index: EmbeddedIndex) -> list[object]:
    """What every caller gets: kNN and exact hits at k 10 and 60, counts, one document's chunks."""
    found: list[object] = []
    for caller in CALLERS:
        for query in random_vectors(4, seed=41):
            for k in (10, 60):
                found.append(ids(index.knn(STORE, query, k, caller)))
                found.append(ids(index.exact(STORE, query, k, caller)))
        found.append(index.count(STORE, caller))
        found.append([c.chunk_id for c in index.document_chunks(STORE, "d00004", caller)])
        narrowed = and_(caller, documents_filter(["d00001", "d00002", "d00009", "new"]))
        found.append(ids(index.knn(STORE, random_vectors(1, seed=3)[0], 10, narrowed)))
    return found


def truth(data_dir: Path) -> list[object]:
    """The answers of a process that reads every row out of SQLite (the graph file set aside)."""
    path = data_dir / f"{STORE}.sqlite.hnsw"
    aside = path.with_name("aside")
    path.rename(aside)
    index = EmbeddedIndex(data_dir, background=False)
    try:
        assert not index.stats(STORE).graph_loaded
        return answers(index)
    finally:
        index.close()
        aside.rename(path)


def fresh(data_dir: Path) -> tuple[list[object], bool, bool]:
    """(answers, rows came from the file, graph came from the file) of a fresh process."""
    index = EmbeddedIndex(data_dir, background=False)
    try:
        stats = index.stats(STORE)
        return answers(index), stats.rows_loaded, stats.graph_loaded
    finally:
        index.close()


def test_a_fresh_process_starts_from_the_saved_rows_and_answers_as_reading_every_row_does(
    served: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path
) -> None:
    index, _ = served
    found, rows_loaded, graph_loaded = fresh(data_dir)
    assert rows_loaded and graph_loaded
    assert found == answers(index) == truth(data_dir)


def test_writes_after_the_save_are_caught_up_from_the_change_log(
    served: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path
) -> None:
    """A revocation, a grant, a delete and new rows made after the save are all seen by the fresh process."""
    index, chunks = served
    index.set_document_acl(STORE, "d00004", Acl.of(["user:only"]))  # revoked for everyone else
    index.set_document_acl(STORE, "d00009", Acl.of(["group:g3"], deny=["group:g7"]))
    index.delete_document(STORE, "d00001")
    index.upsert(STORE, [chunk("new", i, v, allow=("group:everyone",)) for i, v in enumerate(random_vectors(3, 9))])
    found, rows_loaded, graph_loaded = fresh(data_dir)
    assert rows_loaded and graph_loaded
    assert found == answers(index) == truth(data_dir)
    revoked = EmbeddedIndex(data_dir, background=False)
    try:
        victim = next(c for c in chunks if c.document_id == "d00004")
        hits = revoked.knn(STORE, victim.vector, 60, EVERYONE)  # type: ignore[arg-type]
        assert "d00004" not in {h.chunk.document_id for h in hits}
        assert not revoked.document_chunks(STORE, "d00004", EVERYONE)
    finally:
        revoked.close()


@pytest.mark.parametrize("replay", ["same documents", "raw SQL"])
def test_a_store_file_restored_from_an_older_copy_is_read_row_by_row(
    served: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path, replay: str
) -> None:
    """Rows saved against one history are not taken for another's, even once the log has grown past them --
    also when the restored copy is written again just as the lost history was (same documents, same
    number of rows: only the entries' nonces tell the two apart)."""
    index, _ = served
    store_file = data_dir / f"{STORE}.sqlite"
    backup = data_dir.parent / "backup.sqlite"
    with sqlite3.connect(store_file) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copy(store_file, backup)
    index.set_document_acl(STORE, "d00004", Acl.of(["group:everyone"]))  # a mistake, then the backup restored
    store = index._open(STORE)  # the graph file saved again, its rows current after the mistake
    store.save_graph(store.keeper.graph_for(store.rows))  # type: ignore[arg-type]
    index.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store_file}{suffix}").unlink(missing_ok=True)
    shutil.copy(backup, store_file)
    if replay == "same documents":  # the intended change, through DocQA: the same shape of log entries
        again = EmbeddedIndex(data_dir, background=False)
        again.set_document_acl(STORE, "d00004", Acl.of(["user:owner"]))
        again.close()
    else:
        with sqlite3.connect(store_file) as conn:
            conn.execute("UPDATE chunks SET acl_allow = 'user:owner' WHERE document_id = 'd00004'")
    found, rows_loaded, graph_loaded = fresh(data_dir)
    assert not rows_loaded and graph_loaded
    assert found == truth(data_dir)
    check = EmbeddedIndex(data_dir, background=False)
    try:
        assert not check.document_chunks(STORE, "d00004", EVERYONE)
        assert len(check.document_chunks(STORE, "d00004", acl_filter(["user:owner"]))) == 5
    finally:
        check.close()


def test_rows_that_missed_a_write_are_not_saved_as_current(
    served: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write committed to SQLite whose mirroring in memory failed: a graph saved before the rows are
    reloaded carries no rows (their mark would claim the write), so a fresh process reads every row."""
    index, _ = served

    def failing(self: RowTable, rows: np.ndarray) -> None:
        raise MemoryError("simulated")

    with monkeypatch.context() as patch:
        patch.setattr(RowTable, "tombstone", failing)
        with pytest.raises(MemoryError):
            index.set_document_acl(STORE, "d00004", Acl.of(["user:owner"]))
    store = index._open(STORE)
    assert store.stale
    store.save_graph(store.keeper.graph_for(store.rows))  # type: ignore[arg-type]
    found, rows_loaded, _ = fresh(data_dir)
    assert not rows_loaded
    assert found == truth(data_dir)
    assert found == answers(index)  # the running index reloaded at its next call


def test_a_change_log_from_before_nonces_is_upgraded(data_dir: Path) -> None:
    index = EmbeddedIndex(data_dir, background=False)
    index.ensure(StoreSpec(STORE, DIM))
    index.close()
    with sqlite3.connect(data_dir / f"{STORE}.sqlite") as conn:
        for name in ("insert", "delete", "update"):
            conn.execute(f"DROP TRIGGER chunks_changes_{name}")
        conn.execute("ALTER TABLE changes DROP COLUMN nonce")
        conn.execute(
            "CREATE TRIGGER chunks_changes_insert AFTER INSERT ON chunks BEGIN"
            " INSERT INTO changes (document_id) VALUES (new.document_id); END"
        )
    index = EmbeddedIndex(data_dir, background=False)
    try:
        index.upsert(STORE, corpus(10))
        index.set_document_acl(STORE, "d00000", Acl.of(["user:only"]))
    finally:
        index.close()
    with sqlite3.connect(data_dir / f"{STORE}.sqlite") as conn:
        nonces = [row[0] for row in conn.execute("SELECT nonce FROM changes")]
        triggers = [
            row[0]
            for row in conn.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'chunks_changes_%'"
            )
        ]
    assert len(nonces) == 10 + 10 and all(isinstance(n, bytes) and len(n) == 8 for n in nonces)
    assert len(set(nonces)) == len(nonces) and len(triggers) == 3 and all("randomblob" in t for t in triggers)


def test_rows_changed_behind_the_change_logs_back_are_not_served(
    served: tuple[EmbeddedIndex, list[ChunkRecord]], data_dir: Path
) -> None:
    """A sample of the saved rows is compared with the store's: ACLs rewritten with the log's triggers
    dropped make the file be refused (and rebuilt), never served."""
    index, _ = served
    index.close()
    with sqlite3.connect(data_dir / f"{STORE}.sqlite") as conn:
        conn.execute("DROP TRIGGER chunks_changes_update")
        conn.execute("UPDATE chunks SET acl_allow = 'user:only'")
    found, rows_loaded, graph_loaded = fresh(data_dir)
    assert not rows_loaded and not graph_loaded
    assert found == truth(data_dir)
    reopened = EmbeddedIndex(data_dir, background=False)
    try:
        assert reopened.count(STORE, EVERYONE) == 0 and reopened.count(STORE, acl_filter(["user:only"])) == ROWS
    finally:
        reopened.close()


# -- the arrays themselves ----------------------------------------------------

_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(_names, st.lists(_names, max_size=3), st.lists(_names, max_size=2), st.booleans()),
        max_size=40,
    ),
    st.integers(0, 40),
)
def test_a_row_table_comes_back_as_it_was_saved(
    documents: list[tuple[str, list[str], list[str], bool]], cut: int
) -> None:
    """Tombstones, ids reused after a delete, any Unicode in ids, principals and attributes."""
    table = RowTable(DIM)
    vectors = random_vectors(len(documents) * 2 + 1, seed=len(documents)).astype(np.float32)
    for i, (name, allow, deny, dead) in enumerate(documents):
        attributes = RowAttributes(title=name, content_type="text/x", modified=i or None, metadata=(f"k={name}",))
        chunk_ids = [f"{name}#0", f"{name}#1"]  # a name seen before reuses its ids: the old rows go first
        table.tombstone(table.live_rows_of("chunk_id", chunk_ids))
        rows = [[2 * i, 2 * i + 1], chunk_ids, [name, name], [allow] * 2, [deny] * 2]
        table.append(*rows, vectors[2 * i : 2 * i + 2], [attributes] * 2)  # type: ignore[arg-type]
        if dead:
            table.tombstone(table.live_rows_of("document_id", [name]))
    nodes = min(cut, table.n)
    sections = {name: np.asarray(array) for name, array in saved_rows.encode(table, nodes).items()}
    back = saved_rows.decode(sections, DIM, nodes)
    back.vectors[:nodes] = table.vectors[:nodes]  # the graph's part, which the caller copies in
    count = table.n
    assert back.n == count and back.dead == table.dead
    assert np.array_equal(back.vectors[:count], table.vectors[:count])
    assert np.array_equal(back.alive[:count], table.alive[:count])
    assert np.array_equal(back.seqs[:count], table.seqs[:count])
    assert back.chunk_ids == table.chunk_ids and back.chunk_rows == table.chunk_rows
    assert back.attributes == table.attributes
    assert np.array_equal(back.modified[:count], table.modified[:count])
    assert np.array_equal(back.indexed_at[:count], table.indexed_at[:count])
    for field, postings in table.postings.items():
        assert {v: p.view().tolist() for v, p in back.postings[field].items()} == {
            v: p.view().tolist() for v, p in postings.items()
        }
    back.append([99], ["x#0"], ["x"], [["a"]], [[]], vectors[-1:])  # appending never writes through a shared slice
    for field, postings in table.postings.items():
        assert all(
            back.postings[field][v].view().tolist() == p.view().tolist()
            for v, p in postings.items()
            if v not in ("x", "a", "", "text/x") and not v.startswith("k=")
        )
