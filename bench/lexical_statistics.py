"""How much unreadable documents move a caller's BM25 ranking: embedded index against OpenSearch's statistics.

    python bench/lexical_statistics.py [--chunks 2000] [--questions 100] [--k 10]

Each store holds ``--chunks`` chunks (synthetic Zipf text, ~150 words each, ten chunks per document). A
caller may read the documents of some groups; the same search is made in that store and in a store holding
only the documents the caller may read (the reference: what BM25 would give if the unreadable documents did
not exist). Two worlds: ``mixed`` (the unreadable documents use the same words as the readable ones) and
``topical`` (they use the words the readable ones rarely use: a department writing about its own subject).
Printed per backend and world: the share of questions whose top ``--k`` differs in order, the mean share of
the top ``--k`` that is the same set, and the largest relative score change. The embedded index runs here;
OpenSearch runs against osmem-server (the in-memory OpenSearch-compatible server the integration tests use:
its BM25 takes index-wide statistics, as OpenSearch's ``dfs_query_then_fetch`` does) when it is installed.
Figures, not asserts.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from provenance import record  # bench/provenance.py

from acl.model import Acl
from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.filters import acl_filter
from indexer.index.port import ChunkRecord, Index, SearchHit, StoreSpec

DIM = 8
VOCABULARY = 5_000


def texts(rng: np.random.Generator, chunks: int, offset: int) -> list[str]:
    """Zipf-distributed words, the most frequent ones starting at rank ``offset`` (wrapping around)."""
    weights = 1.0 / np.arange(1, VOCABULARY + 1)
    weights /= weights.sum()
    words = rng.choice(VOCABULARY, size=(chunks, 150), p=weights)
    return [" ".join(f"w{(w + offset) % VOCABULARY}" for w in row) for row in words]


def world(chunks: int, readable_share: float, topical: bool, seed: int) -> list[ChunkRecord]:
    """Chunks of documents readable by ``group:g0`` (``readable_share`` of them) or ``group:g1``."""
    rng = np.random.default_rng(seed)
    documents = chunks // 10
    readable = set(rng.choice(documents, int(documents * readable_share), replace=False).tolist())
    own = texts(rng, chunks, 0)
    other = texts(rng, chunks, VOCABULARY // 2) if topical else own
    records = []
    for row in range(chunks):
        document = row // 10
        mine = document in readable
        vector = rng.standard_normal(DIM).astype(np.float32)
        records.append(
            ChunkRecord(
                chunk_id=f"d{document:05d}#{row % 10}",
                document_id=f"d{document:05d}",
                ordinal=row % 10,
                text=own[row] if mine else other[row],
                title="",
                source_uri="",
                heading_path=(),
                start=0,
                end=1,
                acl=Acl.of(["group:g0" if mine else "group:g1"]),
                vector=vector / np.linalg.norm(vector),
            )
        )
    return records


def compare(index: Index, records: list[ChunkRecord], questions: list[str], k: int) -> tuple[float, float, float]:
    """(share of questions with another top-k order, mean top-k set overlap, largest relative score change)."""
    index.ensure(StoreSpec("everything", DIM))
    index.ensure(StoreSpec("readable", DIM))
    for start in range(0, len(records), 500):
        batch = records[start : start + 500]
        index.upsert("everything", batch)
        index.upsert("readable", [r for r in batch if "group:g0" in r.acl.allow])
    caller = acl_filter(["group:g0"])
    reordered, overlap, worst = 0, 0.0, 0.0
    for question in questions:
        full = index.lexical("everything", question, k, caller)
        alone = index.lexical("readable", question, k, caller)
        reordered += ids(full) != ids(alone)
        overlap += len(set(ids(full)) & set(ids(alone))) / max(len(alone), 1)
        expected = {hit.chunk.chunk_id: hit.score for hit in alone}
        for hit in full:
            if hit.chunk.chunk_id in expected:
                worst = max(worst, abs(hit.score / expected[hit.chunk.chunk_id] - 1))
    return reordered / len(questions), overlap / len(questions), worst


def ids(hits: list[SearchHit]) -> list[str]:
    return [hit.chunk.chunk_id for hit in hits]


@contextlib.contextmanager
def embedded() -> Iterator[Index]:
    index = EmbeddedIndex(None, background=False)
    try:
        yield index
    finally:
        index.close()


@contextlib.contextmanager
def opensearch() -> Iterator[Index]:
    from osmem_server import OsmemServer

    from indexer.index.opensearch.client import connect
    from indexer.index.opensearch.index import OpenSearchOptions

    server = OsmemServer.start(japanese=False)
    try:
        with server.clone() as clone:
            index = connect(clone.url, timeout_s=30.0, options=OpenSearchOptions(refresh="true", shards=1))
            try:
                yield index
            finally:
                index.close()
    finally:
        server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=2_000)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.chunks < 20 or args.questions < 1 or args.k < 1:
        parser.error("--chunks must be at least 20 (two documents), --questions and --k at least 1")
    rng = np.random.default_rng(args.seed + 1)
    # Questions of 2-5 content words of the readable documents' vocabulary, past its most frequent words.
    questions = [
        " ".join(f"w{w}" for w in rng.integers(20, 2_000, int(rng.integers(2, 6)))) for _ in range(args.questions)
    ]
    backends: list[tuple[str, Callable[[], contextlib.AbstractContextManager[Index]]]] = [("embedded", embedded)]
    figures: dict[str, object] = {"chunks": args.chunks, "questions": args.questions, "k": args.k}
    try:
        import osmem_server  # noqa: F401
    except ImportError:
        print("osmem-server is not installed: OpenSearch skipped")
        figures["skipped"] = {"opensearch (osmem)": "osmem-server is not installed"}
    else:
        backends.append(("opensearch (osmem)", opensearch))
    header = ("backend", "world", "readable", "top-k reordered", "top-k same set", "max score change")
    print(f"{header[0]:<20} {header[1]:<8} {header[2]:>8} {header[3]:>16} {header[4]:>15} {header[5]:>17}")
    for name, make in backends:
        for topical in (False, True):
            for share in (0.5, 0.1):
                with make() as index:
                    records = world(args.chunks, share, topical, args.seed)
                    reordered, overlap, worst = compare(index, records, questions, args.k)
                label = "topical" if topical else "mixed"
                print(f"{name:<20} {label:<8} {share:>8.0%} {reordered:>16.0%} {overlap:>15.0%} {worst:>17.1%}")
                figures[f"{name}, {label}, {share:.0%} readable"] = {
                    "top_k_reordered": reordered,
                    "top_k_same_set": overlap,
                    "max_score_change": worst,
                }
    record("lexical_statistics", figures)


if __name__ == "__main__":
    main()
