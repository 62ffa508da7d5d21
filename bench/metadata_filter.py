"""A narrow metadata filter against no filter, on the embedded index, with the ACL inside both.

    python bench/metadata_filter.py [--chunks 20000] [--queries 200]

Synthetic store: 384-d L2-normalised vectors around 200 gaussian cluster
centres, 10 chunks per document, every document readable by the caller's
group. 1 % of the documents are PDFs under ``legal/`` with custom metadata
``dept=legal`` and a 2024 modified date; the rest are Markdown files elsewhere.
For each of *no filter* (ACL only), a *narrow* filter (those 1 %: prefix,
content type, metadata key and a date range together) and a *glob* filter
(the same 1 % by ``legal/*.pdf``) it prints the p50/p99 latency of
``EmbeddedIndex.knn`` (k = 10), the ratio to the unfiltered p50, how many
queries came back with fewer than k hits (should be 0), and recall@10 against
exact search over the rows the filter matches. Figures, not asserts.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from figures import percentiles  # bench/figures.py
from provenance import record  # bench/provenance.py

from acl.model import Acl
from indexer.index.attributes import frozen_metadata
from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.filters import Filter, acl_filter, and_
from indexer.index.port import ChunkRecord, StoreSpec
from service.domain.filters import MetadataFilter, restrict

DIM, K, STORE, PER_DOC = 384, 10, "bench", 10
ACCESS = acl_filter(["user:reader", "group:staff", "group:everyone"])


def corpus(chunks: int, seed: int = 3) -> list[ChunkRecord]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((200, DIM)).astype(np.float32)
    vectors = centres[rng.integers(0, 200, chunks)] + 0.6 * rng.standard_normal((chunks, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    records = []
    acl = Acl.of(["group:staff"])
    start = datetime(2023, 1, 1, tzinfo=UTC)
    for row, vector in enumerate(vectors):
        document = row // PER_DOC
        legal = document % 100 == 42
        document_id = f"legal/contract-{document}.pdf" if legal else f"docs/{document % 37}/note-{document}.md"
        records.append(
            ChunkRecord(
                chunk_id=f"{document_id}#{row % PER_DOC}",
                document_id=document_id,
                ordinal=row % PER_DOC,
                text=f"chunk {row}",
                title=f"Document {document}",
                source_uri="",
                heading_path=(),
                start=0,
                end=1,
                acl=acl,
                vector=vector,
                content_type="application/pdf" if legal else "text/markdown",
                modified=start + timedelta(days=400 if legal else document % 300),
                indexed_at=start + timedelta(days=500),
                metadata=frozen_metadata({"dept": "legal" if legal else "ops"}),
            )
        )
    return records


def run(
    index: EmbeddedIndex, queries: np.ndarray, cases: dict[str, Filter]
) -> dict[str, tuple[float, float, int, float]]:
    """Per case: p50 and p99 ms, under-filled queries, recall@10; the cases take turns on each query, so that
    a busy machine slows them alike."""
    for filter_ in cases.values():
        for query in queries[:5]:
            index.knn(STORE, query, K, filter_)
    times: dict[str, list[float]] = {name: [] for name in cases}
    under = dict.fromkeys(cases, 0)
    found = dict.fromkeys(cases, 0)
    total = dict.fromkeys(cases, 0)
    for query in queries:
        for name, filter_ in cases.items():
            started = time.perf_counter()
            hits = index.knn(STORE, query, K, filter_)
            times[name].append((time.perf_counter() - started) * 1000)
            under[name] += len(hits) < K
            exact = {h.chunk.chunk_id for h in index.exact(STORE, query, K, filter_)}
            found[name] += len(exact & {h.chunk.chunk_id for h in hits})
            total[name] += len(exact)
    return {name: (*percentiles(times[name]), under[name], found[name] / max(total[name], 1)) for name in cases}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    if args.chunks < 1000 or args.queries < 1:
        parser.error("--chunks must be at least 1000 (the legal documents are 1 % of them), --queries at least 1")
    index = EmbeddedIndex(None)
    index.ensure(StoreSpec(STORE, DIM))
    records = corpus(args.chunks)
    for start in range(0, len(records), 5000):
        index.upsert(STORE, records[start : start + 5000])
    queries = corpus(args.queries, seed=9)
    vectors = np.stack([r.vector for r in queries if r.vector is not None])
    narrow = MetadataFilter.parse(
        path_prefix="legal/",
        content_types=["application/pdf"],
        modified_from="2024-01-01",
        modified_to="2024-12-31",
        metadata={"dept": ["legal"]},
    )
    cases = {
        "no filter (ACL only)": ACCESS,
        "narrow: prefix+type+date+metadata": restrict(ACCESS, narrow),
        "narrow: glob legal/*.pdf": and_(ACCESS, {"field": "document_id", "operator": "glob", "value": "legal/*.pdf"}),
    }
    print(f"embedded index, {args.chunks} chunks of {DIM}-d, k={K}, {args.queries} queries")
    results = run(index, vectors, cases)
    base = results["no filter (ACL only)"][0]
    figures: dict[str, object] = {"chunks": args.chunks, "queries": args.queries}
    for name, filter_ in cases.items():
        matching = index.count(STORE, filter_)
        p50, p99, under, recall = results[name]
        figures[name] = {
            "matches": matching,
            "p50_ms": p50,
            "p99_ms": p99,
            "x_unfiltered": p50 / base,
            "under_filled": under,
            "recall@10": recall,
        }
        print(
            f"{name:36s} matches {matching:6d} ({100 * matching / args.chunks:5.1f} %)  "
            f"p50 {p50:6.3f} ms  p99 {p99:6.3f} ms  x{p50 / base:5.2f} of unfiltered  "
            f"under-filled {under}  recall@10 {recall:.3f}"
        )
    index.close()
    record("metadata_filter", figures)


if __name__ == "__main__":
    main()
