"""The embedded index's full-text search: FTS5 in step with the chunks, old files, stems, the widening window."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from acl.model import Acl
from indexer.index.embedded import fulltext
from indexer.index.embedded import lexical as embedded_lexical
from indexer.index.embedded import sqlite as embedded_sqlite
from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.filters import acl_filter
from indexer.index.port import ChunkRecord, StoreSpec
from tests.contract.index_contract import DIM, chunk, random_vectors

STORE = "lex"
EVERYONE = acl_filter(["group:everyone"])


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "index"


@pytest.fixture
def index(data_dir: Path) -> Iterator[EmbeddedIndex]:
    opened = EmbeddedIndex(data_dir)
    opened.ensure(StoreSpec(STORE, DIM))
    yield opened
    opened.close()


def ids(hits: list[object]) -> list[str]:
    return [h.chunk.chunk_id for h in hits]  # type: ignore[attr-defined]


def test_a_store_file_made_before_full_text_gets_it_on_open(index: EmbeddedIndex, data_dir: Path) -> None:
    vectors = random_vectors(3, seed=1)
    index.upsert(STORE, [chunk(f"d{i}", 0, v, text=f"quarterly report number {i}") for i, v in enumerate(vectors)])
    index.close()
    with sqlite3.connect(data_dir / f"{STORE}.sqlite") as conn:  # as an older release left it
        for trigger in ("chunks_fts_insert", "chunks_fts_delete", "chunks_fts_update"):
            conn.execute(f"DROP TRIGGER {trigger}")
        conn.execute("DROP TABLE chunks_fts")
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    reopened = EmbeddedIndex(data_dir)
    try:
        assert sorted(ids(reopened.lexical(STORE, "quarterly", 10, EVERYONE))) == ["d0#0", "d1#0", "d2#0"]
        reopened.delete_document(STORE, "d1")
        reopened.upsert(STORE, [chunk("d3", 0, vectors[0], text="annual report")])
        assert sorted(ids(reopened.lexical(STORE, "report", 10, EVERYONE))) == ["d0#0", "d2#0", "d3#0"]
    finally:
        reopened.close()
    with sqlite3.connect(data_dir / f"{STORE}.sqlite") as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == version
        conn.execute("INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('integrity-check', 1)")  # raises if out of step


def test_a_write_killed_midway_leaves_the_text_index_as_it_was(
    index: EmbeddedIndex, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = [chunk("doc", i, v, text=f"old walrus {i}") for i, v in enumerate(random_vectors(3, seed=2))]
    index.upsert(STORE, old)
    real = embedded_sqlite.encode_row
    written: list[str] = []

    def dying(record: ChunkRecord, vector: bytes | None) -> tuple[object, ...]:
        if len(written) == 1:
            raise KeyboardInterrupt("killed")
        written.append(record.chunk_id)
        return real(record, vector)

    monkeypatch.setattr(embedded_sqlite, "encode_row", dying)
    with pytest.raises(KeyboardInterrupt):
        index.upsert(STORE, [chunk("doc", i, v, text="new narwhal") for i, v in enumerate(random_vectors(2, seed=3))])
    monkeypatch.setattr(embedded_sqlite, "encode_row", real)
    fresh = EmbeddedIndex(data_dir)
    try:
        for view in (index, fresh):
            assert sorted(ids(view.lexical(STORE, "walrus", 10, EVERYONE))) == ["doc#0", "doc#1", "doc#2"]
            assert view.lexical(STORE, "narwhal", 10, EVERYONE) == []
    finally:
        fresh.close()


def test_another_process_writes_are_seen(index: EmbeddedIndex, data_dir: Path) -> None:
    other = EmbeddedIndex(data_dir)
    try:
        assert index.lexical(STORE, "pelican", 5, EVERYONE) == []
        other.upsert(STORE, [chunk("p", 0, random_vectors(1, seed=4)[0], text="a pelican")])
        (hit,) = index.lexical(STORE, "pelican", 5, EVERYONE)
        assert hit.chunk.chunk_id == "p#0" and hit.chunk.vector is not None
        other.delete_document(STORE, "p")
        assert index.lexical(STORE, "pelican", 5, EVERYONE) == []
    finally:
        other.close()


def test_english_words_meet_their_stems_and_titles_count(index: EmbeddedIndex) -> None:
    vectors = random_vectors(4, seed=5)
    index.upsert(
        STORE,
        [
            chunk("carry", 0, vectors[0], text="Unused days carry over to the next year."),
            chunk("other", 0, vectors[1], text="Nothing about that here."),
            chunk("titled", 0, vectors[2], text="See the policy."),
            chunk("cafe", 0, vectors[3], text="Meet at the CAFÉ."),
        ],
    )
    assert ids(index.lexical(STORE, "Can unused days be carried over?", 5, EVERYONE)) == ["carry#0"]
    assert ids(index.lexical(STORE, "Title titled", 5, EVERYONE))[0] == "titled#0"  # the title "Title titled"
    assert ids(index.lexical(STORE, "cafe", 5, EVERYONE)) == ["cafe#0"]  # case and diacritics folded


def test_the_query_is_quoted_words_only() -> None:
    assert fulltext.match_expression(["vacation", "days"]) == '"vacation" OR "days"'
    assert fulltext.match_expression(['a"b']) == '"a""b"'


@pytest.mark.parametrize("among", [True, False], ids=["their-postings", "all-postings-masked"])
def test_a_narrow_filter_still_gets_k(index: EmbeddedIndex, monkeypatch: pytest.MonkeyPatch, among: bool) -> None:
    """1 % readable, every readable row ranked below every other by FTS5's bm25() over all rows: SQLite hands
    back the readable rows' postings alone, or, with that path off, every posting, masked in numpy."""
    if not among:
        monkeypatch.setattr(embedded_lexical, "AMONG_ROWS", 0)
    queries: list[bool] = []
    real = embedded_sqlite.phrase_postings

    def spy(
        conn: sqlite3.Connection, phrases: list[list[str]], only: list[int] | None
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        queries.append(only is not None)
        return real(conn, phrases, only)

    monkeypatch.setattr(embedded_sqlite, "phrase_postings", spy)
    vectors = random_vectors(1500, seed=6)
    index.upsert(
        STORE,
        [
            chunk(
                f"d{row:04d}",
                0,
                vector,
                allow=("group:few",) if row % 100 == 7 else ("group:many",),
                text="harbour" if row % 100 == 7 else "harbour harbour harbour",
            )
            for row, vector in enumerate(vectors)
        ],
    )
    hits = index.lexical(STORE, "harbour", 10, acl_filter(["group:few"]))
    assert ids(hits) == [f"d{row:04d}#0" for row in range(7, 1500, 100)][:10]  # equal scores: by chunk id
    assert len(index.lexical(STORE, "harbour", 100, acl_filter(["group:few"]))) == 15
    assert queries == [among, among]
    # group:many is most of the store: all postings are read, the few rows' masked out. Its 1485 rows tie.
    many = index.lexical(STORE, "harbour", 20, acl_filter(["group:many"]))
    assert ids(many) == [f"d{row:04d}#0" for row in range(1500) if row % 100 != 7][:20]
    assert queries[2:] == [False]


def test_the_first_pass_reads_only_what_k_needs(index: EmbeddedIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """Distinct scores, everything readable: one ranked query with a limit near k, not every matching row."""
    limits: list[int] = []
    real = embedded_sqlite.ranked

    def spy(conn: sqlite3.Connection, match: str, limit: int) -> Iterator[list[tuple[int, float]]]:
        limits.append(limit)
        return real(conn, match, limit)

    monkeypatch.setattr(embedded_sqlite, "ranked", spy)
    vectors = random_vectors(400, seed=9)
    # Row i holds "tern" i + 1 times among other words: every score differs, higher i ranks first.
    index.upsert(
        STORE,
        [chunk(f"t{i:03d}", 0, v, text=" ".join(["tern"] * (i + 1) + ["sea"] * 40)) for i, v in enumerate(vectors)],
    )
    hits = index.lexical(STORE, "tern", 5, EVERYONE)
    assert ids(hits) == [f"t{i:03d}#0" for i in range(399, 394, -1)]
    assert len(limits) == 1 and limits[0] < 100


def test_ties_at_the_cut_are_ordered_by_chunk_id_not_by_insertion(index: EmbeddedIndex) -> None:
    vectors = random_vectors(30, seed=8)
    names = [f"n{i:02d}" for i in range(30)][::-1]  # inserted z to a: rowid order is the reverse of id order
    for name, vector in zip(names, vectors, strict=True):
        index.upsert(STORE, [chunk(name, 0, vector, text="lighthouse keeper")])
    assert ids(index.lexical(STORE, "lighthouse", 3, EVERYONE)) == ["n00#0", "n01#0", "n02#0"]
    index.set_document_acl(STORE, "n00", Acl.of(["group:none"]))  # its rows re-appended in memory
    assert ids(index.lexical(STORE, "lighthouse", 2, EVERYONE)) == ["n01#0", "n02#0"]


def test_scores_are_fts5_bm25_made_positive(index: EmbeddedIndex, data_dir: Path) -> None:
    vectors = random_vectors(3, seed=7)
    index.upsert(
        STORE,
        [chunk(f"d{i}", 0, v, text=t) for i, (v, t) in enumerate(zip(vectors, ["owl", "owl owl", "x"], strict=True))],
    )
    hits = index.lexical(STORE, "owl", 5, EVERYONE)
    with sqlite3.connect(data_dir / f"{STORE}.sqlite") as conn:
        raw = dict(
            conn.execute(
                "SELECT c.chunk_id, bm25(chunks_fts, 1.0, 2.0, 2.0) FROM chunks_fts"
                " JOIN chunks c ON c.seq = chunks_fts.rowid WHERE chunks_fts MATCH '\"owl\"'"
            ).fetchall()
        )
    assert {h.chunk.chunk_id: h.score for h in hits} == pytest.approx({k: -v for k, v in raw.items()})
    assert all(h.score > 0 for h in hits)
