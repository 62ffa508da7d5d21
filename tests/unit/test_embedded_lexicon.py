"""BM25 from the in-memory copy of a store's full-text index: the same hits, order and scores as FTS5,
never a row the caller cannot read, never a row the copy has not seen or that is gone."""

from __future__ import annotations

import dataclasses
import random
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acl.model import Acl
from indexer.index.embedded import lexical as embedded_lexical
from indexer.index.embedded import lexicon_keeper
from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.embedded.lexicon import TOKEN_PAIRS, Lexicon, phrase_tokens, postings_in
from indexer.index.embedded.lexicon_keeper import LexiconKeeper
from indexer.index.embedded.sqlite import ChunkTable
from indexer.index.filters import acl_filter
from indexer.index.port import SearchHit, StoreSpec
from tests.contract.index_contract import DIM, chunk, random_vectors

STORE = "lex"
EVERYONE = acl_filter(["group:everyone"])
# Stems that meet (run/running/runs), folded case and diacritics, digits, a letter SQLite's tables
# postdate, words in most chunks (low IDF) and words in few.
WORDS = [
    "run", "running", "runs", "carried", "carry", "naïve", "NAIVE", "Straße", "x²", "2024", "ab\uab70cd",
    "vacation", "vacations", "policy", "budget", "office", "the", "and", "walrus", "replication", "WAL",
]  # fmt: skip
GROUPS = ["group:a", "group:b", "group:c", "group:everyone"]
USERS = ["user:u1", "user:u2"]


def hits_of(found: list[SearchHit]) -> list[tuple[str, float]]:
    return [(hit.chunk.chunk_id, hit.score) for hit in found]


def both(index: EmbeddedIndex, question: str, k: int, filter_: dict[str, object]) -> tuple[list[object], ...]:
    """(FTS5's hits, the in-memory copy's hits) for the same search; the copy's must have served."""
    index.keep_lexicons(0)
    fts5 = hits_of(index.lexical(STORE, question, k, filter_))
    assert index.stats(STORE).last_lexical in (None, "fts5")
    index.keep_lexicons(10**9)
    memory = hits_of(index.lexical(STORE, question, k, filter_))
    if memory:
        assert index.stats(STORE).last_lexical == "memory"
    return fts5, memory


documents = st.lists(
    st.tuples(
        st.lists(st.sampled_from(WORDS), min_size=0, max_size=30),  # text
        st.lists(st.sampled_from(WORDS), max_size=3),  # title
        st.lists(st.sampled_from(GROUPS), min_size=1, max_size=2),  # allow
        st.lists(st.sampled_from(USERS), max_size=1),  # deny
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    documents,
    st.lists(st.sampled_from([*WORDS, "absent"]), min_size=1, max_size=5),
    st.lists(st.sampled_from(GROUPS + USERS), min_size=1, max_size=3),
    st.integers(1, 8),
    st.lists(st.integers(0, 24), max_size=4),  # documents deleted after indexing
)
def test_the_copy_ranks_exactly_as_fts5_and_only_readable_rows(
    docs: list[tuple[list[str], list[str], list[str], list[str]]],
    question: list[str],
    principals: list[str],
    k: int,
    deleted: list[int],
) -> None:
    index = EmbeddedIndex(None, background=False)
    try:
        index.ensure(StoreSpec(STORE, DIM))
        vectors = random_vectors(len(docs), seed=len(docs))
        for i, (text, title, allow, deny) in enumerate(docs):
            record = chunk(f"d{i}", 0, vectors[i], allow=tuple(allow), deny=tuple(deny), text=" ".join(text) or "-")
            index.upsert(STORE, [dataclasses.replace(record, title=" ".join(title))])
        for i in deleted:
            if i < len(docs):
                index.delete_document(STORE, f"d{i}")
        caller = acl_filter(principals)
        fts5, memory = both(index, " ".join(question), k, caller)
        assert memory == fts5  # the same chunks, in the same order, with the same float scores
        who = frozenset(principals)
        readable = {f"d{i}#0" for i, (_, _, allow, deny) in enumerate(docs) if Acl.of(allow, deny).permits(who)}
        gone = {f"d{i}#0" for i in deleted}
        assert {chunk_id for chunk_id, _ in memory} <= readable - gone
    finally:
        index.close()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "index"


@pytest.fixture
def server(data_dir: Path) -> Iterator[EmbeddedIndex]:
    opened = EmbeddedIndex(data_dir, background=False)
    opened.ensure(StoreSpec(STORE, DIM))
    opened.keep_lexicons(10**9)
    yield opened
    opened.close()


def test_another_process_writes_are_ranked_never_a_stale_copy(server: EmbeddedIndex, data_dir: Path) -> None:
    vectors = random_vectors(4, seed=5)
    server.upsert(STORE, [chunk(f"d{i}", 0, vectors[i], text=f"walrus colony {i}") for i in range(3)])
    assert sorted(c for c, _ in hits_of(server.lexical(STORE, "walrus", 10, EVERYONE))) == ["d0#0", "d1#0", "d2#0"]
    reads = server.stats(STORE).lexicon_reads
    assert server.stats(STORE).last_lexical == "memory" and reads >= 1
    writer = EmbeddedIndex(data_dir)  # another process: the CLI indexer
    try:
        writer.upsert(STORE, [chunk("d3", 0, vectors[3], text="walrus walrus walrus")])
        writer.delete_document(STORE, "d0")
        writer.set_document_acl(STORE, "d1", Acl.of(["group:staff"]))
    finally:
        writer.close()
    found = hits_of(server.lexical(STORE, "walrus", 10, EVERYONE))
    assert [c for c, _ in found] == ["d3#0", "d2#0"]  # the new one first; the deleted and revoked ones gone
    stats = server.stats(STORE)
    assert stats.last_lexical == "memory" and stats.lexicon_reads == reads + 1
    fts5, memory = both(server, "walrus colony", 10, acl_filter(["group:everyone", "group:staff"]))
    assert memory == fts5 and len(memory) == 3


def test_a_store_over_the_budget_keeps_fts5(server: EmbeddedIndex) -> None:
    server.upsert(STORE, [chunk(f"d{i}", 0, v, text=f"narwhal tusk {i}") for i, v in enumerate(random_vectors(3, 7))])
    server.keep_lexicons(5)  # 3 chunks hold more (token, chunk) pairs than that
    found = hits_of(server.lexical(STORE, "narwhal", 10, EVERYONE))
    stats = server.stats(STORE)
    assert len(found) == 3 and stats.last_lexical == "fts5" and stats.lexicon_pairs == 0
    server.keep_lexicons(1000)
    assert hits_of(server.lexical(STORE, "narwhal", 10, EVERYONE)) == found
    assert server.stats(STORE).last_lexical == "memory" and server.stats(STORE).lexicon_pairs > 5


def test_off_by_default_and_in_the_background_when_on(data_dir: Path) -> None:
    index = EmbeddedIndex(data_dir)  # background=True, as a server runs it
    try:
        index.ensure(StoreSpec(STORE, DIM))
        index.upsert(STORE, [chunk(f"d{i}", 0, v, text=f"orca pod {i}") for i, v in enumerate(random_vectors(5, 9))])
        expected = hits_of(index.lexical(STORE, "orca", 3, EVERYONE))
        assert index.stats(STORE).last_lexical == "fts5" and index.stats(STORE).lexicon_reads == 0
        index.keep_lexicons(10**6)
        assert hits_of(index.lexical(STORE, "orca", 3, EVERYONE)) == expected  # FTS5 while the copy is read
        for _ in range(500):
            if index.stats(STORE).lexicon_reads:
                break
            index._stores[STORE].lexicons._worker.join(0.01)  # type: ignore[union-attr]
        assert hits_of(index.lexical(STORE, "orca", 3, EVERYONE)) == expected
        assert index.stats(STORE).last_lexical == "memory"
    finally:
        index.close()


def test_a_word_fts5_splits_is_left_to_fts5() -> None:
    assert phrase_tokens(["running", "Naïve"]) == ["run", "naiv"]
    assert phrase_tokens(["x·y"]) is None  # two tokens: FTS5 matches them as a phrase, the copy cannot


@pytest.mark.parametrize("in_python", [10**6, 0], ids=["ties-in-python", "ties-by-cached-rank"])
def test_ties_at_the_cut_go_by_chunk_id_either_way(monkeypatch: pytest.MonkeyPatch, in_python: int) -> None:
    monkeypatch.setattr(embedded_lexical, "TIED_IN_PYTHON", in_python)
    index = EmbeddedIndex(None, background=False)
    try:
        index.ensure(StoreSpec(STORE, DIM))
        names = [f"d{i:03d}" for i in range(60)]
        random.Random(4).shuffle(names)  # inserted out of id order: seqs and ids disagree
        vectors = random_vectors(len(names), seed=8)
        for name, vector in zip(names, vectors, strict=True):
            index.upsert(STORE, [chunk(name, 0, vector, text="identical walrus text")])
        index.upsert(STORE, [chunk("d999", 0, vectors[0], text="walrus walrus")])  # one above the tie
        index.delete_document(STORE, "d001")
        for k in (1, 3, 7):
            fts5, memory = both(index, "walrus", k, acl_filter(["group:everyone"]))
            assert memory == fts5
            assert [c for c, _ in memory] == ["d999#0", "d000#0", "d002#0", "d003#0", "d004#0", "d005#0", "d006#0"][:k]
    finally:
        index.close()


def test_a_copy_that_cannot_match_the_rows_is_not_read_again_until_they_change() -> None:
    reads: list[int] = []

    def read(max_postings: int, cancel: threading.Event) -> Lexicon:
        reads.append(max_postings)  # a copy of other rows than the ones asked for (seqs 1, 2)
        return Lexicon(np.array([1, 2, 3]), np.ones(3), 1.0, {}, np.zeros(0, np.int32), np.zeros(0, np.float32))

    keeper = LexiconKeeper(read, background=False)
    keeper.budget(100)
    rows = np.array([1, 2])
    assert keeper.lexicon_for(rows, (1, 2, 0)) is None
    assert keeper.lexicon_for(rows, (1, 2, 0)) is None
    assert len(reads) == 1
    assert keeper.lexicon_for(rows, (1, 3, 1)) is None  # the rows changed: read again
    assert len(reads) == 2
    assert keeper.lexicon_for(np.array([1, 2, 3]), (1, 4, 1)) is not None  # these rows it holds
    assert len(reads) == 2


def test_a_failed_read_is_tried_again_for_the_same_rows() -> None:
    attempts: list[int] = []

    def read(max_postings: int, cancel: threading.Event) -> Lexicon:
        attempts.append(max_postings)
        if len(attempts) == 1:
            raise sqlite3.OperationalError("database is locked")
        return Lexicon(np.array([1, 2]), np.ones(2), 1.0, {}, np.zeros(0, np.int32), np.zeros(0, np.float32))

    keeper = LexiconKeeper(read, background=False)
    keeper.budget(100)
    rows = np.array([1, 2])
    assert keeper.lexicon_for(rows, (1, 2, 0)) is None
    assert keeper.lexicon_for(rows, (1, 2, 0)) is not None
    assert len(attempts) == 2


def test_stop_while_a_read_is_starting(monkeypatch: pytest.MonkeyPatch) -> None:
    class SlowStart(threading.Thread):
        def start(self) -> None:
            time.sleep(0.2)  # stop() arrives between the assignment and the start
            super().start()

    monkeypatch.setattr(lexicon_keeper.threading, "Thread", SlowStart)
    keeper = LexiconKeeper(lambda _max, _cancel: None, background=True)
    keeper.budget(100)
    asking = threading.Thread(target=keeper.lexicon_for, args=(np.array([1]), (1, 1, 0)))
    asking.start()
    time.sleep(0.05)
    keeper.stop()  # raised "cannot join thread before it is started" when it read the worker unlocked
    asking.join()


def test_a_copy_is_read_only_from_its_own_store_and_only_when_whole(tmp_path: Path) -> None:
    index = EmbeddedIndex(tmp_path / "index", background=False)
    index.ensure(StoreSpec(STORE, DIM))
    index.upsert(STORE, [chunk(f"d{i}", 0, v, text=f"kelp forest {i}") for i, v in enumerate(random_vectors(3, 2))])
    store_uuid = index._stores[STORE].store_uuid
    index.close()
    path = tmp_path / "index" / f"{STORE}.sqlite"
    copy = ChunkTable.lexicon_of(path, store_uuid, 10**6, threading.Event())
    assert copy is not None and copy.spans["kelp"][1] - copy.spans["kelp"][0] == 3
    with closing(sqlite3.connect(path)) as conn:  # the budget counts each distinct token too
        conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, chunks_fts, row)")
        pairs, tokens = conn.execute("SELECT sum(doc), count(*) FROM temp.v").fetchone()
        assert postings_in(conn) == pairs + TOKEN_PAIRS * tokens
    # A store dropped and made again at the same path is another store: its copy is not this one's.
    assert ChunkTable.lexicon_of(path, "another-store", 10**6, threading.Event()) is None
    with closing(sqlite3.connect(path)) as conn:  # FTS5's sizes lose a row its postings still name
        conn.execute("DELETE FROM chunks_fts_docsize WHERE id = (SELECT min(id) FROM chunks_fts_docsize)")
        conn.commit()
    with pytest.raises(sqlite3.DatabaseError):
        ChunkTable.lexicon_of(path, store_uuid, 10**6, threading.Event())


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 1e-6, 0.5, 1.25, 3.0578, 7.0]), min_size=1, max_size=80).flatmap(
        lambda values: st.tuples(st.just(values), st.integers(1, len(values)))
    )
)
def test_kth_largest_is_the_sorted_kth_also_when_scores_tie_in_bulk(case: tuple[list[float], int]) -> None:
    values, k = case
    assert embedded_lexical.kth_largest(np.array(values), k) == sorted(values, reverse=True)[k - 1]


def test_kth_largest_of_distinct_and_of_two_valued_scores() -> None:
    rng = np.random.default_rng(3)
    distinct = rng.random(5000)
    assert embedded_lexical.kth_largest(distinct, 60) == np.sort(distinct)[-60]
    two = np.where(rng.random(5000) < 0.125, 3.0578, 1e-6)  # formulaic texts: most rows tie
    for k in (1, 30, int(np.count_nonzero(two == 3.0578)) + 1, 5000):
        assert embedded_lexical.kth_largest(two, k) == np.sort(two)[-k]


def test_a_tokens_terms_kept_for_every_row_give_the_same_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    """A question over every row reuses each token's bm25 terms: the same floats as computing them afresh, the
    second time too, and with nothing kept (``TERMS_KEPT`` 0)."""
    from indexer.index.embedded import lexicon as module

    rng = np.random.default_rng(7)
    spans, positions, freqs, at = {}, [], [], 0
    for token in ("vacation", "rule", "budget"):
        rows = np.sort(rng.choice(50, size=int(rng.integers(1, 50)), replace=False)).astype(np.int32)
        spans[token] = (at, at + len(rows))
        positions.append(rows)
        freqs.append(rng.integers(1, 4, size=len(rows)).astype(np.float32))
        at += len(rows)
    sizes = rng.integers(5, 40, size=50).astype(np.float64)

    def made() -> Lexicon:
        return Lexicon(
            np.arange(50), sizes, float(sizes.mean()), spans, np.concatenate(positions), np.concatenate(freqs)
        )

    tokens = ["rule", "vacation", "absent", "rule"]
    lexicon = made()
    fresh = module.bm25(
        [(lexicon.positions[s:e], lexicon.freqs[s:e]) for s, e in (spans.get(t, (0, 0)) for t in tokens)],
        sizes,
        module.Bm25Stats(50, lexicon.avgdl),
        lexicon.norms,
    )
    first, again = lexicon.scores(tokens), lexicon.scores(tokens)
    assert np.array_equal(first, fresh) and np.array_equal(again, fresh)
    monkeypatch.setattr(module, "TERMS_KEPT", 0)
    monkeypatch.setattr(module, "TERMS_KEPT_SHARE", 10**12)
    assert made().terms_kept == 0
    assert np.array_equal(made().scores(tokens), fresh)
    # A copy whose postings are many keeps a share of them (at 1M chunks a common word's terms alone are 1M floats).
    monkeypatch.setattr(module, "TERMS_KEPT_SHARE", 2)
    large = made()
    assert large.terms_kept == large.postings // 2 > 0
    first, again = large.scores(tokens), large.scores(tokens)
    assert np.array_equal(first, fresh) and np.array_equal(again, fresh)
