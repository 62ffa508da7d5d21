"""BM25 in the embedded index sees only what the caller may read: its statistics (row count, average
length, rows per word) are those of the readable rows, so a document the caller cannot read never moves
the caller's scores or order, whether FTS5's postings or the in-memory copy of them rank."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.filters import acl_filter
from indexer.index.port import StoreSpec
from tests.contract.index_contract import DIM, chunk, random_vectors

STORE = "lex"
READER = acl_filter(["group:readers"])
# Stems that meet, words in most chunks and in few, and words FTS5 splits ("ab\u19b0cd" is the phrase
# "ab cd" to it) or drops ("\u19b0" alone is no token at all).
WORDS = [
    "run", "running", "carried", "carry", "naïve", "x²", "2024", "ab", "cd", "ab\u19b0cd", "\u19b0",
    "vacation", "policy", "budget", "office", "walrus", "replication", "wal",
]  # fmt: skip
MODES = ["fts5", "memory"]

Document = tuple[list[str], list[str], bool]  # text, title, readable


def searched(documents: Sequence[Document], question: str, k: int, mode: str) -> list[tuple[str, float]]:
    """The reader's hits for ``question`` in a store of ``documents`` (``d00``, ``d01``, ... readable or
    not), ranked from FTS5 or from the in-memory copy of its index (``mode``)."""
    index = EmbeddedIndex(None, background=False)
    try:
        index.ensure(StoreSpec(STORE, DIM))
        index.keep_lexicons(10**9 if mode == "memory" else 0)
        vectors = random_vectors(max(len(documents), 1), seed=1)
        for i, (text, title, readable) in enumerate(documents):
            allow = ("group:readers",) if readable else ("group:others",)
            record = chunk(f"d{i:02d}", 0, vectors[i], allow=allow, text=" ".join(text) or "-")
            index.upsert(STORE, [dataclasses.replace(record, title=" ".join(title))])
        found = [(hit.chunk.chunk_id, hit.score) for hit in index.lexical(STORE, question, k, READER)]
        if found and mode == "fts5":
            assert index.stats(STORE).last_lexical == "fts5"
        return found
    finally:
        index.close()


def only_readable(documents: Sequence[Document]) -> list[Document]:
    return [document for document in documents if document[2]]


def renamed(documents: Sequence[Document]) -> dict[str, str]:
    """Chunk id in ``only_readable(documents)``'s store -> the same document's chunk id in the full store."""
    kept = [i for i, document in enumerate(documents) if document[2]]
    return {f"d{new:02d}#0": f"d{old:02d}#0" for new, old in enumerate(kept)}


def assert_same(found: list[tuple[str, float]], alone: list[tuple[str, float]], names: dict[str, str]) -> None:
    assert [chunk_id for chunk_id, _ in found] == [names[chunk_id] for chunk_id, _ in alone]
    for (_, score), (_, expected) in zip(found, alone, strict=True):
        assert score == pytest.approx(expected, rel=0, abs=1e-9)  # the same float here; FMA elsewhere


documents = st.lists(
    st.tuples(
        st.lists(st.sampled_from(WORDS), max_size=25),
        st.lists(st.sampled_from(WORDS), max_size=3),
        st.booleans(),
    ),
    min_size=1,
    max_size=20,
)


PHRASES: list[Document] = [  # "ab\u19b0cd" is the phrase "ab cd": overlapping, split, in a title, unreadable
    (["ab", "cd", "ab", "cd", "ab"], [], True),
    (["cd", "ab", "walrus"], ["ab", "cd"], True),
    (["ab", "walrus", "cd"], [], True),
    (["ab", "cd", "ab", "cd"], [], False),
    (["ab", "cd", "walrus"], ["ab\u19b0cd"], False),
]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(PHRASES, ["ab\u19b0cd", "walrus", "\u19b0"], 3, "fts5")
@example(PHRASES, ["ab\u19b0cd", "walrus"], 3, "memory")
@given(
    documents,
    st.lists(st.sampled_from([*WORDS, "absent"]), min_size=1, max_size=5),
    st.integers(1, 8),
    st.sampled_from(MODES),
)
def test_the_readers_hits_are_those_of_a_store_of_only_what_they_may_read(
    docs: list[Document], question: list[str], k: int, mode: str
) -> None:
    """Ids, order and scores (within 1e-9) as in a store holding only the readable documents.

    Readable documents are named in the order they come, in both stores, so that ties (broken by chunk id)
    fall the same way."""
    readable_first = sorted(docs, key=lambda document: not document[2])  # same ids for the readable ones
    found = searched(readable_first, " ".join(question), k, mode)
    alone = searched(only_readable(readable_first), " ".join(question), k, mode)
    assert_same(found, alone, renamed(readable_first))


@pytest.mark.parametrize("mode", MODES)
def test_one_unreadable_document_holding_a_word_does_not_reorder_the_readers_hits(mode: str) -> None:
    """The issue's case: "walrus" is rare among the readable chunks, so the one chunk holding it ranks
    first; unreadable chunks full of "walrus" made it common, and the reader saw "narwhal" first."""
    readable: list[Document] = [
        (["walrus", "walrus", "policy"], [], True),
        (["narwhal", "policy", "budget"], [], True),
        (["policy", "office"], [], True),
        (["budget", "office"], [], True),
    ]
    question = "walrus narwhal"
    before = searched(readable, question, 10, mode)
    assert [chunk_id for chunk_id, _ in before] == ["d00#0", "d01#0"]
    for unreadable in (1, 3, 40):  # 40: the word's rows outnumber the readable rows (looked up the other way)
        hidden: list[Document] = [(["walrus"], [], False)] * unreadable
        assert searched([*readable, *hidden], question, 10, mode) == before


@pytest.mark.parametrize("mode", MODES)
def test_unreadable_documents_written_later_by_another_process_move_nothing(tmp_path: Path, mode: str) -> None:
    """The statistics follow the rows as they change: written here or by another process (the CLI indexer)."""
    vectors = random_vectors(60, seed=2)
    server = EmbeddedIndex(tmp_path, background=False)
    try:
        server.ensure(StoreSpec(STORE, DIM))
        server.keep_lexicons(10**9 if mode == "memory" else 0)
        texts = ["walrus walrus policy", "narwhal policy budget", "policy office", "budget office"]
        server.upsert(STORE, [chunk(f"r{i}", 0, vectors[i], ("group:readers",), text=t) for i, t in enumerate(texts)])
        before = [(hit.chunk.chunk_id, hit.score) for hit in server.lexical(STORE, "walrus narwhal", 10, READER)]
        assert [chunk_id for chunk_id, _ in before] == ["r0#0", "r1#0"]
        server.upsert(STORE, [chunk("x0", 0, vectors[10], ("group:others",), text="walrus")])
        writer = EmbeddedIndex(tmp_path)
        try:
            hidden = [chunk(f"y{i}", 0, vectors[20 + i], ("group:others",), text="walrus") for i in range(30)]
            writer.upsert(STORE, hidden)
        finally:
            writer.close()
        after = [(hit.chunk.chunk_id, hit.score) for hit in server.lexical(STORE, "walrus narwhal", 10, READER)]
        assert after == before
    finally:
        server.close()
