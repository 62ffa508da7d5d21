"""Every request body the OpenSearch adapter sends, built as plain data.

Kept apart from the client so that each body can be checked against the
official OpenSearch API specification in unit tests, with no server.

Scores. Searches run in OpenSearch's ``cosinesimil`` space, and OpenSearch
turns cosine similarity ``cos`` into a non-negative score:

- the ``knn`` query (lucene and faiss engines, every version):
  ``score = (1 + cos) / 2``, so ``cos = 2 * score - 1``;
- exact search runs the k-NN plugin's Painless function
  ``1.0 + cosineSimilarity(params.query_value, doc[params.field])``, which is
  ``1 + cos`` on every version, so ``cos = score - 1``. (The plugin's own
  ``knn_score`` script is *not* used: since 2.19 it returns ``(1 + cos) / 2``
  on indices created on 2.19 or later and ``1 + cos`` on older ones —
  ``KNNScoringSpace.java``, k-NN#2357 — so its scale depends on when the
  index was created.)

``opensearch_responses`` converts back, so ``SearchHit.score`` is the cosine
similarity on every adapter and one store's thresholds mean the same whether
its chunks live in the embedded index or in OpenSearch.

Vectors travel as float32 text (the shortest decimal that reads back as the
same float32: about 5 KB per 384-d vector instead of 8.4 KB as doubles).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from acl.model import Acl
from indexer.index.attributes import iso, metadata_pairs
from indexer.index.filters import fold
from indexer.index.opensearch.filters import Query
from indexer.index.opensearch.mapping import VECTOR_FIELD
from indexer.index.port import ChunkRecord

Body = dict[str, Any]

#: Stored with the chunk but never needed in a search result.
_SOURCE = {"excludes": [VECTOR_FIELD]}
#: Exact scoring: the k-NN plugin's Painless cosine, raw cosine on every version, plus 1 (scores must be >= 0).
EXACT_SCRIPT = {"source": "1.0 + cosineSimilarity(params.query_value, doc[params.field])", "lang": "painless"}
#: Largest ``_id`` OpenSearch accepts, in bytes.
_MAX_ID_BYTES = 512


def document_id_of_chunk(chunk_id: str) -> str:
    """The deterministic ``_id`` of a chunk: its chunk id, or a hash of it when too long."""
    if len(chunk_id.encode()) <= _MAX_ID_BYTES:
        return chunk_id
    return "sha256:" + hashlib.sha256(chunk_id.encode()).hexdigest()


def chunk_ids(document_id: str, count: int, start: int = 0) -> list[str]:
    """The ``_id`` of chunks ``start .. count - 1`` of a document (chunk ids are ``f"{document_id}#{ordinal}"``)."""
    return [document_id_of_chunk(f"{document_id}#{ordinal}") for ordinal in range(start, count)]


def _floats(vector: Any) -> list[float]:
    """Each float32 as the shortest decimal that reads back as the same float32 (``str`` of a numpy float32)."""
    return [float(str(x)) for x in np.asarray(vector, dtype=np.float32)]


def chunk_source(store_id: str, chunk: ChunkRecord, vector: Any, chunk_count: int) -> Body:
    """The ``_source`` of one chunk of a ``chunk_count``-chunk document (vector: the L2-normalised float32 one)."""
    return {
        "store_id": store_id,
        "document_id": chunk.document_id,
        "chunk_id": chunk.chunk_id,
        "ordinal": chunk.ordinal,
        "text": chunk.text,
        "title": chunk.title,
        "source_uri": chunk.source_uri,
        "heading_path": list(chunk.heading_path),
        "start": chunk.start,
        "end": chunk.end,
        "acl_allow": sorted(chunk.acl.allow),
        "acl_deny": sorted(chunk.acl.deny),
        "chunk_count": chunk_count,
        "pages": list(chunk.pages),
        "anchor": chunk.anchor,
        "content_type": chunk.content_type,
        "title_folded": fold(chunk.title),
        "modified": None if chunk.modified is None else iso(chunk.modified),
        "indexed_at": None if chunk.indexed_at is None else iso(chunk.indexed_at),
        "metadata": metadata_pairs(chunk.metadata),
        VECTOR_FIELD: _floats(vector),
    }


def bulk_actions(
    index: str,
    store_id: str,
    chunks: Sequence[ChunkRecord],
    vectors: Any,
    counts: Mapping[str, int],
    stale: Sequence[str] = (),
) -> list[Body]:
    """Actions for ``opensearchpy.helpers.streaming_bulk``: one ``index`` per chunk (``_id`` = chunk id,
    ``counts[document_id]`` chunks in its document), then one ``delete`` per stale ``_id``."""
    written: list[Body] = [
        {
            "_op_type": "index",
            "_index": index,
            "_id": document_id_of_chunk(chunk.chunk_id),
            "_source": chunk_source(store_id, chunk, vector, counts[chunk.document_id]),
        }
        for chunk, vector in zip(chunks, vectors, strict=True)
    ]
    return written + delete_actions(index, stale)


def delete_actions(index: str, ids: Sequence[str]) -> list[Body]:
    """One bulk ``delete`` per ``_id`` (a missing one answers 404 ``not_found``, which is fine)."""
    return [{"_op_type": "delete", "_index": index, "_id": _id} for _id in ids]


def acl_actions(index: str, ids: Sequence[str], acl: Acl) -> list[Body]:
    """One bulk partial ``update`` per chunk ``_id``: replace its ACL copy (realtime: unrefreshed chunks too)."""
    doc = {"acl_allow": sorted(acl.allow), "acl_deny": sorted(acl.deny)}
    return [{"_op_type": "update", "_index": index, "_id": _id, "doc": doc} for _id in ids]


def heads_body(ids: Sequence[str]) -> Body:
    """``_mget`` of the first chunk of each document (realtime), to read its ``chunk_count``."""
    return {"docs": [{"_id": _id, "_source": ["chunk_count"]} for _id in ids]}


def knn_body(vector: Any, k: int, filter_query: Query | None, ef_search: int) -> Body:
    """Approximate search: the ``knn`` query with the filter inside it (efficient filtering)."""
    clause: Body = {"vector": _floats(vector), "k": k}
    if filter_query is not None:
        clause["filter"] = filter_query
    # Lucene reads ef_search from the query only; at least k candidates are needed for k hits.
    clause["method_parameters"] = {"ef_search": max(ef_search, k)}
    return {"size": k, "_source": _SOURCE, "query": {"knn": {VECTOR_FIELD: clause}}}


def _script_score(vector: Any, filter_query: Query) -> Query:
    return {
        "script_score": {
            "query": {"bool": {"filter": [filter_query]}},
            "script": {**EXACT_SCRIPT, "params": {"field": VECTOR_FIELD, "query_value": _floats(vector)}},
        }
    }


def exact_body(vector: Any, size: int, filter_query: Query, search_after: list[Any] | None = None) -> Body:
    """Exact search: ``script_score`` (Painless cosine) over a ``bool`` filter, best first, ties by chunk id."""
    body: Body = {
        "size": size,
        "_source": _SOURCE,
        "track_scores": True,
        "track_total_hits": False,
        "query": _script_score(vector, filter_query),
        "sort": [{"_score": "desc"}, {"chunk_id": "asc"}],
    }
    if search_after is not None:
        body["search_after"] = search_after
    return body


def best_per_document_body(vector: Any, documents: int, filter_query: Query) -> Body:
    """The best chunk of each document matching the filter, at most ``documents`` of them, in one request:
    exact scoring collapsed on ``document_id`` (ties by chunk id)."""
    return {
        "size": documents,
        "_source": _SOURCE,
        "track_scores": True,
        "track_total_hits": False,
        "query": _script_score(vector, filter_query),
        "collapse": {"field": "document_id"},
        "sort": [{"_score": "desc"}, {"chunk_id": "asc"}],
    }


def lexical_body(words: str, size: int, filter_query: Query) -> Body:
    """BM25 search: a ``match`` query of plain words (OR) on the analysed ``text`` field inside a ``bool`` with
    the filter, best first, ties by chunk id; the ``_source`` keeps the vector, for the caller's cosine."""
    return {
        "size": size,
        "track_scores": True,
        "track_total_hits": False,
        "query": {
            "bool": {"must": [{"match": {"text": {"query": words, "operator": "or"}}}], "filter": [filter_query]}
        },
        "sort": [{"_score": "desc"}, {"chunk_id": "asc"}],
    }


def document_chunks_body(
    document_id: str, size: int, filter_query: Query, search_after: list[Any] | None = None
) -> Body:
    """One page of a document's chunks in order (ordinal, then chunk id), vectors included: a ``bool`` filter of
    the caller's filter AND the document id, paged with ``search_after``."""
    body: Body = {
        "size": size,
        "track_total_hits": False,
        "query": {"bool": {"filter": [filter_query, {"term": {"document_id": document_id}}]}},
        "sort": [{"ordinal": "asc"}, {"chunk_id": "asc"}],
    }
    if search_after is not None:
        body["search_after"] = search_after
    return body


def count_body(filter_query: Query) -> Body:
    return {"query": filter_query}


def delete_document_body(document_id: str) -> Body:
    """``_delete_by_query`` of every chunk of one document."""
    return {"query": {"bool": {"filter": [{"term": {"document_id": document_id}}]}}}
