"""Ingest at scale on the OpenSearch adapter: single-document upserts, before and after, on the k-NN fake.

Writes ``--documents`` documents one upsert each (as the CMS plugins push them,
and as a folder run writes them), ``--chunks`` chunks of 384-d vectors each,
into the k-NN fake (``tests/fakes_opensearch``, a real HTTP server) twice in
the same run:

- **before** — the old write path, replayed with the same client: a bulk
  request with ``refresh=wait_for``, then ``_delete_by_query`` of the stale
  chunks with ``refresh=true`` (a forced refresh, so a new segment, per
  document; and a by-query step that cannot see unrefreshed chunks);
- **after** — ``OpenSearchIndex.upsert``: one realtime ``_mget`` of the
  document's first chunk and one bulk request that writes the chunks and
  deletes the stale ones by ``_id``, no refresh asked; one ``refresh()`` at
  the end of the run.

Prints documents/s, segments created and request bytes per vector for both,
and the ratios. The fake's scheduled refresh runs every
``--refresh-interval`` seconds (a real server's is 1 s, so ``wait_for`` costs
more there: the "before" figure is optimistic).

    .venv/bin/python bench/opensearch_ingest.py [--documents 1000] [--chunks 3] [--refresh-interval 0.1]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from opensearchpy.helpers import streaming_bulk

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from provenance import record  # bench/provenance.py

from acl.model import Acl
from indexer.index.opensearch.client import connect
from indexer.index.opensearch.index import OpenSearchIndex, OpenSearchOptions
from indexer.index.opensearch.mapping import concrete_name
from indexer.index.opensearch.requests import chunk_source, document_id_of_chunk
from indexer.index.port import ChunkRecord, StoreSpec
from tests.fakes_opensearch.opensearch_knn import FakeOpenSearch

DIM = 384


def documents(count: int, chunks: int, seed: int = 7) -> list[list[ChunkRecord]]:
    rng = np.random.default_rng(seed)
    out = []
    for d in range(count):
        vectors = rng.normal(size=(chunks, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        out.append(
            [
                ChunkRecord(
                    chunk_id=f"doc{d:05d}#{i}",
                    document_id=f"doc{d:05d}",
                    ordinal=i,
                    text=f"chunk {i} of document {d}: " + "words " * 60,
                    title=f"Document {d}",
                    source_uri="",
                    heading_path=(),
                    start=0,
                    end=10,
                    acl=Acl.of(["group:everyone"]),
                    vector=vectors[i],
                )
                for i in range(chunks)
            ]
        )
    return out


def _old_source(store: str, chunk: ChunkRecord, count: int) -> dict[str, Any]:
    """The chunk as the old adapter sent it: the vector as doubles (``float`` of each float32)."""
    assert chunk.vector is not None
    return chunk_source(store, chunk, chunk.vector, count) | {"embedding": [float(x) for x in chunk.vector]}


def before(index: OpenSearchIndex, store: str, docs: list[list[ChunkRecord]]) -> float:
    """The old write path, one document at a time; seconds taken."""
    client: Any = index._client
    name = index.index_name(store)
    start = time.perf_counter()
    for chunks in docs:
        actions = [
            {
                "_op_type": "index",
                "_index": name,
                "_id": document_id_of_chunk(c.chunk_id),
                "_source": _old_source(store, c, len(chunks)),
            }
            for c in chunks
        ]
        for _ok, _item in streaming_bulk(client, actions, chunk_size=500, refresh="wait_for", raise_on_error=True):
            pass
        stale = {
            "query": {
                "bool": {
                    "filter": [{"terms": {"document_id": [chunks[0].document_id]}}],
                    "must_not": [{"terms": {"chunk_id": [c.chunk_id for c in chunks]}}],
                }
            }
        }
        client.delete_by_query(index=name, body=stale, refresh=True, conflicts="proceed")
    return time.perf_counter() - start


def after(index: OpenSearchIndex, store: str, docs: list[list[ChunkRecord]]) -> float:
    start = time.perf_counter()
    for chunks in docs:
        index.upsert(store, chunks)
    index.refresh(store)
    return time.perf_counter() - start


def bytes_per_vector(fake: FakeOpenSearch, first: int, last: int, vectors: int) -> float:
    sent = sum(r.body_bytes for r in fake.requests[first:last] if r.path.endswith("/_bulk"))
    return sent / max(vectors, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--chunks", type=int, default=3)
    parser.add_argument("--refresh-interval", type=float, default=0.1)
    args = parser.parse_args()
    if args.documents < 1 or args.chunks < 1 or args.refresh_interval <= 0:
        parser.error("--documents and --chunks must be at least 1, --refresh-interval positive")
    docs = documents(args.documents, args.chunks)
    vectors = args.documents * args.chunks
    with FakeOpenSearch.start(version="2.19.1", refresh_interval_s=args.refresh_interval) as fake:
        index = connect(fake.url, timeout_s=60.0, options=OpenSearchOptions())
        for store in ("before", "after"):
            index.ensure(StoreSpec(store, DIM))
        mark = len(fake.requests)
        old_s = before(index, "before", docs)
        middle = len(fake.requests)
        new_s = after(index, "after", docs)
        end = len(fake.requests)
        figures = {
            "before": {
                "documents_per_s": args.documents / old_s,
                "segments": fake.segments_created(concrete_name(index.index_name("before"))),
                "requests": middle - mark,
                "bulk_bytes_per_vector": bytes_per_vector(fake, mark, middle, vectors),
            },
            "after": {
                "documents_per_s": args.documents / new_s,
                "segments": fake.segments_created(concrete_name(index.index_name("after"))),
                "requests": end - middle,
                "bulk_bytes_per_vector": bytes_per_vector(fake, middle, end, vectors),
            },
        }
        assert index.count("before") == index.count("after") == vectors
        index.close()
    b, a = figures["before"], figures["after"]
    print(
        f"{args.documents} single-document upserts of {args.chunks} chunks ({DIM}-d), "
        f"fake refresh every {args.refresh_interval} s"
    )
    for label, f in figures.items():
        print(
            f"  {label:6}  {f['documents_per_s']:8.1f} docs/s  {f['segments']:5d} segments  "
            f"{f['requests']:5d} requests  {f['bulk_bytes_per_vector']:7.0f} bulk bytes per chunk"
        )
    print(
        f"  ratio   {a['documents_per_s'] / b['documents_per_s']:.1f}x docs/s, "
        f"{b['segments'] / max(a['segments'], 1):.0f}x fewer segments, "
        f"{a['bulk_bytes_per_vector'] / b['bulk_bytes_per_vector']:.2f}x bytes per chunk"
    )
    print(json.dumps(figures))
    record(
        "opensearch_ingest",
        {"documents": args.documents, "chunks": args.chunks, "refresh_interval_s": args.refresh_interval, **figures},
    )


if __name__ == "__main__":
    main()
